package clusterops

import (
	"context"
	"errors"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Parked is the state bucket's pool of parked workers as the budget reads it (poolstore.Pool).
type Parked interface {
	List(ctx context.Context) (pool.Doc, error)
}

// badCosts counts the state objects a listing could not read or authenticate at worst case,
// against every repository (the one they name is not to be believed): each is one cluster
// costing the whole daily limit (maxDaily nano-euros), so that no new cluster passes until a
// person has looked at it.
func badCosts(err error, maxDaily int64) []cost.ClusterCost {
	var le *statestore.ListError
	bad := []string{"(unreadable state)"}
	if errors.As(err, &le) {
		bad = bad[:0]
		for _, b := range le.Bad {
			bad = append(bad, "(unverifiable: "+b.Key+")")
		}
	}
	var out []cost.ClusterCost
	for _, name := range bad {
		out = append(out, cost.ClusterCost{Name: name, Daily: cost.Money{Currency: cost.CurrencyEUR, Nanos: maxDaily}, Unknown: true})
	}
	return out
}

// parkedCosts lists the parked workers a cluster of scope may adopt as billed items: those its
// repository parked, and those of the repositories that share theirs when it shares too
// (pool.Worker.Offered); an unreadable pool counts as one item of unknown cost, as an unreadable
// state does.
func (o *Ops) parkedCosts(ctx context.Context, scope pool.Scope) []cost.ClusterCost {
	if o.Pool == nil {
		return nil
	}
	d, err := o.Pool.List(ctx)
	if err != nil {
		o.log().Warn("parked-worker pool unreadable; counted as one worker of unknown cost", "err", err)
		return []cost.ClusterCost{{Name: "(unreadable parked-worker pool)", Daily: cost.EUR(0, 0), Unknown: true, Parked: true}}
	}
	var out []cost.ClusterCost
	for _, w := range d.Workers {
		if !w.Offered(scope) {
			continue
		}
		_, daily, ok := o.OfferPrice(ctx, w.Offer, w.Zone)
		out = append(out, cost.ClusterCost{Name: "parked worker " + w.ServerID, Daily: daily, Unknown: !ok, Parked: true})
	}
	return out
}

// OfferPrice is the hourly and daily price of one Elastic Metal offer (the price of a parked
// worker, which is billed while parked).
func (o *Ops) OfferPrice(ctx context.Context, offer, zone string) (hourly, daily cost.Money, known bool) {
	if o.Quoter == nil {
		return cost.EUR(0, 0), cost.EUR(0, 0), false
	}
	q, err := o.Quoter.Quote(ctx, []cost.Item{{Name: "parked worker", Kind: cost.KindBaremetal, SKU: offer, Zone: scw.Zone(zone)}},
		cost.QuoteOptions{AllowUnknown: true})
	if err != nil || q.HasUnknown() {
		return cost.EUR(0, 0), cost.EUR(0, 0), false
	}
	return q.Hourly, q.Daily, true
}
