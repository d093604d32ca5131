package clusterops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// SpareFact is a spare of the bucket as a claim read it: its record and the spec it was built
// with (spare.Candidate), and its document and decoded state, which the claim makes the new
// cluster's.
type SpareFact struct {
	spare.Candidate
	Doc   *statestore.Document
	State *provision.State
}

// Rebinder gives the resources st records the names and tags of cluster to (cmd/bot binds it to
// scaleway.RebindPlan and Driver.Rebind). It is idempotent: a rerun after a crash finishes.
type Rebinder func(ctx context.Context, st *provision.State, to string) error

// HealthCheck checks a cluster's APIs and network from its state (checkHealthOf: every control
// plane's Talos API, the worker's through a control plane, /readyz, nodes, the pod network).
type HealthCheck func(ctx context.Context, st *provision.State) []Health

// OutReboundFrom is the state output a claim records once the claimed spare's resources carry the
// new cluster's names and tags: the spare's name.
const OutReboundFrom = "rebound_from"

// labelRebound marks, in the header, a claim whose rebinding is done (the schedule forgets the
// claimed spare's document only then).
const labelRebound = "claim_rebound"

// decideClaim decides whether a new cluster is a claimed spare (the intent asks for the pool:
// Warm), which spare and why, or the cold path and why: spare.Choose on the spares read
// (NeedSpares), less those whose re-check failed or that another run claimed first; the chosen
// spare's health is re-checked (NeedHealth) before it is planned. A claim then needs the quote
// and the budget, not the pre-flight: it creates nothing.
func decideClaim(d Decision, in Intent, f Facts, now time.Time) Decision {
	p := &d.Plan
	if !p.Create || in.Kind == spare.Kind || (!in.Warm && !in.Cold) {
		return d
	}
	if in.Cold {
		p.Path = "cold: " + spare.ColdAsked
		return d
	}
	if f.Read&NeedSpares == 0 {
		d.Need = NeedSpares
		return d
	}
	kube, _ := talos.DefaultKubernetesVersion(p.Spec.TalosVersion)
	want := spare.Want{Spec: p.Spec, Offers: in.WorkerOffers, Repository: in.Repository, Kubernetes: kube,
		Share: in.Bounds != nil && in.Bounds.Pool.Share}
	var cands []spare.Candidate
	var gone []spare.Skip
	for _, s := range f.Spares {
		switch {
		case f.Health[s.Name] != "":
			gone = append(gone, spare.Skip{Spare: s.Name, Why: "failed its re-check: " + f.Health[s.Name]})
		case f.Lost[s.Name] != "":
			gone = append(gone, spare.Skip{Spare: s.Name, Why: f.Lost[s.Name]})
		default:
			cands = append(cands, s.Candidate)
		}
	}
	c := spare.Choose(cands, want, now)
	if c.Cold == spare.ColdNoSpare && len(f.Spares) == 0 && f.SparesErr == nil && (in.Bounds == nil || in.Bounds.Pool.Size == 0) {
		return d // no pool and no spare: nothing to say of a path
	}
	if c.Spare == nil {
		c.Skipped = append(gone, c.Skipped...)
		if len(gone) > 0 && c.Cold == spare.ColdNoSpare {
			c.Cold = ""
		}
		p.Path = "cold: " + c.Why(now)
		if f.SparesErr != nil {
			p.Path += " (some spares could not be read: " + f.SparesErr.Error() + ")"
		}
		return d
	}
	i := slices.IndexFunc(f.Spares, func(s SpareFact) bool { return s.Name == c.Spare.Name })
	fact := f.Spares[i]
	p.Claim = &fact
	if _, checked := f.Health[fact.Name]; !checked {
		d.Need = NeedHealth
		return d
	}
	p.InPlace = c.InPlace
	p.Spec.BaremetalOffer = fact.Spec.BaremetalOffer
	p.Path = "warm: " + c.Why(now)
	p.Header.Labels = maps.Clone(p.Header.Labels)
	if p.Header.Labels == nil {
		p.Header.Labels = map[string]string{}
	}
	p.Header.Labels[spare.LabelClaimedFrom] = fact.Name
	return d
}

// readSpares reads the bucket's spares: the headers (one listing), then each ready and unclaimed
// spare's document (its spec and state). What cannot be read is left out, and said in the error.
func (o *Ops) readSpares(ctx context.Context) ([]SpareFact, error) {
	headers, err := o.Store.List(ctx)
	if err != nil && headers == nil {
		return nil, err
	}
	var out []SpareFact
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, h := range headers {
		if !spare.Is(h) {
			continue
		}
		rec, rerr := spare.Of(h)
		if rerr != nil {
			errs = append(errs, rerr)
			continue
		}
		sf := SpareFact{Candidate: spare.Candidate{Record: rec}}
		if rec.Claimable(o.now(), "") == "" { // only a candidate's state is worth decrypting
			doc, st, lerr := o.Load(ctx, h.Cluster)
			if lerr != nil {
				errs = append(errs, lerr)
				continue
			}
			sf.Doc, sf.State, sf.Spec = doc, st, &st.Spec
		}
		out = append(out, sf)
	}
	return out, errors.Join(errs...)
}

