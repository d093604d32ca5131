package clusterops

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Parked is the state bucket's pool of parked workers as the budget reads it (poolstore.Pool).
type Parked interface {
	List(ctx context.Context) (pool.Doc, error)
}

// budget is the one budget rule: a new cluster of the intent's repository, priced candidate, must
// fit the repository's bounds beside the clusters already running (and the bucket's parked
// workers). It fails closed: a budget that cannot be checked refuses. Nil: admitted.
func (o *Ops) budget(ctx context.Context, in Intent, candidate cost.Quote) *Refusal {
	if in.Bounds == nil {
		return nil
	}
	running, err := o.runningCosts(ctx, in)
	if err != nil && running == nil {
		// A budget checked against no cluster at all would let anything through.
		o.log().Error("budget: could not list the running clusters", "err", err)
		return &Refusal{Kind: lifecycle.RefuseBudget, Cluster: in.Cluster, Err: err} // listing the running clusters failed
	}
	if err != nil {
		o.log().Warn("budget: some cluster states are unreadable; each counts as one cluster of unknown cost", "err", err)
	}
	var be *cost.BudgetError
	if !errors.As(cost.CheckBudget(*in.Bounds, running, candidate), &be) {
		return nil
	}
	r := &Refusal{Kind: lifecycle.RefuseBudget, Cluster: in.Cluster, Budget: be}
	for _, c := range running {
		r.Running = append(r.Running, c.Name)
	}
	return r
}

// runningCosts lists the repository's other clusters and their daily cost: from the header label
// when recorded, else priced from their decrypted spec.
func (o *Ops) runningCosts(ctx context.Context, in Intent) ([]cost.ClusterCost, error) {
	// List returns the readable headers along with an error naming the unreadable objects: those
	// still count, as clusters of unknown cost, rather than not at all.
	headers, err := o.Store.List(ctx)
	if err != nil && len(headers) == 0 {
		return nil, err
	}
	out := []cost.ClusterCost{}
	if err != nil {
		// A state object that cannot be read or authenticated counts at worst case, against every
		// repository (the one it names is not to be believed): one cluster costing the whole
		// daily limit, so no new cluster passes until a person has looked at it.
		var le *statestore.ListError
		bad := []string{"(unreadable state)"}
		if errors.As(err, &le) {
			bad = bad[:0]
			for _, b := range le.Bad {
				bad = append(bad, "(unverifiable: "+b.Key+")")
			}
		}
		for _, name := range bad {
			out = append(out, cost.ClusterCost{Name: name, Daily: cost.Money{Currency: cost.CurrencyEUR, Nanos: in.Bounds.MaxDailyNanoEUR}, Unknown: true})
		}
	}
	for _, h := range headers {
		if h.Cluster == in.Cluster || (h.Repository != "" && !strings.EqualFold(h.Repository, in.Repository)) {
			continue
		}
		c := cost.ClusterCost{Name: h.Cluster}
		if m, err := MetaOf(h); err == nil && m.DailyCostNanos > 0 {
			c.Daily = cost.Money{Currency: cost.CurrencyEUR, Nanos: m.DailyCostNanos}
		} else if _, st, err := o.Load(ctx, h.Cluster); err == nil {
			q, qerr := Quote(ctx, o.Quoter, st.Spec, 0, true)
			c.Daily, c.Unknown = q.Daily, qerr != nil || q.HasUnknown()
		} else {
			c.Daily, c.Unknown = cost.EUR(0, 0), true
		}
		out = append(out, c)
	}
	out = append(out, o.parkedCosts(ctx, pool.Scope{Repository: in.Repository, Share: in.ShareParked})...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
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
