package clusterops

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Need names facts an operation reads only once its decision gets that far: the price and the
// pre-flight of the spec an up would apply, and the budget's other clusters (read under the
// repository's admission lock, held until the first write). Decide asks for them; the operation
// reads them and decides again, on the same document.
type Need uint8

// The facts Decide may ask for.
const (
	NeedQuote     Need = 1 << iota // Facts.Quote (nil once read: these Ops have no quoter)
	NeedPreflight                  // Facts.Preflight (nil once read: these Ops have no pre-flight)
	NeedBudget                     // Facts.Running and RunningErr, under the admission lock
	NeedSpares                     // Facts.Spares and SparesErr: the bucket's spares, for a claim
	NeedHealth                     // Facts.Health of the spare the plan claims (Plan.Claim)
)

// Facts are what an operation read, once, before it decides: the cluster's document and state,
// who holds its lock (status), and what Decide asked for (Read says which).
type Facts struct {
	// Doc is the cluster's state document (nil: none) and State its decoded body.
	Doc   *statestore.Document
	State *provision.State
	// Lock is the holder of the cluster's lock (status; nil: free).
	Lock *statestore.LockInfo
	// Read says which facts below were read.
	Read Need
	// Quote prices the plan's spec over its life; Preflight weighs it against the quotas and
	// the stock of its worker offers.
	Quote     *cost.Quote
	Preflight *preflight.Result
	// Running are the repository's other clusters (and the bucket's parked workers) with their
	// daily cost; RunningErr says what could not be read (with Running nil: nothing could).
	Running    []cost.ClusterCost
	RunningErr error
	// Spares are the bucket's spares a claim chooses among, SparesErr what could not be read of
	// them; Health says, by spare, why its re-check failed ("": it passed), Lost why a claim of
	// it was lost to another run. A spare in Health (failed) or Lost is not chosen again.
	Spares    []SpareFact
	SparesErr error
	Health    map[string]string
	Lost      map[string]string
}

// Decision is what Decide decided: facts it still needs, a refusal, a failure the facts make
// certain, or a plan to carry out.
type Decision struct {
	// Verb is what the operation does: the verb asked, or VerbResume when the command wakes a
	// cluster paused inside its window.
	Verb Verb
	// Need: read these facts, then decide again (Plan holds what they are read for).
	Need    Need
	Refusal *Refusal
	// Err: the operation fails on what was read (a stored spec that no longer validates, a
	// budget without prices); nothing is done.
	Err error
	// Plan is what to do; with a refusal or a failure, what was decided until then.
	Plan Plan
}

// Plan is what an operation that goes ahead does.
type Plan struct {
	// Exists: the cluster has a document; Create: this up writes its first one; Resume: this up
	// brings a paused cluster back.
	Exists, Create, Resume bool
	// Spec is the spec an up applies, else the cluster's (a down without a document: the
	// intent's, to sweep by tag).
	Spec provision.Spec
	// InPlace lists the changes an up applies; Refused those a dry up would refuse.
	InPlace, Refused []provision.Change
	// Life is the remaining life the quote prices; Offers the worker offers the pre-flight weighs.
	Life   time.Duration
	Offers []string
	// Header is what the operation's one header write records (Write); for a read, the header read.
	Header statestore.Header
	Write  bool
	// Phase is where the outcome starts.
	Phase Phase
	// Health: a status checks the APIs. Warned: a keep marks the one expiry warning.
	Health, Warned bool
	// Claim is the spare a new cluster is made of (nil: the cold path); Path says which path an
	// up asking for the pool takes, and why ("": it did not ask).
	Claim *SpareFact
	Path  string
}

