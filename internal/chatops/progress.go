package chatops

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// The status comment's write budget. GitHub refuses more than 80 content-generating requests a
// minute and 500 an hour per installation (github.ContentPerMinute, ContentPerHour), and every
// edit of a comment is one. The status comments of a repository's max_clusters concurrent runs
// share statusSharePerHour of that hour; the rest is left to the runs' other writes (reactions,
// the notification, labels: about six a run), the scheduled run's board and the installation's
// other repositories. Each run spends its share as a token bucket: statusBurst writes at once,
// refilled at statusSharePerHour/max_clusters an hour. A write is due on a step's change (a step
// started, finished, failed or skipped) once the run's gap is over, and otherwise, when only
// running times or notes moved, once a heartbeat; running times are shown to the heartbeat, so
// that they move only once one. The final body is written whatever the budget.
//
// The bound: a run writes at most statusBurst + PerHour·T/1h + 1 times in any window T (the +1
// is the final body). A cold up (12 min) at the default max_clusters (3) costs at most
// 4 + 80·12/60 + 1 = 21 writes; BenchmarkStatusWrites reports what the real graph costs.
const (
	statusSharePerHour = 240
	statusBurst        = 4
	statusHeartbeat    = time.Minute
)

// statusBudget is how often one run may write its status comment.
type statusBudget struct {
	Gap       time.Duration // least time between two writes
	Heartbeat time.Duration // least time between two writes that move only times and notes
	Burst     int           // writes the run may make at once
	PerHour   int           // the refill, writes an hour
}

// budgetFor is the budget of one of maxClusters concurrent runs, with gap (the sticky-interval
// setting) between two writes.
func budgetFor(maxClusters int, gap time.Duration) statusBudget {
	return statusBudget{Gap: gap, Heartbeat: statusHeartbeat, Burst: statusBurst, PerHour: max(statusSharePerHour/max(maxClusters, 1), 1)}
}

// statusBudget is the run's budget: the repository's max_clusters, the handler's gap.
func (r *run) statusBudget() statusBudget {
	return budgetFor(r.cfg.MaxClusters, r.h.stickyInterval())
}

// writeBook is what the budget remembers of a run's writes.
type writeBook struct {
	tokens float64
	at     time.Time // when tokens was brought up to date
	last   time.Time // the last write
	shape  string    // the steps and their states the last write showed
}

// refill brings the bucket up to now.
func (b statusBudget) refill(w writeBook, now time.Time) writeBook {
	if w.at.IsZero() {
		w.tokens, w.at = float64(b.Burst), now
		return w
	}
	w.tokens = min(float64(b.Burst), w.tokens+now.Sub(w.at).Hours()*float64(b.PerHour))
	w.at = now
	return w
}

// due decides, at now, whether a body whose steps have shape may be written, or how long until
// it may: a new shape once the gap is over, the same shape once the heartbeat is, and either only
// with a token in the bucket.
func (b statusBudget) due(w writeBook, now time.Time, shape string) (bool, time.Duration) {
	w = b.refill(w, now)
	pace := b.Heartbeat
	if shape != w.shape {
		pace = b.Gap
	}
	var wait time.Duration
	if !w.last.IsZero() {
		wait = pace - now.Sub(w.last)
	}
	if w.tokens < 1 {
		wait = max(wait, time.Duration((1-w.tokens)*float64(time.Hour)/float64(b.PerHour)))
	}
	return wait <= 0, max(wait, 0)
}

// spend records a write made at now showing shape.
func (b statusBudget) spend(w writeBook, now time.Time, shape string) writeBook {
	w = b.refill(w, now)
	w.tokens--
	w.last, w.shape = now, shape
	return w
}

// liveState is what the live edits carry from one wake-up to the next.
type liveState struct {
	book writeBook
	last string // the body last handed to the editor
}

// wake decides one wake-up of the live edits at now, with rows the steps as they are: the body to
// write ("" for none), the state after it, and how long until the next wake-up (a change wakes
// them sooner).
func (b statusBudget) wake(s liveState, now time.Time, rows []commands.Step, render func([]commands.Step) string) (string, liveState, time.Duration) {
	shape := shapeOf(rows)
	ok, wait := b.due(s.book, now, shape)
	if !ok {
		return "", s, wait
	}
	body := render(rows)
	if body == s.last {
		return "", s, b.Heartbeat
	}
	return body, liveState{book: b.spend(s.book, now, shape), last: body}, b.Heartbeat
}

// shapeOf is what makes a change worth a write: the steps and their states (not their times or
// notes).
func shapeOf(rows []commands.Step) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s\x00%d\x00", r.Name, r.State)
	}
	return b.String()
}

// liveSticky keeps the sticky comment in step with the engine within the run's budget: a
// goroutine wakes on every change and when the budget says the next write is due, and hands the
// body to the editor when it is.
type liveSticky struct {
	sticky *github.Sticky
	steps  *steps
	render func([]commands.Step) string
	stop   chan struct{}
	done   chan struct{}
	err    error
}

// startLive starts the live edits; the body written just before (the first one) counts against
// the budget.
func startLive(ctx context.Context, st *github.Sticky, sp *steps, b statusBudget, render func([]commands.Step) string) *liveSticky {
	l := &liveSticky{sticky: st, steps: sp, render: render, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		state := liveState{book: b.spend(writeBook{}, time.Now(), shapeOf(nil))} // the first body, stepless
		t := time.NewTimer(b.Heartbeat)
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
			body, next, wait := b.wake(state, time.Now(), sp.snapshot(), render)
			if state = next; body != "" {
				if err := st.Update(ctx, body); err != nil {
					l.err = err
					if errors.Is(err, github.ErrSuperseded) {
						return // a newer run owns the comment
					}
				}
			}
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(max(wait, time.Millisecond))
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
