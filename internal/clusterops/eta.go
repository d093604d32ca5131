package clusterops

import (
	"context"
	"time"

	"github.com/pocbot/pocbot/internal/eta"
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
// what the next estimate reads: the one place where `/poc up` and `bot up` record it. A failure to
// write it is only logged: the cluster is up.
func (o *Ops) recordUp(ctx context.Context, est *eta.Estimate, took time.Duration) {
	if est == nil || o.ETA == nil {
		return
	}
	if err := o.ETA.Record(ctx, est.Path, took); err != nil {
		o.log().Warn("could not record the up's duration", "err", err)
	}
}