// Decide is the one decision of an operation: verb, as in asks it, on the facts read, at now. It
// does no I/O; the operation reads the facts (Need says which it still lacks), carries out the
// plan, and only then reports. Its table (decide_test.go) has a case for every refusal kind.
func Decide(verb Verb, in Intent, f Facts, now time.Time) Decision {
	d := Decision{Verb: verb}
	woke := false
	if f.Doc != nil && wakes(verb, in, f.Doc.Header, now) {
		d.Verb, woke = VerbResume, true
	}
	if d.Verb == VerbUp || d.Verb == VerbResume {
		if r := intentRule(in, woke); r != nil {
			return d.refuse(r)
		}
	}
	if f.Doc != nil {
		h := f.Doc.Header
		d.Plan.Exists, d.Plan.Header, d.Plan.Phase = true, h, Phase(h.Phase)
		if f.State != nil {
			d.Plan.Spec = f.State.Spec
		}
		if r := Owned(h, in); r != nil {
			return d.refuse(r)
		}
		if r := RolledBack(h, in.Witness); r != nil {
			return d.refuse(r)
		}
		if r := in.Precondition.check(verb, h, now); r != nil {
			return d.refuse(r)
		}
	}
	switch d.Verb {
	case VerbUp, VerbResume:
		return decideUp(d, in, f, now, woke)
	case VerbDown:
		return decideDown(d, in, f)
	case VerbPause:
		return decidePause(d, in, f)
	case VerbExtend:
		return decideExtend(d, in, f, now)
	case VerbKeep:
		return decideKeep(d, in, f)
	case VerbStatus, VerbCost, VerbKubeconfig:
		return decideRead(d, in, f)
	}
	d.Err = fmt.Errorf("cluster %q: no operation %q", in.Cluster, verb)
	return d
}

func (d Decision) refuse(r *Refusal) Decision {
	d.Refusal = r
	return d
}

func (d Decision) fail(err error) Decision {
	d.Err = err
	return d
}

// noCluster refuses a verb that needs an existing cluster.
func (d Decision) noCluster(in Intent) Decision {
	return d.refuse(&Refusal{Kind: lifecycle.RefuseNoCluster, Cluster: in.Cluster, Err: fmt.Errorf("%s %q: %w", d.Verb, in.Cluster, ErrNoCluster)})
}

// wakes is the pause window's rule: a command that uses a cluster the schedule paused, inside its
// repository's pause window, from a user who may resume it (commands.Wakes: never a read verb,
// never a user who may not resume), resumes it. A dry run changes nothing, so it wakes nothing.
func wakes(verb Verb, in Intent, h statestore.Header, now time.Time) bool {
	if in.DryRun || Phase(h.Phase) != lifecycle.PhasePaused || !inPauseWindow(in, now) {
		return false
	}
	return commands.Wakes(commands.Verb(verb), in.Permission)
}

func inPauseWindow(in Intent, now time.Time) bool {
	return in.Bounds != nil && in.Bounds.PauseSchedule != nil && in.Bounds.PauseSchedule.Paused(now)
}

// MayWrite says whether verb, as in asks it, may write the cluster's document (and so takes its
// lock before reading it): every verb that changes it, and a read that may wake it (a kubeconfig
// asked inside the pause window by a user who may resume).
func MayWrite(verb Verb, in Intent, now time.Time) bool {
	return verb.writes() || (!in.DryRun && inPauseWindow(in, now) && commands.Wakes(commands.Verb(verb), in.Permission))
}

// intentRule decides what needs no state: a closed issue; a DNS zone asked for explicitly by a
// repository's user (an intent with a number) outside the repository's dns_zones — any write user
// could otherwise add records to every zone the bot's API key reaches; an operator's intent may
// use any zone its key reaches. A wake's resume asks for no setting.
func intentRule(in Intent, woke bool) *Refusal {
	if in.Closed {
		return &Refusal{Kind: lifecycle.RefuseClosed, Cluster: in.Cluster, IsPR: in.Kind == "pull"}
	}
	zone, _ := in.Patch["dns-zone"].(string)
	if woke || zone == "" || in.Number == 0 || in.Bounds == nil || in.Bounds.CheckDNSZone(zone) == nil {
		return nil
	}
	return &Refusal{Kind: lifecycle.RefuseDNSZone, Cluster: in.Cluster, Zone: zone, Zones: in.Bounds.DNSZones}
}

// check is the precondition's rule on the header read under the lock.
func (p Precondition) check(verb Verb, h statestore.Header, now time.Time) *Refusal {
	var why string
	m, _ := MetaOf(h)
	switch {
	case p.Absent:
		why = "another run made it meanwhile (it is " + h.Phase + ")"
	case p.Phase != "" && Phase(h.Phase) != p.Phase:
		why = "phase is now " + h.Phase
	case !p.ExpiredAt.IsZero() && (h.Expires.IsZero() || h.Expires.After(p.ExpiredAt)):
		why = "expiry moved to " + h.Expires.UTC().Format(time.RFC3339) + " by an extend"
	case !p.AsleepAt.IsZero() && m.AwakeUntil.After(p.AsleepAt):
		why = "a command keeps it awake until " + m.AwakeUntil.UTC().Format(time.RFC3339)
	default:
		return nil
	}
	return &Refusal{Kind: lifecycle.RefusePrecondition, Cluster: h.Cluster, Err: fmt.Errorf("%s %s: %w: %s", verb, h.Cluster, ErrPrecondition, why)}
}

