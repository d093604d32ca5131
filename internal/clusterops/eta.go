package clusterops

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// estimate is the ETA of out's up (nil without an ETA book, or for an existing cluster: a
// converging up or a resume has no path to estimate); a parked worker the pre-flight takes makes
// the parked path.
func (o *Ops) estimate(ctx context.Context, out *Outcome) *eta.Estimate {
	if o.ETA == nil || out.Exists {
		return nil
	}
	parked := false
	if pf := out.Preflight; pf != nil {
		for _, c := range pf.Candidates {
			parked = parked || (c.Taken && c.Offer.Adopt)
		}
	}
	e := o.ETA.Estimate(ctx, out.Spec, parked)
	return &e
}

// recordUp adds a new cluster's up that succeeded in took to the project's history of its path,
// what the next estimate reads, and, when it ordered its worker, how long the order of offer
// took to be delivered (the profile's delivery is learned per offer): the one place where `/poc
// up` and `bot up` record it. A failure to write it is only logged: the cluster is up.
func (o *Ops) recordUp(ctx context.Context, est *eta.Estimate, took time.Duration, offer string, delivery *deliveryClock) {
	if est == nil || o.ETA == nil {
		return
	}
	var d time.Duration
	if !est.Path.Parked {
		d = delivery.took()
	}
	if err := o.ETA.Record(ctx, est.Path, took, offer, d); err != nil {
		o.log().Warn("could not record the up's duration", "err", err)
	}
}

// deliveryClock hears an up's engine and keeps how long the worker's step took once done (the
// Elastic Metal order's delivery), for the ETA; it passes every event on to next.
type deliveryClock struct {
	next provision.Progress
	mu   sync.Mutex
	d    time.Duration
}

func (c *deliveryClock) Event(e provision.Event) {
	if e.Step == scaleway.NodeWorker && e.Phase == provision.PhaseDone {
		c.mu.Lock()
		c.d = e.Elapsed
		c.mu.Unlock()
	}
	if c.next != nil {
		c.next.Event(e)
	}
}

// took is the worker step's duration (0 when it did not finish).
func (c *deliveryClock) took() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.d
}

// observations hears an up's engine and keeps the first-contact observations its steps report
// (provision.Run.Observe); it passes every event on to next.
type observations struct {
	next  provision.Progress
	mu    sync.Mutex
	notes []firstcontact.Note
}

func (c *observations) Event(e provision.Event) {
	if e.Row != "" {
		c.mu.Lock()
		c.notes = append(c.notes, firstcontact.Note{Row: e.Row, Reading: e.Reading, Detail: e.Detail})
		c.mu.Unlock()
	}
	if c.next != nil {
		c.next.Event(e)
	}
}

// recordObservations keeps what an up met for `bot doctor --live`; a failure to write it is only
// logged (the up's outcome does not depend on it).
func (o *Ops) recordObservations(ctx context.Context, c *observations) {
	c.mu.Lock()
	notes := slices.Clone(c.notes)
	c.mu.Unlock()
	if o.FirstContact == nil || len(notes) == 0 {
		return
	}
	if err := o.FirstContact.Record(ctx, notes...); err != nil {
		o.log().Warn("could not record the up's first-contact observations", "err", err)
	}
}