// recheck is a spare's health re-check before a claim hands it out: the checks of a status (every
// control plane's Talos API under the cluster's CA, the worker's through a control plane,
// /readyz, and the network: nodes, Cilium, DNS, routing, the pod-network probe), from this runner,
// admitted by the spare's security group for the check when its admin CIDRs leave it out (as a
// status's read is). It returns why it failed ("": healthy), or lost when it could not be checked
// at all (the group could not be opened): that says nothing of the spare, which is then not
// marked, and the claim goes on without it.
func (o *Ops) recheck(ctx context.Context, fact *SpareFact) (unhealthy, lost string) {
	check := o.SpareHealth
	if check == nil {
		check = checkHealthOf
	}
	if o.Log != nil {
		ctx = talos.WithDefaultLogger(ctx, o.Log.With("component", "talos", "spare", fact.Name))
	}
	var results []Health
	switch decideReadAccess(fact.State, o.RunnerCIDR, o.NoReadRunnerAccess) {
	case readRefused:
		return "", "not re-checked: " + outsideAdminCIDRs(fact.State, o.RunnerCIDR)
	case readOpen:
		opened, err := o.withRunnerAccess(ctx, fact.Name, "claim re-check", func(ctx context.Context) error {
			results = check(ctx, fact.State)
			return nil
		})
		if !opened {
			return "", fmt.Sprintf("not re-checked: %v", err)
		}
	default:
		results = check(ctx, fact.State)
	}
	var failed []string
	for _, h := range results {
		if !h.OK {
			failed = append(failed, h.Name+": "+h.Detail)
		}
	}
	return strings.Join(failed, "; "), ""
}

// markSpare writes edit into a spare's record under its lock (one try: a busy spare is another
// run's; the lock says the claim of in's cluster, or in's command when in is the spare's own), from its document read afresh; edit says why the spare cannot take the change ("": it
// took it). It returns the lock, held, when keep is set and the change was written.
func (o *Ops) markSpare(ctx context.Context, in Intent, name string, keep bool, edit func(r *spare.Record) string) (*statestore.Held, *statestore.Document, string) {
	command := "claim " + name + " for " + in.Cluster
	if in.Cluster == name { // the pool's own pass on the spare
		command = in.Command
	}
	held, err := o.acquire(ctx, statestore.ClusterLock(name), Intent{RunID: in.RunID, RequestedBy: in.RequestedBy,
		Command: command}, time.Millisecond)
	if err != nil {
		return nil, nil, "busy: " + err.Error()
	}
	doc, err := o.Store.Get(held.Context(), name)
	if err == nil {
		var rec spare.Record
		if rec, err = spare.Of(doc.Header); err == nil {
			if why := edit(&rec); why != "" {
				o.release(ctx, held)
				return nil, nil, why
			}
			rec.Into(&doc.Header)
			err = o.Store.Put(held.Context(), doc)
		}
	}
	if err != nil || !keep {
		o.release(ctx, held)
	}
	if err != nil {
		return nil, nil, "its record could not be written: " + err.Error()
	}
	return held, doc, ""
}

// claimSpare marks the planned spare claimed by in's cluster: a conditional write under the
// spare's lock, on its record read again (another run's claim, or the schedule's teardown, came
// first: lost says so). Two runs never both claim one spare.
func (o *Ops) claimSpare(ctx context.Context, in Intent, fact *SpareFact) (*statestore.Held, *statestore.Document, string) {
	now := o.now()
	kube, _ := talos.DefaultKubernetesVersion(fact.Spec.TalosVersion)
	return o.markSpare(ctx, in, fact.Name, true, func(r *spare.Record) string {
		if why := r.Claimable(now, kube); why != "" {
			return "no longer claimable: " + why
		}
		r.ClaimedBy, r.ClaimedAt = in.Cluster, now
		return ""
	})
}

// markUnhealthy records the failed re-checks of f.Health in the spares' records (best effort: the
// schedule checks them again), so that no claim takes them and the schedule replaces them.
func (o *Ops) markUnhealthy(ctx context.Context, in Intent, f Facts) {
	now := o.now()
	for name, why := range f.Health {
		if why == "" {
			continue
		}
		if _, _, err := o.markSpare(ctx, in, name, false, func(r *spare.Record) string {
			if r.ClaimedBy != "" {
				return "claimed meanwhile"
			}
			r.Unhealthy, r.Checked = why, now
			return ""
		}); err != "" {
			o.log().Warn("could not record a spare's failed re-check; the schedule checks it again", "spare", name, "err", err)
		}
	}
}