// target is base with the patch applied, its image key following its Talos version and
// extensions (the shared image is keyed by schematic and version).
func target(base provision.Spec, p SpecPatch) (provision.Spec, error) {
	s := base
	s.AdminCIDRs = append([]string(nil), base.AdminCIDRs...)
	s.TalosExtensions = append([]string{}, base.TalosExtensions...)
	s.Apply(p)
	s.ImageKey = provision.ImageKeyFor(cluster.SchematicID(s), s.TalosVersion)
	return s, nil
}

// workerOffers are the offers an up may order its worker from, in order: the intent's
// worker_offers, else the spec's offer.
func workerOffers(in Intent, spec provision.Spec) []string {
	if len(in.WorkerOffers) > 0 {
		return in.WorkerOffers
	}
	return []string{spec.BaremetalOffer}
}

// header is h with its labels copied: a plan edits its own header, never the document's.
func header(h statestore.Header) statestore.Header {
	h.Labels = maps.Clone(h.Labels)
	return h
}

// decideUp decides an up: create a cluster, converge it, or resume it (woke: a command's wake,
// which asks for no setting). Its order of refusals: closed and DNS zone (intentRule), owner and
// rollback (Decide), not paused (a resume), an invalid spec, changes that cannot apply in place,
// the quota, the budget.
func decideUp(d Decision, in Intent, f Facts, now time.Time, woke bool) Decision {
	if d = upTarget(d, in, f, now, woke); d.Refusal != nil || d.Err != nil {
		return d
	}
	if d = decideClaim(d, in, f, now); d.Need != 0 || d.Err != nil {
		return d
	}
	p := &d.Plan
	needs := NeedQuote | NeedPreflight
	if p.Claim == nil {
		p.Offers = workerOffers(in, p.Spec)
	} else {
		needs = NeedQuote // a claim creates nothing: no quota, no stock
	}
	if in.DryRun {
		p.Phase = lifecycle.PhasePlanned
	}
	if need := needs &^ f.Read; need != 0 {
		d.Need = need
		return d
	}
	if in.DryRun {
		return d // the dry run's headroom, stock and offer: shown, not refused
	}
	if f.Quote == nil && in.Bounds != nil {
		return d.fail(fmt.Errorf("cluster %q: the budget needs prices and these operations have no quoter", in.Cluster))
	}
	if pf := f.Preflight; pf != nil {
		if pf.Refusal != nil {
			return d.refuse(&Refusal{Kind: lifecycle.RefuseQuota, Cluster: in.Cluster, Err: pf.Refusal})
		}
		if pf.Offer != "" {
			// The worker is not ordered yet: the first offer that fits. The budget weighs the
			// offer asked for (the pre-flight prices each candidate itself).
			p.Spec.BaremetalOffer = pf.Offer
		}
	}
	// A new cluster, and a resume (its daily cost comes back from its floor to the running one),
	// pass the budget under the repository's admission lock.
	if in.Bounds != nil && (p.Create || p.Resume) {
		if f.Read&NeedBudget == 0 {
			d.Need = NeedBudget
			return d
		}
		if r := budgetRule(in, f, p.Claim); r != nil {
			return d.refuse(r)
		}
	}
	if err := EditMeta(&p.Header, func(m *Meta) error { upMeta(m, in, f, *p, now); return nil }); err != nil {
		return d.fail(err)
	}
	p.Write = true
	return d
}

