package clusterops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
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
	// Lead is how long a spare's build takes (0: the ETA of a cold up): a build is started ahead
	// of pool.hours by this much, and one building for three leads is taken for dead.
	Lead time.Duration
	// Interval is how long until the schedule's next pass (0: none planned): a window's first
	// build starts a pass early when the next would be late.
	Interval time.Duration
	// CheckEvery: a ready spare not checked for this long is checked (0: settings.PoolCheckEvery).
	CheckEvery time.Duration
	// RequestedBy and RunID name the pass in the locks and the headers.
	RequestedBy, RunID string
}

// PoolStep is a step of the pool's plan as it was carried out.
type PoolStep struct {
	spare.Step
	// Spare is the spare's name (a build's, once drawn); Err what failed.
	Err error
}

// PoolPass reads the repository's spares (their headers: one listing), the room the quotas leave
// (one pre-flight of a spare) and what keeping the pool costs and saves (PoolOptions), decides the
// pool's plan (spare.Decide, pure), and carries it out, all steps at once: claimed spares
// forgotten or destroyed, stale and failed ones destroyed, new ones built (each an up of its own,
// its quotas pre-flighted and its cost weighed by the budget, spares counted), spares parked off
// hours, the health of the ready ones checked. It returns the plan and each step's outcome; the
// error joins the steps' errors and, when pool.size does not fit the quotas, the refusal naming
// the quota (*PoolFitError: what fits is built all the same).
func (o *Ops) PoolPass(ctx context.Context, req PoolRequest) (spare.Plan, []PoolStep, error) {
	if req.Bounds == nil {
		return spare.Plan{}, nil, errors.New("pool pass: no bounds (the repository's .github/poc.yml)")
	}
	held, busy, err := o.holdPool(ctx, req)
	if err != nil || held == nil {
		return spare.Plan{Why: busy}, nil, err
	}
	defer o.release(ctx, held)
	in, fit, err := o.poolInput(ctx, req)
	if err != nil {
		return spare.Plan{}, nil, err
	}
	plan := spare.Decide(in)
	steps := make([]PoolStep, len(plan.Steps))
	for _, wave := range poolWaves(plan.Steps, in.Room) {
		var wg sync.WaitGroup
		for _, i := range wave {
			s := plan.Steps[i]
			steps[i].Step = s
			switch s.Action {
			case spare.ActionBuild:
				steps[i].Spare = spare.NewName()
				wg.Go(func() { steps[i].Err = o.buildSpare(ctx, req, steps[i].Spare) })
			case spare.ActionDestroy, spare.ActionPark:
				wg.Go(func() { _, steps[i].Err = o.Down(ctx, poolDown(req, s, o.now())) })
			case spare.ActionCheck:
				wg.Go(func() { steps[i].Err = o.checkSpare(ctx, req, s.Spare) })
			case spare.ActionForget:
				steps[i].Err = o.forgetSpare(ctx, req, s.Spare)
			}
		}
		wg.Wait()
	}
	var errs []error
	if fit != nil {
		errs = append(errs, fit)
	}
	for _, s := range steps {
		if s.Err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", s.Action, s.Spare, s.Err))
		}
	}
	return plan, steps, errors.Join(errs...)
}

// poolWaves orders a plan's steps (by index) into waves run one after the other, each wave's
// steps all at once. A plan builds more spares than the quotas left room for (room, before the
// plan; negative: not bounded) only on the room its teardowns free (spare.Decide destroys a stale
// spare first when the quotas leave no room for both): its teardowns go first, the rest after.
// Otherwise every step runs at once.
func poolWaves(steps []spare.Step, room int) [][]int {
	builds := 0
	var teardowns, rest []int
	for i, s := range steps {
		switch s.Action {
		case spare.ActionBuild:
			builds++
			rest = append(rest, i)
		case spare.ActionDestroy, spare.ActionPark:
			teardowns = append(teardowns, i)
		default:
			rest = append(rest, i)
		}
	}
	if room < 0 || builds <= room || len(teardowns) == 0 || len(rest) == 0 {
		all := make([]int, len(steps))
		for i := range all {
			all[i] = i
		}
		return [][]int{all}
	}
	return [][]int{teardowns, rest}
}

