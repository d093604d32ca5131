package settings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Values are the settings one command gives explicitly, by the table's Name, each held as the Go
// value of its Kind (GoValue): a comment's flags, or a CLI's flags and variables. What is absent
// keeps its default on a new cluster and its value in place on an existing one, so that a bare
// `/poc up` changes nothing. provision.Spec.Apply writes the ones with a Spec column into a
// cluster's spec: the one binding of a flag to the cluster, wherever the flag was written.
type Values map[string]any

// Set records setting name's value x. An unknown name, or a value not of the setting's Kind, is a
// programming error and panics (the tests of every caller reach each Set).
func (v Values) Set(name string, x any) {
	s := Lookup(name)
	if want := s.GoValue(); fmt.Sprintf("%T", want) != fmt.Sprintf("%T", x) {
		panic(fmt.Sprintf("settings: %s is a %s, held as %T, not %T", name, s.Kind, want, x))
	}
	v[name] = x
}

// Names are the names set, sorted.
func (v Values) Names() []string { return slices.Sorted(maps.Keys(v)) }

// GoValue is the zero value of the Go type that holds the setting in Values.
func (s Setting) GoValue() any {
	switch s.Kind {
	case Bool:
		return false
	case Int:
		return 0
	case Float:
		return 0.0
	case Duration:
		return time.Duration(0)
	case List:
		return []string(nil)
	default: // String, EUR (a decimal amount as written: repoconfig.ParseEUR reads it)
		return ""
	}
}

// Env reads the settings' environment variables through a getenv (os.Getenv, a workflow's
// environment given to `bot handle`, or a test's map). Every variable of the table is read here,
// by the setting's name, so that its default and its grammar are the table's; a test of the
// repository fails on a variable of the table read by hand.
type Env func(string) string

// Raw is the variable of setting name exactly as set ("" when unset): for secrets such as a PEM
// key, whose bytes are the caller's to read.
func (e Env) Raw(name string) string {
	s := Lookup(name)
	if s.Env == "" {
		panic("settings: " + name + " is not read from the environment")
	}
	return e(s.Env)
}

// Given reports whether setting name's variable is set to something other than blanks.
func (e Env) Given(name string) bool { return strings.TrimSpace(e.Raw(name)) != "" }

// String is the variable of setting name without surrounding blanks, or the setting's default
// when unset.
func (e Env) String(name string) string {
	if v := strings.TrimSpace(e.Raw(name)); v != "" {
		return v
	}
	return Lookup(name).Default
}

// Bool is the variable of setting name read as ParseBool reads it, else the default; a malformed
// value is an error naming the variable.
func (e Env) Bool(name string) (bool, error) {
	return envParse(e, name, "a boolean: use true or false", ParseBool)
}

// Duration is the variable of setting name read as ParseDuration reads it (8h, 90s, 2d), else the
// default (0 for none); a malformed value is an error naming the variable.
func (e Env) Duration(name string) (time.Duration, error) {
	return envParse(e, name, "a duration: use a form like 90s, 8h or 2d", ParseDuration)
}

// Int is the variable of setting name as a decimal integer, else the default (0 for none).
func (e Env) Int(name string) (int, error) {
	return envParse(e, name, "an integer", strconv.Atoi)
}

func envParse[T any](e Env, name, what string, parse func(string) (T, error)) (T, error) {
	var zero T
	v := e.String(name)
	if v == "" {
		return zero, nil
	}
	x, err := parse(v)
	if err != nil {
		s := Lookup(name)
		if strings.TrimSpace(e.Raw(name)) == "" {
			panic(fmt.Sprintf("settings: the default %q of %s is not %s", v, name, what))
		}
		return zero, fmt.Errorf("environment variable %s=%q is not %s", s.Env, v, what)
	}
	return x, nil
}
