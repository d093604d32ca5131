package clusterops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// claimGrace is how long a claim's run has to make its cluster of a spare: past it, a claimed
// spare whose cluster exists is forgotten, one whose cluster does not is destroyed (its run died).
const claimGrace = 30 * time.Minute

// PoolRequest is one pass over a repository's warm pool (`bot pool fill`, the schedule's pass).
type PoolRequest struct {
	Repository string
	// Spec is the spec spares are built with: the repository's defaults (pool.talos and
	// pool.extensions already applied by the caller).
	Spec provision.Spec
	// Patch is pool.talos and pool.extensions, by setting name (SpecPatch), applied to Spec.
	Patch SpecPatch
	// Bounds are the repository's bounds; Bounds.Pool is the pool kept (its size, hours, max_age).
	Bounds *repoconfig.RepoConfig
	// Lead is how long a spare's build takes (the ETA of a cold up): a build is started ahead of
	// pool.hours by this much, and one building for three leads is taken for dead.
	Lead time.Duration
	// Interval is how long until the schedule's next pass (0: none planned): a window's first
	// build starts a pass early when the next would be late.
	Interval time.Duration
	// RequestedBy and RunID name the pass in the locks and the headers.
	RequestedBy, RunID string
}

// PoolStep is a step of the pool's plan as it was carried out.
type PoolStep struct {
	spare.Step
	// Spare is the spare's name (a build's, once drawn); Err what failed.
	Err error
}

// PoolPass reads the repository's spares (their headers: one listing), decides the pool's plan
// (spare.Decide, pure), and carries it out: claimed spares forgotten or destroyed, stale and
// failed ones destroyed, new ones built, all builds at once (each is an up of its own, its
// quotas pre-flighted and its cost weighed by the budget, spares counted). It returns the plan and
// each step's outcome; the error joins the steps' errors.
func (o *Ops) PoolPass(ctx context.Context, req PoolRequest) (spare.Plan, []PoolStep, error) {
	if req.Bounds == nil {
		return spare.Plan{}, nil, errors.New("pool pass: no bounds (the repository's .github/poc.yml)")
	}
	held, busy, err := o.holdPool(ctx, req)
	if err != nil || held == nil {
		return spare.Plan{Why: busy}, nil, err
	}
	defer o.release(ctx, held)
	if req.Lead <= 0 {
		req.Lead = 15 * time.Minute // no book: about a cold up on the latency profile
		if o.ETA != nil {
			req.Lead = o.ETA.Estimate(ctx, req.Spec, false).D
		}
	}
	in, err := o.poolInput(ctx, req)
	if err != nil {
		return spare.Plan{}, nil, err
	}
	plan := spare.Decide(in)
	steps := make([]PoolStep, len(plan.Steps))
	var wg sync.WaitGroup
	for i, s := range plan.Steps {
		steps[i].Step = s
		switch s.Action {
		case spare.ActionBuild:
			steps[i].Spare = spare.NewName()
			wg.Go(func() { steps[i].Err = o.buildSpare(ctx, req, steps[i].Spare) })
		case spare.ActionDestroy:
			wg.Go(func() { steps[i].Err = o.destroySpare(ctx, req, s.Spare, s.Why) })
		case spare.ActionForget:
			steps[i].Err = o.forgetSpare(ctx, req, s.Spare)
		default: // park and check are the schedule's (not carried out by this pass yet)
			steps[i].Err = fmt.Errorf("%s of %s: not carried out by this pass", s.Action, s.Spare)
		}
	}
	wg.Wait()
	var errs []error
	for _, s := range steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Action, s.Spare, s.Err))
		}
	}
	return plan, steps, errors.Join(errs...)
}

