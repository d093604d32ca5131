package cluster

import (
	"context"

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
)

// Pricer prices a spec per day in nano-euros (internal/cost through clusterops.Quote).
type Pricer func(ctx context.Context, spec provision.Spec) (int64, error)

// Preflight returns the up's pre-flight: the driver's headroom (quotas, usage, stock) for the
// ask's offers, the repository's quotas: beside it, the candidate offer that a parked worker of
// the pool would serve marked for adoption (it is counted already: nothing is ordered), each
// candidate priced, then preflight.Decide.
func Preflight(cfg Config, price Pricer) func(ctx context.Context, spec provision.Spec, st *provision.State, ask preflight.Ask) (preflight.Result, error) {
	return func(ctx context.Context, spec provision.Spec, st *provision.State, ask preflight.Ask) (preflight.Result, error) {
		in, err := cfg.Driver.Headroom(ctx, spec, st, ask.Offers)
		if err != nil {
			return preflight.Result{}, err
		}
		in.Overrides = ask.Quotas
		b := &builder{cfg: cfg}
		for i := range in.Offers {
			o := &in.Offers[i]
			s := spec
			s.BaremetalOffer = o.Name
			if cfg.Pool != nil {
				if ok, err := cfg.Pool.Available(ctx, b.want(ctx, s)); err == nil && ok {
					o.Adopt = true
				}
			}
			if price != nil {
				if n, err := price(ctx, s); err == nil {
					o.DailyNanos, o.Priced = n, true
				}
			} else {
				o.Priced = true
			}
		}
		return preflight.Decide(in), nil
	}
}