// PoolFitError is a pool.size the quotas cannot hold with one cluster for a requester: said where
// the configuration is read (the pool pass, `bot pool fill`, `bot doctor`).
type PoolFitError struct{ Fit preflight.PoolFit }

func (e *PoolFitError) Error() string { return e.Fit.Error() }

// poolDown is the down a plan's teardown of a spare runs: destroyed, or (ActionPark) its worker
// parked until the step's Until, the repository's own, offered further only as its
// share_parked_workers says (the park of /poc down); a park whose end has passed destroys.
func poolDown(req PoolRequest, s spare.Step, now time.Time) Intent {
	in := Intent{Cluster: s.Spare, Repository: req.Repository, Scope: req.Repository, RequestedBy: req.RequestedBy,
		RunID: req.RunID, Command: "pool: destroy (" + s.Why + ")", NoCancel: true}
	if s.Action == spare.ActionPark && s.Until.After(now) {
		in.ParkFor, in.ShareParked = s.Until.Sub(now), req.Bounds.ShareParkedWorkers
		in.Command = "pool: park until " + s.Until.UTC().Format(time.RFC3339) + " (" + s.Why + ")"
	}
	return in
}

// PoolOptions are what the pool could keep outside its hours, timed by the ETA of spec's up (a
// cold one, and one adopting a parked worker) and priced by the quoter (the spare's daily price,
// the worker's offer's): spare.Options. Without an ETA book or a price, only keeping nothing is
// an option (it needs neither). lead is the cold up's ETA (a build's time).
func (o *Ops) PoolOptions(ctx context.Context, spec provision.Spec) (opts []spare.Option, lead time.Duration) {
	nothing := func(lead time.Duration) []spare.Option { return []spare.Option{{Keep: spare.KeepNothing, Claim: lead}} }
	if o.ETA == nil {
		return nothing(defaultLead), defaultLead
	}
	lead, parked := o.ETA.Estimate(ctx, spec, false).D, o.ETA.Estimate(ctx, spec, true).D
	if o.Quoter == nil {
		return nothing(lead), lead
	}
	q, err := Quote(ctx, o.Quoter, spec, 24*time.Hour, false)
	if err != nil {
		o.log().Warn("pool pass: the spare's price is not known; running spares are no option outside pool.hours", "err", err)
		return nothing(lead), lead
	}
	worker := int64(-1)
	if _, daily, ok := o.OfferPrice(ctx, spec.BaremetalOffer, string(spec.Zone)); ok {
		worker = daily.Nanos
	}
	return spare.Options(parked, lead, q.Daily.Nanos, worker), lead
}

// defaultLead is a build's time without an ETA book: about a cold up on the latency profile.
const defaultLead = 15 * time.Minute