// poolInput reads what the pool's plan decides on: the repository's spares' records and the
// clusters claims made of them, from one listing of the headers.
func (o *Ops) poolInput(ctx context.Context, req PoolRequest) (spare.PlanInput, error) {
	headers, err := o.Store.List(ctx)
	if err != nil && headers == nil {
		return spare.PlanInput{}, fmt.Errorf("pool pass: list the state bucket: %w", err)
	}
	if err != nil {
		o.log().Warn("pool pass: some headers are unreadable; they are not the pool's", "err", err)
	}
	spec, err := target(req.Spec, req.Patch)
	if err != nil {
		return spare.PlanInput{}, fmt.Errorf("pool pass: the spares' spec: %w", err)
	}
	kube, _ := talos.DefaultKubernetesVersion(spec.TalosVersion)
	in := spare.PlanInput{Pool: req.Bounds.Pool, Claimers: map[string]string{}, Now: o.now(), Lead: req.Lead, Interval: req.Interval, Room: -1,
		ClaimGrace: claimGrace, Pins: spare.Pins{Talos: spec.TalosVersion, Kubernetes: kube}}
	// A claim's cluster whose rebinding is not done holds the spare's resources under the spare's
	// names: the spare is neither forgotten (the orphan pass would take its resources) nor
	// destroyed (they are the cluster's); the cluster's next up finishes the rebinding.
	unbound := map[string]bool{}
	for _, h := range headers {
		if from := h.Labels[spare.LabelClaimedFrom]; from != "" {
			if h.Labels[labelRebound] == "true" {
				in.Claimers[h.Cluster] = from
			} else {
				unbound[from] = true
			}
		}
	}
	for _, h := range headers {
		if !spare.Is(h) || !strings.EqualFold(h.Repository, req.Repository) || unbound[h.Cluster] {
			continue
		}
		rec, rerr := spare.Of(h)
		if rerr != nil {
			rec.Unhealthy = rerr.Error() // a record that cannot be read is replaced
		}
		in.Spares = append(in.Spares, rec)
	}
	return in, nil
}

// buildSpare builds one spare: an up of a cluster of its own, kind spare, that its ready phase
// marks built and verified (spareReady); its expiry covers the build, then pool.max_age.
func (o *Ops) buildSpare(ctx context.Context, req PoolRequest, name string) error {
	_, err := o.Up(ctx, Intent{Cluster: name, Spec: req.Spec, Patch: req.Patch, WorkerOffers: req.Bounds.WorkerOffers,
		Repository: req.Repository, Kind: spare.Kind,
		RequestedBy: req.RequestedBy, RunID: req.RunID, Command: "pool fill", Bounds: req.Bounds, Scope: req.Repository,
		TTL: req.Bounds.Pool.MaxAge + 3*req.Lead})
	return err
}

// destroySpare tears a spare down (a down of it, which a run holding its lock refuses: the next
// pass retries).
func (o *Ops) destroySpare(ctx context.Context, req PoolRequest, name, why string) error {
	_, err := o.Down(ctx, Intent{Cluster: name, Repository: req.Repository, Scope: req.Repository, RequestedBy: req.RequestedBy,
		RunID: req.RunID, Command: "pool: destroy (" + why + ")", NoCancel: true})
	return err
}

// forgetSpare removes a claimed spare's document (and artifacts) whose machines are the cluster
// its claim made: that cluster's state records them.
func (o *Ops) forgetSpare(ctx context.Context, req PoolRequest, name string) error {
	held, err := o.acquire(ctx, statestore.ClusterLock(name), Intent{RequestedBy: req.RequestedBy, RunID: req.RunID,
		Command: "pool: forget " + name}, time.Millisecond)
	if err != nil {
		return err
	}
	defer o.release(ctx, held)
	doc, err := o.Store.Get(held.Context(), name)
	if errors.Is(err, statestore.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := o.Store.Delete(held.Context(), doc); err != nil {
		return err
	}
	return o.Store.DeleteArtifacts(held.Context(), name)
}

// PoolCost is what a repository's warm pool costs now: its spares (building and ready, claimed
// ones excepted: they are their clusters'), their daily cost as their headers record it, and what
// they have accrued since their builds began (a 24th of the daily cost per started hour).
type PoolCost struct {
	Spares         int
	Daily, Accrued cost.Money
}

// CostOfPool reads the repository's spares (one listing) and prices them (PoolCost).
func (o *Ops) CostOfPool(ctx context.Context, repository string) (PoolCost, error) {
	headers, err := o.Store.List(ctx)
	if err != nil && headers == nil {
		return PoolCost{}, fmt.Errorf("the warm pool's cost: list the state bucket: %w", err)
	}
	now := o.now()
	c := PoolCost{Daily: cost.EUR(0, 0), Accrued: cost.EUR(0, 0)}
	for _, h := range headers {
		if !spare.Is(h) || !strings.EqualFold(h.Repository, repository) {
			continue
		}
		r, rerr := spare.Of(h)
		if rerr != nil || r.ClaimedBy != "" {
			continue
		}
		c.Spares++
		daily := cost.Money{Currency: cost.CurrencyEUR, Nanos: r.DailyNanos}
		c.Daily = c.Daily.Add(daily)
		c.Accrued = c.Accrued.Add(cost.AccruedAtDaily(daily, h.Created, now))
	}
	return c, err
}
