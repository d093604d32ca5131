package chatops

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
)

// steps turns engine events into the rows of the sticky comment's table, in first-seen order.
type steps struct {
	mu      sync.Mutex
	rows    []commands.Step
	index   map[string]int
	started map[string]time.Time
	changed chan struct{} // capacity 1: a pending "render again"
}

func newSteps() *steps {
	return &steps{index: map[string]int{}, started: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

// Event implements provision.Progress. It never blocks: the engine calls it from its workers.
func (s *steps) Event(e provision.Event) {
	s.mu.Lock()
	i, ok := s.index[e.Step]
	if !ok {
		i = len(s.rows)
		s.index[e.Step] = i
		s.rows = append(s.rows, commands.Step{Name: e.Step, State: commands.StepPending})
	}
	row := &s.rows[i]
	switch e.Phase {
	case provision.PhaseStarted:
		row.State = commands.StepRunning
		s.started[e.Step] = time.Now()
	case provision.PhaseProgress:
		row.Note = e.Detail
	case provision.PhaseDone:
		row.State, row.Duration, row.Note = commands.StepDone, e.Elapsed, ""
	case provision.PhaseFailed:
		row.State, row.Duration = commands.StepFailed, e.Elapsed
		if e.Err != nil {
			row.Note = e.Err.Error() // redacted and escaped by the renderer
		}
	case provision.PhaseSkipped:
		row.State = commands.StepSkipped
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// done is how long step took when it is done (0 otherwise).
func (s *steps) done(step string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.index[step]; ok && s.rows[i].State == commands.StepDone {
		return s.rows[i].Duration
	}
	return 0
}

// snapshot returns the rows with running steps' elapsed time filled in.
func (s *steps) snapshot() []commands.Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]commands.Step(nil), s.rows...)
	for i := range out {
		if out[i].State == commands.StepRunning {
			out[i].Duration = time.Since(s.started[out[i].Name])
		}
	}
	return out
}

// liveSticky keeps the sticky comment in step with the engine: a goroutine re-renders on every
// change (and every interval, so running times move) and hands the body to the throttled editor.
type liveSticky struct {
	sticky *github.Sticky
	steps  *steps
	render func([]commands.Step) string
	stop   chan struct{}
	done   chan struct{}
	err    error
}

func startLive(ctx context.Context, st *github.Sticky, sp *steps, interval time.Duration, render func([]commands.Step) string) *liveSticky {
	l := &liveSticky{sticky: st, steps: sp, render: render, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-ctx.Done():
				return
			case <-sp.changed:
			case <-t.C:
			}
			if err := st.Update(ctx, render(sp.snapshot())); err != nil {
				if errors.Is(err, github.ErrSuperseded) {
					l.err = err
					return // a newer run owns the comment
				}
				l.err = err
			}
		}
	}()
	return l
}

// finish stops the live updates; the caller then writes the final body and flushes.
func (l *liveSticky) finish() error {
	close(l.stop)
	<-l.done
	return l.err
}
