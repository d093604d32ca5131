package chatops

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision"
)

// parkingNotes (plain text: the renderer escapes notes) say what parking costs per hour for spec's worker, whether this repository parks,
// and the parked workers billed now in the bucket.
func (r *run) parkingNotes(ctx context.Context, spec provision.Spec) []string {
	var notes []string
	hourly, _, ok := r.backend.Ops.OfferPrice(ctx, spec.BaremetalOffer, spec.Zone)
	price := "an unknown price"
	if ok {
		price = hourly.Format(4) + " per hour"
	}
	if r.cfg.ParkFor > 0 {
		notes = append(notes, fmt.Sprintf("Parking is on (park_for %s): after /poc down the Elastic Metal worker (%s) stays billed at %s for up to %s, so that the next /poc up adopts it instead of waiting for a new one.",
			commands.FormatDuration(r.cfg.ParkFor), spec.BaremetalOffer, price, commands.FormatDuration(r.cfg.ParkFor)))
	} else {
		notes = append(notes, fmt.Sprintf("Parking is off (park_for 0); with it, a torn-down cluster's worker (%s) would stay billed at %s while parked.",
			spec.BaremetalOffer, price))
	}
	if r.backend.Ops.Pool == nil {
		return notes
	}
	if d, err := r.backend.Ops.Pool.List(ctx); err == nil && len(d.Workers) > 0 {
		sum := cost.EUR(0, 0)
		for _, w := range d.Workers {
			if h, _, ok := r.backend.Ops.OfferPrice(ctx, w.Offer, w.Zone); ok {
				sum = sum.Add(h)
			}
		}
		notes = append(notes, fmt.Sprintf("%d parked worker(s) in this state bucket are billed now: %s per hour in total (the next expires %s).",
			len(d.Workers), sum.Format(4), nextExpiry(d).UTC().Format(time.RFC3339)))
	}
	return notes
}

// parkedSummary is the status line of the bucket's parked workers, "" when none.
func (r *run) parkedSummary(ctx context.Context) string {
	if r.backend.Ops.Pool == nil {
		return ""
	}
	d, err := r.backend.Ops.Pool.List(ctx)
	if err != nil {
		return "unknown: the parked-worker pool is unreadable"
	}
	if len(d.Workers) == 0 {
		return ""
	}
	sum := cost.EUR(0, 0)
	for _, w := range d.Workers {
		if h, _, ok := r.backend.Ops.OfferPrice(ctx, w.Offer, w.Zone); ok {
			sum = sum.Add(h)
		}
	}
	return fmt.Sprintf("%d in this state bucket · %s per hour", len(d.Workers), sum.Format(4))
}

func nextExpiry(d pool.Doc) time.Time {
	var t time.Time
	for _, w := range d.Workers {
		if t.IsZero() || w.ParkedUntil.Before(t) {
			t = w.ParkedUntil
		}
	}
	return t
}
