//go:build sim

package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/sim/soak"
	"github.com/pocbot/pocbot/internal/sim/syncio"
)

func soakCommand() *command {
	var (
		duration time.Duration
		seed     string
		keep     string
		events   int
		factor   float64
		verbose  bool
		parallel int
		noPool   bool
	)
	return &command{
		name:    "soak",
		summary: "random histories of comments, crashes and faults against the emulated world, with invariants checked after every step",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.Setting(&duration, "soak-duration")
			e.Setting(&seed, "soak-seed")
			e.Setting(&keep, "soak-keep")
			e.Setting(&events, "soak-events")
			e.Setting(&factor, "soak-time-factor")
			e.Setting(&noPool, "soak-no-pool")
			e.Bool(&verbose, "v", "", false, "print every event as it is played")
			// A history waits on its processes most of the time (about 15 % of a core): eight
			// per core keep the cores busy.
			e.SettingWith(&parallel, "soak-parallel", 8*runtime.NumCPU(), "")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if os.Getenv("GOGC") == "" {
				// A soak holds dozens of worlds and bot processes in one heap of a few hundred
				// MiB: collecting at 4× the live heap instead of 2× gives their CPU back.
				debug.SetGCPercent(400)
			}
			c := soak.Config{Options: soak.Options{Bot: soakBot{a: a}, TimeFactor: factor}, Duration: duration, Events: events, Out: a.stdout, Parallel: parallel,
				NoPool: noPool}
			if verbose {
				c.Log = a.stdout
			}
			if seed != "" {
				s, err := strconv.ParseUint(seed, 10, 64)
				if err != nil {
					return fmt.Errorf("soak: --seed %q is not a seed (a decimal number)", seed)
				}
				c.Seeds, c.Duration, c.Parallel = []uint64{s}, 0, 1
				for _, k := range strings.Split(keep, ",") {
					if k = strings.TrimSpace(k); k == "" {
						continue
					}
					i, err := strconv.Atoi(k)
					if err != nil {
						return fmt.Errorf("soak: --keep %q: give event indices like 0,3,7", keep)
					}
					c.Keep = append(c.Keep, i)
				}
			}
			sum, err := soak.Soak(ctx, c)
			if err != nil {
				return err
			}
			if sum.Violations > 0 {
				return fmt.Errorf("soak: %d violations in %d failing histories", sum.Violations, len(sum.Failures))
			}
			return nil
		},
	}
}

// soakBot runs each soak process through the code path of `bot handle`, in this process: its own
// environment, clock, log and Actions files.
type soakBot struct{ a *app }

func (b soakBot) Handle(ctx context.Context, env map[string]string, now func() time.Time) soak.Process {
	var logs, stdout syncio.Buffer
	p := *b.a
	p.stdout, p.stderr = &stdout, &logs
	p.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p.now = now
	p.atExit = nil
	getenv := func(k string) string { return env[k] }
	p.getenv = getenv
	out, err := p.handle(ctx, getenv, time.Now())
	for i := len(p.atExit) - 1; i >= 0; i-- {
		p.atExit[i]()
	}
	text := logs.String() + stdout.String()
	for _, f := range []string{env["GITHUB_OUTPUT"], env["GITHUB_STEP_SUMMARY"]} {
		if b, rerr := os.ReadFile(f); rerr == nil {
			text += "\n" + string(b)
		}
	}
	if err != nil {
		text += "\nerror: " + err.Error()
	}
	return soak.Process{Ignored: out.Ignored, Err: err, Output: text}
}