// upTarget decides what an up applies: a new cluster's spec and first header, or the existing
// one's spec converged (its changes in place; a change that cannot apply refuses) and its header
// in the phase of an up or a resume.
func upTarget(d Decision, in Intent, f Facts, now time.Time, woke bool) Decision {
	patch := in.Patch
	if woke {
		patch = nil
	}
	ttl := in.TTL
	if ttl == 0 && in.Bounds != nil {
		ttl = in.Bounds.DefaultTTL
	}
	p := &d.Plan
	p.Phase = lifecycle.PhaseProvisioning
	if f.Doc == nil {
		if d.Verb == VerbResume {
			return d.noCluster(in)
		}
		spec, err := target(in.Spec, patch)
		if err != nil {
			return d.fail(err)
		}
		p.Spec = spec
		if err := spec.Validate(); err != nil {
			return d.refuse(&Refusal{Kind: lifecycle.RefuseInvalid, Cluster: in.Cluster, Err: err})
		}
		p.Create, p.Life = true, ttl
		p.Header = statestore.Header{Cluster: in.Cluster, Repository: in.Repository, Number: in.Number, Kind: in.Kind,
			RequestedBy: in.RequestedBy, Created: now, Phase: string(lifecycle.PhaseProvisioning), Serial: in.Witness}
		if ttl > 0 {
			p.Header.Expires = now.Add(ttl)
		}
		return d
	}
	h := f.Doc.Header
	p.Resume = Paused(h)
	if d.Verb == VerbResume && !p.Resume {
		return d.refuse(&Refusal{Kind: lifecycle.RefuseNotPaused, Cluster: in.Cluster, Phase: Phase(h.Phase)})
	}
	spec, err := target(f.State.Spec, patch)
	if err != nil {
		return d.fail(err)
	}
	p.Spec = spec
	if err := spec.Validate(); err != nil {
		return d.fail(err)
	}
	inPlace, cannot := provision.Diff(f.State.Spec, spec)
	p.InPlace = inPlace
	if len(cannot) > 0 && !in.DryRun {
		return d.refuse(&Refusal{Kind: lifecycle.RefuseChanges, Cluster: in.Cluster, Changes: cannot, InPlace: inPlace})
	}
	p.Refused, p.Life = cannot, ttl
	if !h.Expires.IsZero() {
		p.Life = h.Expires.Sub(now)
	}
	p.Header = header(h)
	p.Header.Phase = string(lifecycle.PhaseProvisioning)
	if p.Resume {
		p.Header.Phase, p.Phase = string(lifecycle.PhaseResuming), lifecycle.PhaseResuming
	}
	return d
}

// upMeta is what an admitted up's one header write records beside the phase.
func upMeta(m *Meta, in Intent, f Facts, p Plan, now time.Time) {
	m.DownFailed = time.Time{}
	if in.StatusComment != 0 {
		m.StickyID = in.StatusComment
	}
	// Recorded as the up starts, under the admission lock for a new cluster or a resume (its
	// machines are billed from now on): the next admission counts it running.
	if f.Quote != nil && !f.Quote.Daily.IsZero() {
		m.DailyCostNanos = f.Quote.Daily.Nanos
	}
	if in.RequesterID != 0 && m.RequesterID == 0 && strings.EqualFold(p.Header.RequestedBy, in.RequestedBy) {
		m.RequesterID = in.RequesterID
	}
	if p.Resume && inPauseWindow(in, now) {
		// Resumed inside a pause window: the schedule leaves it running until the window ends.
		m.AwakeUntil = in.Bounds.PauseSchedule.NextResume(now)
	}
}

// budgetRule is the one budget rule: a new cluster of the intent's repository (or a resume),
// priced f.Quote, must fit the repository's bounds beside the clusters already running (and the
// bucket's parked workers). It fails closed: a budget that cannot be checked refuses.
func budgetRule(in Intent, f Facts, claim *SpareFact) *Refusal {
	if f.Running == nil && f.RunningErr != nil {
		// A budget checked against no cluster at all would let anything through.
		return &Refusal{Kind: lifecycle.RefuseBudget, Cluster: in.Cluster, Err: f.RunningErr}
	}
	running := f.Running
	if claim != nil {
		// The claimed spare, counted idle until now, is the cluster this up makes: once.
		running = slices.DeleteFunc(slices.Clone(running), func(c cost.ClusterCost) bool { return c.Name == claim.Name })
	}
	var be *cost.BudgetError
	if !errors.As(cost.CheckBudget(*in.Bounds, running, *f.Quote), &be) {
		return nil
	}
	r := &Refusal{Kind: lifecycle.RefuseBudget, Cluster: in.Cluster, Budget: be}
	for _, c := range running {
		r.Running = append(r.Running, c.Name)
	}
	return r
}

// decideDown decides a down: a cluster without a document still has what carries its exact tag
// swept (a crash before the first save).
func decideDown(d Decision, in Intent, f Facts) Decision {
	p := &d.Plan
	p.Phase = lifecycle.PhaseDestroying
	if f.Doc == nil {
		if in.IfExists {
			return d.noCluster(in)
		}
		p.Spec = in.Spec
		return d
	}
	p.Header = header(f.Doc.Header)
	p.Header.Phase = string(lifecycle.PhaseDestroying)
	if err := editStatusComment(&p.Header, in); err != nil {
		return d.fail(err)
	}
	p.Write = true
	return d
}

