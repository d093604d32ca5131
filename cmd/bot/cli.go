package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// errUsage is returned after the usage has been printed; main exits 2 without repeating it.
var errUsage = errors.New("usage")

// command is one subcommand. Subcommands with children (state, images) dispatch further.
type command struct {
	name     string
	summary  string
	args     string // positional synopsis after the flags, e.g. "ls|show|unlock"
	setFlags func(fs *flag.FlagSet, e *envFlags)
	run      func(ctx context.Context, a *app, fs *flag.FlagSet) error
	children []*command
	// env lists the variables the command reads directly, not through a flag (the settings table
	// says what each holds); --help lists them so that a workflow author sees every knob in one place.
	env []string
}

// envDoc describes a variable a command reads directly, from the settings table.
func envDoc(env string) string {
	s, ok := settings.ByEnv(env)
	if !ok {
		return ""
	}
	if s.Default != "" {
		return s.Help + " (default " + s.Default + ")"
	}
	return s.Help
}

// Variable sets of the commands: the state store; Scaleway's API; what an up or a down opens.
var (
	envStore = []string{"POC_STATE_URL", "POC_STATE_KEY", "POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"}
	envSCW   = []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "SCW_DEFAULT_PROJECT_ID", "SCW_API_URL"}
	envWorld = append(append(append([]string{}, envStore...), envSCW...),
		"POC_IMAGE_BUCKET", "POC_IMAGE_FACTORY_URL", "POC_CILIUM_CHART", "POC_RESCUE_SSH_PORT", "POC_POLL_INTERVAL")
)

func envList(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

type app struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	log            *slog.Logger
	commands       []*command
	// atExit closes what commands opened for the whole process (buckets behind a store).
	atExit []func()
	// now is the clock of the bot's decisions (expiry, warnings, headers); nil is time.Now. Only
	// `bot demo` moves it, to show an expiry without waiting hours.
	now func() time.Time
}

func newApp(stdout, stderr io.Writer, getenv func(string) string) *app {
	a := &app{stdout: stdout, stderr: stderr, getenv: getenv}
	level := slog.LevelInfo
	if settings.Env(getenv).Given("debug") {
		level = slog.LevelDebug
	}
	a.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	a.commands = commandTree()
	return a
}

// commandTree is the whole of bot's command tree, in the order `bot --help` lists it: every
// command and subcommand is here and nowhere else (no file registers one from an init function;
// TestNoCommandRegistersItself keeps it so). Each constructor returns a new command with its own
// flag variables, so two apps never share a flag's value. A new command goes in this list; its
// flags come from the settings table (envFlags.Setting) where the value is a setting.
func commandTree() []*command {
	return []*command{
		{name: "app", summary: "set up pocbot's GitHub App", children: []*command{
			appCreateCommand(),
		}},
		costCommand(),
		demoCommand(), // sim build; the production build's says where it went (nosim.go)
		doctorCommand(),
		downCommand(),
		handleCommand(),
		{name: "images", summary: "the shared Talos images (bucket objects and their Block snapshots): ls, prune", children: []*command{
			imagesLsCommand(),
			imagesPruneCommand(),
		}},
		initCommand(),
		secretFileCommand("kubeconfig", "write a cluster's admin kubeconfig (needs the state key)"),
		machineconfigCommand(),
		pauseCommand(),
		{name: "pool", summary: "the warm spares and the parked Elastic Metal workers of this state bucket: fill, ls, rm", children: []*command{
			poolFillCommand(),
			poolLsCommand(),
			poolRmCommand(),
		}},
		reapCommand(),
		requestKubeconfigCommand(),
		resumeCommand(),
		simCommand(),  // sim build
		soakCommand(), // sim build
		{name: "state", summary: "inspect the encrypted state: ls (no key needed), show, unlock", children: []*command{
			stateLsCommand(),
			stateShowCommand(),
			stateUnlockCommand(),
		}},
		statusCommand(),
		secretFileCommand("talosconfig", "write a cluster's talosconfig (needs the state key)"),
		uninstallCommand(),
		upCommand(),
		versionCommand(),
	}
}

func (a *app) printf(f string, v ...any) { fmt.Fprintf(a.stdout, f, v...) }

// env reads the settings of the app's environment through the table.
func (a *app) env() settings.Env { return settings.Env(a.getenv) }

func (a *app) dispatch(ctx context.Context, args []string) error {
	defer func() {
		for i := len(a.atExit) - 1; i >= 0; i-- {
			a.atExit[i]()
		}
	}()
	if len(args) == 0 {
		a.usage(a.stderr)
		return errUsage
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		a.usage(a.stdout)
		return nil
	}
	return a.runCommand(ctx, a.commands, "bot", args)
}

