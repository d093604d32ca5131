package chatops

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision"
)

// Parked is the state bucket's pool of parked workers as chatops reads it (poolstore.Pool).
type Parked interface {
	List(ctx context.Context) (pool.Doc, error)
}

// offerPrice is the hourly and daily price of one Elastic Metal offer (the price of a parked
// worker, which is billed while parked).
func (r *run) offerPrice(ctx context.Context, offer, zone string) (hourly, daily cost.Money, known bool) {
	q, err := r.backend.Quoter.Quote(ctx, []cost.Item{{Name: "parked worker", Kind: cost.KindBaremetal, SKU: offer, Zone: scw.Zone(zone)}},
		cost.QuoteOptions{AllowUnknown: true})
	if err != nil || q.HasUnknown() {
		return cost.EUR(0, 0), cost.EUR(0, 0), false
	}
	return q.Hourly, q.Daily, true
}

// parkedCosts lists the bucket's parked workers as billed items (every cluster of the bucket may
// adopt them, so every repository's budget counts them); an unreadable pool counts as one
// item of unknown cost, as an unreadable state does.
func (r *run) parkedCosts(ctx context.Context) []cost.ClusterCost {
	if r.backend.Pool == nil {
		return nil
	}
	d, err := r.backend.Pool.List(ctx)
	if err != nil {
		r.h.log().Warn("parked-worker pool unreadable; counted as one worker of unknown cost", "err", err)
		return []cost.ClusterCost{{Name: "(unreadable parked-worker pool)", Daily: cost.EUR(0, 0), Unknown: true, Parked: true}}
	}
	var out []cost.ClusterCost
	for _, w := range d.Workers {
		_, daily, ok := r.offerPrice(ctx, w.Offer, w.Zone)
		out = append(out, cost.ClusterCost{Name: "parked worker " + w.ServerID, Daily: daily, Unknown: !ok, Parked: true})
	}
	return out
}

// parkingNotes (plain text: the renderer escapes notes) say what parking costs per hour for spec's worker, whether this repository parks,
// and the parked workers billed now in the bucket.
func (r *run) parkingNotes(ctx context.Context, spec provision.Spec) []string {
	var notes []string
	hourly, _, ok := r.offerPrice(ctx, spec.BaremetalOffer, spec.Zone)
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
	if r.backend.Pool == nil {
		return notes
	}
	if d, err := r.backend.Pool.List(ctx); err == nil && len(d.Workers) > 0 {
		sum := cost.EUR(0, 0)
		for _, w := range d.Workers {
			if h, _, ok := r.offerPrice(ctx, w.Offer, w.Zone); ok {
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
	if r.backend.Pool == nil {
		return ""
	}
	d, err := r.backend.Pool.List(ctx)
	if err != nil {
		return "unknown: the parked-worker pool is unreadable"
	}
	if len(d.Workers) == 0 {
		return ""
	}
	sum := cost.EUR(0, 0)
	for _, w := range d.Workers {
		if h, _, ok := r.offerPrice(ctx, w.Offer, w.Zone); ok {
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