// editStatusComment records the intent's status comment in h.
func editStatusComment(h *statestore.Header, in Intent) error {
	if in.StatusComment == 0 {
		return nil
	}
	return EditMeta(h, func(m *Meta) error { m.StickyID = in.StatusComment; return nil })
}

// decidePause decides a pause: a ready cluster (or one whose pause stopped midway) is paused; a
// paused one is left as it is; any other is refused (RefuseNotReady).
func decidePause(d Decision, in Intent, f Facts) Decision {
	if f.Doc == nil {
		return d.noCluster(in)
	}
	h := f.Doc.Header
	p := &d.Plan
	switch Phase(h.Phase) {
	case lifecycle.PhaseReady, lifecycle.PhasePausing:
	case lifecycle.PhasePaused: // nothing to do; its status says so
		return d
	default:
		return d.refuse(&Refusal{Kind: lifecycle.RefuseNotReady, Cluster: in.Cluster, Phase: Phase(h.Phase)})
	}
	p.Phase = lifecycle.PhasePausing
	p.Header = header(h)
	p.Header.Phase = string(lifecycle.PhasePausing)
	if err := editStatusComment(&p.Header, in); err != nil {
		return d.fail(err)
	}
	p.Write = true
	return d
}

// decideExtend moves the expiry ExtendBy later (from now when it has passed), never beyond now +
// the bounds' max_ttl; a new expiry re-arms the one expiry warning.
func decideExtend(d Decision, in Intent, f Facts, now time.Time) Decision {
	if f.Doc == nil {
		return d.noCluster(in)
	}
	h := header(f.Doc.Header)
	base := h.Expires
	if base.Before(now) {
		base = now
	}
	next := base.Add(in.ExtendBy)
	if life := next.Sub(now); in.Bounds != nil && life > in.Bounds.MaxTTL {
		return d.refuse(&Refusal{Kind: lifecycle.RefuseMaxTTL, Cluster: in.Cluster, Requested: life, Max: in.Bounds.MaxTTL})
	}
	h.Expires = next
	if err := EditMeta(&h, func(m *Meta) error { m.WarnedFor = time.Time{}; return nil }); err != nil {
		return d.fail(err)
	}
	d.Plan.Header, d.Plan.Write = h, true
	return d
}

// WarnedFor says whether the one warning was posted for expiry exp (the header keeps the expiry it
// warned for to the second, so an extend re-arms it).
func WarnedFor(m Meta, exp time.Time) bool {
	return !m.WarnedFor.IsZero() && m.WarnedFor.Equal(exp.UTC().Truncate(time.Second))
}

// decideKeep decides the schedule's marks: the keep label as it saw it, the one warning of the
// expiry it listed (an expiry moved since, by an extend, is warned for by a later run), the
// mark of a warning whose comment failed taken back. Nothing to change: nothing is written.
func decideKeep(d Decision, in Intent, f Facts) Decision {
	if f.Doc == nil {
		return d.noCluster(in)
	}
	h := header(f.Doc.Header)
	m, err := MetaOf(h)
	if err != nil {
		return d.fail(err)
	}
	warn := !in.Warn.IsZero() && h.Expires.Equal(in.Warn) && !WarnedFor(m, in.Warn)
	unwarn := !in.Unwarn.IsZero() && WarnedFor(m, in.Unwarn)
	keep := in.Keep != nil && *in.Keep != m.Keep
	if !warn && !unwarn && !keep {
		return d
	}
	if keep {
		m.Keep = *in.Keep
	}
	switch {
	case warn:
		m.WarnedFor = in.Warn.UTC().Truncate(time.Second)
	case unwarn:
		m.WarnedFor = time.Time{}
	}
	m.Into(&h)
	d.Plan.Header, d.Plan.Write, d.Plan.Warned = h, true, warn
	return d
}

// decideRead decides a read: status and cost answer for a cluster without a document too (none,
// or the default's prices); a kubeconfig needs one.
func decideRead(d Decision, in Intent, f Facts) Decision {
	if f.Doc == nil {
		if d.Verb == VerbKubeconfig {
			return d.noCluster(in)
		}
		d.Plan.Spec = in.Spec
		return d
	}
	d.Plan.Health = d.Verb == VerbStatus && in.Health && !Paused(f.Doc.Header) // a paused cluster has no node to check
	return d
}
