package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
)

// progressPrinter prints the engine's step events as a live list (clusterops.Steps hands them).
type progressPrinter struct {
	mu sync.Mutex
	w  io.Writer
	t0 time.Time
}

// newProgressPrinter is the observer of an operation run from the CLI: its steps on w.
func newProgressPrinter(w io.Writer) clusterops.Observer {
	return clusterops.Steps(&progressPrinter{w: w, t0: time.Now()})
}

func (p *progressPrinter) Event(e provision.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := map[provision.Phase]string{provision.PhaseStarted: "…", provision.PhaseDone: "✓", provision.PhaseFailed: "✗",
		provision.PhaseSkipped: "-", provision.PhaseProgress: " "}[e.Phase]
	line := fmt.Sprintf("%6.1fs %s %-22s", time.Since(p.t0).Seconds(), mark, e.Step)
	if e.Phase == provision.PhaseDone || e.Phase == provision.PhaseFailed {
		line += fmt.Sprintf(" %6.1fs", e.Elapsed.Seconds())
	}
	if e.Detail != "" {
		line += "  " + e.Detail
	}
	if e.Err != nil {
		line += "  " + e.Err.Error()
	}
	fmt.Fprintln(p.w, line)
}