// poolInput reads what the pool's plan decides on: the repository's spares' records and the
// clusters claims made of them, from one listing of the headers; the room the quotas leave for
// more spares (a pre-flight of one, when these Ops have one), and whether pool.size fits them.
func (o *Ops) poolInput(ctx context.Context, req PoolRequest) (spare.PlanInput, *PoolFitError, error) {
	headers, err := o.Store.List(ctx)
	if err != nil && headers == nil {
		return spare.PlanInput{}, nil, fmt.Errorf("pool pass: list the state bucket: %w", err)
	}
	if err != nil {
		o.log().Warn("pool pass: some headers are unreadable; they are not the pool's", "err", err)
	}
	spec, err := target(req.Spec, req.Patch)
	if err != nil {
		return spare.PlanInput{}, nil, fmt.Errorf("pool pass: the spares' spec: %w", err)
	}
	kube, _ := talos.DefaultKubernetesVersion(spec.TalosVersion)
	options, lead := o.PoolOptions(ctx, spec)
	in := spare.PlanInput{Pool: req.Bounds.Pool, Claimers: map[string]string{}, Now: o.now(), Lead: cmp.Or(req.Lead, lead), Interval: req.Interval,
		Room: -1, ClaimGrace: claimGrace, Pins: spare.Pins{Talos: spec.TalosVersion, Kubernetes: kube}, Options: options,
		CheckEvery: cmp.Or(req.CheckEvery, settings.PoolCheckEvery)}
	in.Spares = poolRecords(headers, req.Repository, in.Claimers)
	if o.Preflight == nil || in.Pool.Size == 0 {
		return in, nil, nil
	}
	res, err := o.Preflight(ctx, spec, nil, preflight.Ask{Offers: workerOffers(Intent{WorkerOffers: req.Bounds.WorkerOffers}, spec), Quotas: req.Bounds.Quotas})
	if err != nil {
		o.log().Warn("pool pass: the quotas could not be read; the builds are pre-flighted one by one", "err", err)
		return in, nil, nil
	}
	running := 0
	for _, r := range in.Spares {
		if r.ClaimedBy == "" {
			running++
		}
	}
	fit := preflight.FitPool(res, in.Pool.Size, running)
	in.Room = fit.SpareRoom()
	if !fit.Fits() {
		return in, &PoolFitError{Fit: fit}, nil
	}
	return in, nil, nil
}

// poolRecords are the repository's spares' records among headers, and (into claimers) the
// clusters claims made of spares, whose rebinding is done.
func poolRecords(headers []statestore.Header, repository string, claimers map[string]string) []spare.Record {
	// A claim's cluster whose rebinding is not done holds the spare's resources under the spare's
	// names: the spare is neither forgotten (the orphan pass would take its resources) nor
	// destroyed (they are the cluster's); the cluster's next up finishes the rebinding.
	unbound := map[string]bool{}
	for _, h := range headers {
		if from := spare.ClaimedFrom(h); from != "" {
			if h.Labels[labelRebound] == "true" {
				claimers[h.Cluster] = from
			} else {
				unbound[from] = true
			}
		}
	}
	var out []spare.Record
	for _, h := range headers {
		if !spare.Is(h) || !strings.EqualFold(h.Repository, repository) || unbound[h.Cluster] {
			continue
		}
		rec, rerr := spare.Of(h)
		if rerr != nil {
			rec.Unhealthy = rerr.Error() // a record that cannot be read is replaced
		}
		out = append(out, rec)
	}
	return out
}

// checkSpare is the schedule's health check of a ready spare: the claim's re-check (recheck), then
// its record's Checked and Unhealthy written under the spare's lock, on its record read again (a
// spare claimed meanwhile is its claim's). The check runs outside that lock: it takes it itself
// to open the security group to the runner. An unhealthy spare is never handed out and the next
// pass replaces it; a check that could not run says nothing of the spare and marks nothing.
func (o *Ops) checkSpare(ctx context.Context, req PoolRequest, name string) error {
	_, st, err := o.Load(ctx, name)
	if err != nil {
		return err
	}
	unhealthy, lost := o.recheck(ctx, &SpareFact{Candidate: spare.Candidate{Record: spare.Record{Name: name}}, State: st})
	if lost != "" {
		return errors.New(lost)
	}
	now := o.now()
	in := Intent{Cluster: name, RequestedBy: req.RequestedBy, RunID: req.RunID, Command: "pool: record the health check of " + name}
	if _, _, why := o.markSpare(ctx, in, name, false, func(r *spare.Record) string {
		if r.ClaimedBy != "" {
			return "claimed meanwhile by " + r.ClaimedBy
		}
		r.Checked, r.Unhealthy = now, unhealthy
		return ""
	}); why != "" {
		return fmt.Errorf("its check was not recorded: %s", why)
	}
	if unhealthy != "" {
		return fmt.Errorf("unhealthy (no claim takes it; the next pass replaces it): %s", unhealthy)
	}
	return nil
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