// actClaim makes the claimed spare the new cluster: its first document (the spare's state under the
// new name, with the header the decision wrote) under the admission lock, then the rebinding of
// its resources, the spare's document gone, the in-place changes converged (when the request
// asked for any), and the ready phase with the kubeconfig. spareLock is the spare's lock, held
// since the claim's mark.
func (o *Ops) actClaim(ctx context.Context, in Intent, p Plan, out *Outcome, q *queue, releaseAdmission func(),
	spareLock *statestore.Held, spareDoc *statestore.Document) (*Outcome, error) {
	defer o.release(ctx, spareLock)
	st := p.Claim.State.Clone()
	st.ClusterID, st.Spec = in.Cluster, p.Spec
	saver := &docSaver{store: o.Store, cluster: in.Cluster, doc: &statestore.Document{}, fault: o.saveFault}
	err := saver.write(ctx, p.Header, st)
	releaseAdmission()
	if err != nil {
		o.giveBack(ctx, in, p.Claim.Name)
		return failed(out, err)
	}
	out.Created, out.Header, out.Path, out.Claimed = true, saver.doc.Header, p.Path, p.Claim.Name
	q.admitted(out)
	if err := o.rebind(ctx, st, p.Claim.Name, saver); err != nil {
		return failed(out, err)
	}
	// The spare is the cluster's now: its document and artifacts go (the schedule forgets them
	// when this fails).
	if err := o.Store.Delete(spareLock.Context(), spareDoc); err != nil {
		o.log().Warn("the claimed spare's document stays until the schedule forgets it", "spare", p.Claim.Name, "err", err)
	} else if err := o.Store.DeleteArtifacts(spareLock.Context(), p.Claim.Name); err != nil {
		o.log().Warn("the claimed spare's artifacts stay", "spare", p.Claim.Name, "err", err)
	}
	out.State = st
	if len(p.InPlace) > 0 {
		return o.converge(ctx, in, out, q.progress(), st, saver, false)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	return o.upReady(wctx, in, out, saver, false)
}

// rebind gives the resources st records the names and tags of st's cluster (they carry the
// spare's from until then), then records it done: the state's OutReboundFrom and the header's
// labelRebound, in one write. An up of a claimed cluster whose rebinding did not finish (its run
// died) does it first (actUp).
func (o *Ops) rebind(ctx context.Context, st *provision.State, from string, saver *docSaver) error {
	if o.Rebind == nil {
		return errors.New("these operations cannot rename a claimed spare's resources (Ops.Rebind)")
	}
	if err := o.Rebind(ctx, st, st.ClusterID); err != nil {
		return fmt.Errorf("rename the resources of spare %s to %s (an up of %s finishes it): %w", from, st.ClusterID, st.ClusterID, err)
	}
	st.Outputs[OutReboundFrom] = from
	h := saver.doc.Header
	h.Labels = maps.Clone(h.Labels)
	h.Labels[labelRebound] = "true"
	return saver.write(ctx, h, st)
}

// unfinishedRebind says which spare an existing cluster was claimed from when its rebinding did
// not finish ("" when it did, or it was never a spare).
func unfinishedRebind(h statestore.Header, st *provision.State) string {
	from := spare.ClaimedFrom(h)
	if from == "" || h.Labels[labelRebound] == "true" || st.Outputs[OutReboundFrom] == from {
		return ""
	}
	return from
}

// giveBack takes a claim back (the cluster's first write failed): the spare is claimable again.
func (o *Ops) giveBack(ctx context.Context, in Intent, name string) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, _, why := o.markSpare(wctx, in, name, false, func(r *spare.Record) string {
		if r.ClaimedBy != in.Cluster {
			return "claimed by " + r.ClaimedBy
		}
		r.ClaimedBy, r.ClaimedAt = "", time.Time{}
		return ""
	}); why != "" {
		o.log().Warn("could not give a claimed spare back; the schedule destroys it once its claim is stale", "spare", name, "why", why)
	}
}

// spareReady marks a spare's header built and verified at now (its up reached ready: "ready means
// ready"), in the ready phase's one write: the versions it runs, its last check, and the expiry
// pool.max_age from now, past which no claim takes it and the schedule replaces it.
func spareReady(h *statestore.Header, in Intent, st *provision.State, now time.Time) {
	rec, _ := spare.Of(*h) // the labels of a spare's build are the bot's own: a bad one is overwritten
	maxAge := settings.DefaultPoolMaxAge
	if in.Bounds != nil {
		if in.Bounds.Pool.MaxAge > 0 {
			maxAge = in.Bounds.Pool.MaxAge
		}
		rec.Shared = in.Bounds.Pool.Share
	}
	kube, _ := talos.DefaultKubernetesVersion(st.Spec.TalosVersion)
	rec.Phase, rec.Ready, rec.Checked, rec.Stale, rec.Unhealthy = lifecycle.PhaseReady, now, now, now.Add(maxAge), ""
	rec.Talos, rec.Kubernetes = st.Spec.TalosVersion, kube
	rec.Into(h)
}