func (a *app) runCommand(ctx context.Context, cmds []*command, prefix string, args []string) error {
	var c *command
	for _, k := range cmds {
		if k.name == args[0] {
			c = k
		}
	}
	if c == nil {
		fmt.Fprintf(a.stderr, "%s: unknown command %q\n\n", prefix, args[0])
		a.usage(a.stderr)
		return errUsage
	}
	full := prefix + " " + c.name
	if len(c.children) > 0 {
		if len(args) < 2 {
			a.childUsage(a.stderr, full, c)
			return errUsage
		}
		if args[1] == "-h" || args[1] == "--help" {
			a.childUsage(a.stdout, full, c)
			return nil
		}
		return a.runCommand(ctx, c.children, full, args[1:])
	}
	fs := flag.NewFlagSet(full, flag.ContinueOnError)
	fs.SetOutput(a.stderr)
	ef := &envFlags{fs: fs, getenv: a.getenv}
	if c.setFlags != nil {
		c.setFlags(fs, ef)
	}
	// The flag package prints the usage itself on -h, to its output (stderr); the usage is printed
	// here instead: to stdout for --help (an answer), to stderr after a flag error.
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: %s [flags] %s\n\n%s\n\nFlags (an environment variable, where named, sets the default):\n", full, c.args, c.summary)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(a.stderr)
		if len(c.env) > 0 {
			fmt.Fprintf(w, "\nEnvironment (read directly):\n")
			for _, v := range c.env {
				fmt.Fprintf(w, "  %-24s %s\n", v, envDoc(v))
			}
		}
	}
	fs.Usage = func() {}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(a.stdout)
			return nil
		}
		usage(a.stderr)
		return errUsage
	}
	if ef.err != nil {
		return ef.err
	}
	return c.run(ctx, a, fs)
}

func (a *app) usage(w io.Writer) {
	fmt.Fprintf(w, "bot — pocbot, throw-away Talos clusters on Scaleway from GitHub comments\n\nUsage: bot COMMAND [flags]\n\nCommands:\n")
	for _, c := range a.commands {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'bot COMMAND --help' for a command's flags and environment variables.\n")
}

func (a *app) childUsage(w io.Writer, full string, c *command) {
	fmt.Fprintf(w, "Usage: %s SUBCOMMAND [flags]\n\n%s\n\nSubcommands:\n", full, c.summary)
	for _, k := range c.children {
		fmt.Fprintf(w, "  %-10s %s\n", k.name, k.summary)
	}
}

// envFlags defines flags whose default comes from an environment variable, so that the same binary
// is configured by flags on a laptop and by `env:` in a workflow. A malformed variable is reported
// once parsing is over, naming the variable.
type envFlags struct {
	fs     *flag.FlagSet
	getenv func(string) string
	err    error
}

func (e *envFlags) note(env, usage string) string {
	if env == "" {
		return usage
	}
	return usage + " [$" + env + "]"
}

func (e *envFlags) String(p *string, name, env, def, usage string) {
	if v := e.lookup(env); v != "" {
		def = v
	}
	e.fs.StringVar(p, name, def, e.note(env, usage))
}

// envDefault is a flag's default: variable env's value read by parse, or def when env is unset
// or its value unreadable (then e fails, saying the value is not what).
func envDefault[T any](e *envFlags, env string, def T, what string, parse func(string) (T, error)) T {
	v := e.lookup(env)
	if v == "" {
		return def
	}
	x, err := parse(v)
	if err != nil {
		e.fail(fmt.Errorf("environment variable %s=%q is not %s", env, v, what))
		return def
	}
	return x
}

func (e *envFlags) Bool(p *bool, name, env string, def bool, usage string) {
	def = envDefault(e, env, def, "a boolean: use true or false", settings.ParseBool)
	e.fs.BoolVar(p, name, def, e.note(env, usage))
}

// Duration reads flag and variable with the one duration grammar of every setting
// (settings.ParseDuration: Go durations plus days, "2d", "1.5d").
func (e *envFlags) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = envDefault(e, env, def, "a duration: use a form like 90s, 8h or 2d", settings.ParseDuration)
	e.fs.Var((*durationValue)(p), name, e.note(env, usage))
}

// durationValue is a flag holding a duration of the settings' grammar.
type durationValue time.Duration

func (d *durationValue) String() string {
	if d == nil {
		return "0s"
	}
	return settings.FormatDuration(time.Duration(*d))
}

