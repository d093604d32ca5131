package clusterops

import (
	"maps"
	"sync"

	"github.com/pocbot/pocbot/internal/provision"
)

// queue is what the work under a lock tells its Observer: it appends and returns at once (the
// engine's workers call Event), and Run's goroutine, which holds no lock, delivers in order. The
// work never waits for the observer, whatever the observer does (a GitHub call, a rate limit).
type queue struct {
	mu      sync.Mutex
	events  []func(Observer)
	closed  bool
	changed chan struct{} // capacity 1: something to deliver, or closed
}

func newQueue() *queue { return &queue{changed: make(chan struct{}, 1)} }

func (q *queue) push(e func(Observer)) {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.events = append(q.events, e)
	q.mu.Unlock()
	q.wake()
}

func (q *queue) wake() {
	select {
	case q.changed <- struct{}{}:
	default:
	}
}

// admitted queues the decision of an operation that goes ahead: a copy the work no longer changes.
func (q *queue) admitted(out *Outcome) {
	if q == nil {
		return
	}
	o := *out
	o.Header.Labels = maps.Clone(out.Header.Labels)
	q.push(func(obs Observer) { obs.Admitted(o) })
}

// Event implements provision.Progress for the engine.
func (q *queue) Event(e provision.Event) { q.push(func(obs Observer) { obs.Step(e) }) }

// progress is the engine's progress sink: the queue, or nothing.
func (q *queue) progress() provision.Progress {
	if q == nil {
		return nil
	}
	return q
}

// close says that the work is over: deliver returns once it has delivered everything.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

// deliver calls obs with every event, in order, until the queue is closed and empty.
func (q *queue) deliver(obs Observer) {
	for {
		q.mu.Lock()
		events, closed := q.events, q.closed
		q.events = nil
		q.mu.Unlock()
		for _, e := range events {
			e(obs)
		}
		if closed && len(events) == 0 {
			return
		}
		if len(events) == 0 {
			<-q.changed
		}
	}
}

// Steps is an Observer that hears the engine's steps alone, through p (a CLI's progress printer,
// a test's probe).
func Steps(p provision.Progress) Observer { return steps{p} }

type steps struct{ p provision.Progress }

func (steps) Admitted(Outcome)         {}
func (s steps) Step(e provision.Event) { s.p.Event(e) }