// Set reads s; a negative value (-1h) is read too, for the command to refuse with its own rule.
func (d *durationValue) Set(s string) error {
	neg := strings.HasPrefix(s, "-")
	v, err := settings.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil {
		return err
	}
	if neg {
		v = -v
	}
	*d = durationValue(v)
	return nil
}

func (e *envFlags) Int(p *int, name, env string, def int, usage string) {
	def = envDefault(e, env, def, "an integer", strconv.Atoi)
	e.fs.IntVar(p, name, def, e.note(env, usage))
}

func (e *envFlags) Float(p *float64, name, env string, def float64, usage string) {
	def = envDefault(e, env, def, "a number", func(v string) (float64, error) { return strconv.ParseFloat(v, 64) })
	e.fs.Float64Var(p, name, def, e.note(env, usage))
}

// List is a repeatable flag (`--admin-cidr A --admin-cidr B`); the variable holds a comma list.
func (e *envFlags) List(p *[]string, name, env string, usage string) {
	if v := e.lookup(env); v != "" {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				*p = append(*p, s)
			}
		}
	}
	e.fs.Var(&listValue{p: p, fromEnv: len(*p) > 0}, name, e.note(env, usage+" (repeatable)"))
}

// Setting defines the CLI flag of the settings-table row name (its flag name, variable, default
// and help come from the table). p is a *string, *bool, *int, *float64, *time.Duration or
// *[]string. Every flag read from a variable of the table is defined here (a test of
// internal/settings fails on a POC_ or SCW_ variable read by hand).
func (e *envFlags) Setting(p any, name string) { e.SettingWith(p, name, nil, "") }

// SettingWith is Setting with the command's own default def (of p's element type; nil: the
// table's) and help ("": the table's help and rule): `bot reap --warn-before` defaults to
// .github/poc.yml's value, read at run time, and `bot images --zone` lists zones.
func (e *envFlags) SettingWith(p any, name string, def any, help string) {
	s := settings.Lookup(name)
	fromTable := help == ""
	if fromTable {
		help = s.Help
		if s.Rule != "" {
			help += " (" + s.Rule + ")"
		}
	}
	switch p := p.(type) {
	case *string:
		e.String(p, s.CLI, s.Env, orDefault(def, s.Default), help)
	case *bool:
		e.Bool(p, s.CLI, s.Env, orDefault(def, s.Default == "true"), help)
	case *int:
		n, _ := strconv.Atoi(s.Default)
		e.Int(p, s.CLI, s.Env, orDefault(def, n), help)
	case *float64:
		f, _ := strconv.ParseFloat(s.Default, 64)
		e.Float(p, s.CLI, s.Env, orDefault(def, f), help)
	case *time.Duration:
		d, _ := settings.ParseDuration(s.Default)
		e.Duration(p, s.CLI, s.Env, orDefault(def, d), help)
	case *[]string:
		if fromTable && s.Default != "" {
			help += "; default " + s.Default
		}
		e.List(p, s.CLI, s.Env, help)
	default:
		panic(fmt.Sprintf("settings %s: unsupported flag type %T", name, p))
	}
}

// orDefault is def when given, else the table's default.
func orDefault[T any](def any, table T) T {
	if d, ok := def.(T); ok {
		return d
	}
	return table
}

// newFlagValue is a new variable for the flag of row: a pointer to its Kind's Go value, as
// settings.Values holds it (settings.Setting.GoValue).
func newFlagValue(row settings.Setting) any {
	return reflect.New(reflect.TypeOf(row.GoValue())).Interface()
}

// flagValue is the value a flag's variable p (from newFlagValue) holds.
func flagValue(p any) any { return reflect.ValueOf(p).Elem().Interface() }

func (e *envFlags) lookup(env string) string {
	if env == "" {
		return ""
	}
	return strings.TrimSpace(e.getenv(env))
}

func (e *envFlags) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

type listValue struct {
	p       *[]string
	fromEnv bool
}

func (l *listValue) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listValue) Set(s string) error {
	if l.fromEnv { // flags on the command line replace the environment's list, not extend it
		*l.p, l.fromEnv = nil, false
	}
	*l.p = append(*l.p, s)
	return nil
}

// clusterFlag is the one way every cluster-scoped command names its cluster.
func clusterFlag(fs *flag.FlagSet, e *envFlags, p *string) {
	e.Setting(p, "cluster")
}

func requireCluster(name string) error {
	if name == "" {
		return errors.New("--cluster is required: name the cluster, e.g. --cluster acme-shop-42 (see `bot state ls`)")
	}
	return nil
}
