package clusterops

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Run is one operation: it takes the cluster's lock when verb may write (MayWrite; a down asks
// a running up to stop first), reads the state document once, decides (Decide, reading the facts
// the decision asks for: the price, the pre-flight, and, under the repository's admission lock,
// the budget), and only then acts. A dry up decides without the lock and does not act. obs (nil:
// nobody) hears the decision of an operation that acts and its engine's steps, on this goroutine,
// while the work goes on under the lock without waiting for it. A refusal is the outcome's
// Refusal and the returned error.
func (o *Ops) Run(ctx context.Context, verb Verb, in Intent, obs Observer) (*Outcome, error) {
	if obs == nil {
		return o.run(ctx, verb, in, nil)
	}
	q := newQueue()
	var (
		out  *Outcome
		err  error
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		defer q.close()
		out, err = o.run(ctx, verb, in, q)
	}()
	q.deliver(obs)
	<-done
	return out, err
}

// Up creates or converges a cluster (Run of VerbUp, unobserved).
func (o *Ops) Up(ctx context.Context, in Intent) (*Outcome, error) {
	return o.Run(ctx, VerbUp, in, nil)
}

// Down destroys a cluster (Run of VerbDown, unobserved).
func (o *Ops) Down(ctx context.Context, in Intent) (*Outcome, error) {
	return o.Run(ctx, VerbDown, in, nil)
}

// Pause pauses a cluster (Run of VerbPause, unobserved).
func (o *Ops) Pause(ctx context.Context, in Intent) (*Outcome, error) {
	return o.Run(ctx, VerbPause, in, nil)
}

// run reads, decides and acts (see Run); q (nil: none) queues what the observer hears.
func (o *Ops) run(ctx context.Context, verb Verb, in Intent, q *queue) (_ *Outcome, err error) {
	out := &Outcome{Verb: verb, Phase: lifecycle.PhaseFailed}
	if verb == VerbPause && o.BuildPause == nil {
		return failed(out, errors.New("pause: this bot has no pause graph configured (Ops.BuildPause)"))
	}
	now := o.now()
	if MayWrite(verb, in, now) && !in.DryRun {
		held, wait, lerr := o.lockFor(ctx, verb, in)
		if lerr != nil {
			return o.lockRefusal(out, in, lerr, wait)
		}
		defer o.release(ctx, held)
		ctx = held.Context()
		defer func() { err = lockLost(ctx, err) }()
	}
	f, err := o.read(ctx, verb, in)
	if err != nil {
		return failed(out, err)
	}
	ctx = withPoolScope(ctx, in, f.Doc)
	d, admission, err := o.decide(ctx, verb, in, &f, now)
	// The admission lock, when the budget was read under it, is held until the first write.
	releaseAdmission := func() {
		if admission != nil {
			o.release(ctx, admission)
			admission = nil
		}
	}
	defer releaseAdmission()
	out.Verb, out.Exists, out.Header, out.Spec = d.Verb, d.Plan.Exists, d.Plan.Header, d.Plan.Spec
	out.InPlace, out.Refused, out.Preflight, out.Phase = d.Plan.InPlace, d.Plan.Refused, f.Preflight, d.Plan.Phase
	if f.Quote != nil {
		out.Quote = *f.Quote
	}
	switch {
	case err != nil:
		return failed(out, err)
	case d.Refusal != nil:
		if d.Refusal.Kind == lifecycle.RefuseRollback {
			o.log().Error("rolled-back state refused", "cluster", in.Cluster, "serial", d.Refusal.Serial, "witness", d.Refusal.Witness)
		}
		return refused(out, d.Refusal)
	case d.Err != nil:
		return failed(out, d.Err)
	case in.DryRun:
		return o.dry(ctx, out, in)
	}
	switch d.Verb {
	case VerbUp, VerbResume:
		return o.actUp(ctx, in, f, d.Plan, out, q, releaseAdmission)
	case VerbDown:
		return o.actDown(ctx, in, f, d.Plan, out, q)
	case VerbPause:
		return o.actPause(ctx, in, f, d.Plan, out, q)
	case VerbExtend, VerbKeep:
		return o.actHeader(ctx, f, d.Plan, out)
	}
	return o.actRead(ctx, in, f, d.Plan, out)
}

// lockFor takes the cluster's lock for verb, and says how long it waited for it.
func (o *Ops) lockFor(ctx context.Context, verb Verb, in Intent) (*statestore.Held, time.Duration, error) {
	if verb == VerbDown {
		h, err := o.lockForDown(ctx, in)
		return h, max(o.lockWait(), o.cancelWait()), err
	}
	h, err := o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, o.lockWait())
	return h, o.lockWait(), err
}

// read is the operation's one read of the cluster's document (none is a fact, not an error), and
// for a status, of its lock's holder.
func (o *Ops) read(ctx context.Context, verb Verb, in Intent) (Facts, error) {
	var f Facts
	doc, err := o.Store.Get(ctx, in.Cluster)
	switch {
	case errors.Is(err, statestore.ErrNotFound):
	case err != nil:
		return f, err
	default:
		st, err := decodeState(doc)
		if err != nil {
			return f, err
		}
		f.Doc, f.State = doc, st
	}
	if verb == VerbStatus {
		if f.Lock, err = o.Store.ReadLock(ctx, in.Cluster); err != nil {
			return f, fmt.Errorf("status of cluster %q: %w", in.Cluster, err)
		}
	}
	return f, nil
}

// decide calls Decide until it needs nothing more, reading what it asks for: the plan's price
// and pre-flight, then the budget's other clusters under the repository's admission lock, which
// it returns held (the first write of the cluster's document must happen under it, so that the
// next admission counts this cluster).
func (o *Ops) decide(ctx context.Context, verb Verb, in Intent, f *Facts, now time.Time) (Decision, *statestore.Held, error) {
	var admission *statestore.Held
	for {
		d := Decide(verb, in, *f, now)
		if d.Need == 0 || d.Refusal != nil || d.Err != nil {
			return d, admission, nil
		}
		if d.Need&NeedQuote != 0 {
			f.Read |= NeedQuote
			if o.Quoter != nil {
				q, err := Quote(ctx, o.Quoter, d.Plan.Spec, d.Plan.Life, true)
				if err != nil {
					return d, admission, fmt.Errorf("price cluster %q: %w", in.Cluster, err)
				}
				f.Quote = &q
			}
		}
		if d.Need&NeedPreflight != 0 {
			f.Read |= NeedPreflight
			if o.Preflight != nil {
				// Quotas and stock, before anything is written or created.
				pf, err := o.Preflight(ctx, d.Plan.Spec, f.State, preflight.Ask{Offers: d.Plan.Offers, Quotas: in.Quotas})
				if err != nil {
					return d, admission, fmt.Errorf("pre-flight of %q (nothing was created): %w", in.Cluster, err)
				}
				f.Preflight = &pf
			}
		}
		if d.Need&NeedBudget != 0 {
			h, err := o.acquire(ctx, admissionLock(in.Repository), Intent{RunID: in.RunID, RequestedBy: in.RequestedBy,
				Command: "admit " + in.Cluster}, o.lockWait())
			if err != nil {
				return d, nil, fmt.Errorf("admit cluster %q: take the admission lock of %s: %w", in.Cluster, in.Repository, err)
			}
			admission = h
			f.Read |= NeedBudget
			f.Running, f.RunningErr = o.runningCosts(h.Context(), in)
		}
	}
}

// runningCosts lists the repository's other clusters and their daily cost, from the header label
// when recorded, else priced from their decrypted spec, and the bucket's parked workers. An
// object that cannot be read counts at worst (see badCosts); an error with nothing listed is the
// budget's refusal.
func (o *Ops) runningCosts(ctx context.Context, in Intent) ([]cost.ClusterCost, error) {
	// List returns the readable headers along with an error naming the unreadable objects: those
	// still count, as clusters of unknown cost, rather than not at all.
	headers, err := o.Store.List(ctx)
	if err != nil && len(headers) == 0 {
		o.log().Error("budget: could not list the running clusters", "err", err)
		return nil, err
	}
	out := []cost.ClusterCost{}
	if err != nil {
		o.log().Warn("budget: some cluster states are unreadable; each counts as one cluster of unknown cost", "err", err)
		out = append(out, badCosts(err, in.Bounds.MaxDailyNanoEUR)...)
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

// dry is a dry up's answer: the decision, and what a new cluster's graph would create.
func (o *Ops) dry(ctx context.Context, out *Outcome, in Intent) (*Outcome, error) {
	out.Phase = lifecycle.PhasePlanned
	if out.Exists {
		return out, nil
	}
	out.ETA = o.estimate(ctx, out)
	g, err := o.graph(out.Spec)
	if err != nil {
		return failed(out, fmt.Errorf("build the plan of %q: %w", in.Cluster, err))
	}
	for _, name := range g.Names() {
		n, _ := g.Node(name)
		out.Plan = append(out.Plan, PlanNode{Kind: n.Kind, Name: name})
	}
	return out, nil
}

// actHeader writes the plan's header, the one write of an extend or a keep (none when there is
// nothing to record).
func (o *Ops) actHeader(ctx context.Context, f Facts, p Plan, out *Outcome) (*Outcome, error) {
	out.Phase, out.Warned = Phase(p.Header.Phase), p.Warned
	if !p.Write {
		return out, nil
	}
	f.Doc.Header = p.Header
	if err := o.Store.Put(ctx, f.Doc); err != nil {
		return failed(out, err)
	}
	out.Header = f.Doc.Header
	return out, nil
}

// actRead answers a read: a status's lock holder and health, a kubeconfig's bytes. A cost's prices
// are its caller's to choose (Quoter and lifetime).
func (o *Ops) actRead(ctx context.Context, in Intent, f Facts, p Plan, out *Outcome) (*Outcome, error) {
	out.State = f.State
	if !p.Exists {
		out.State = nil
		return out, nil
	}
	switch out.Verb {
	case VerbStatus:
		s, err := o.status(ctx, f, p.Health)
		if err != nil {
			return failed(out, err)
		}
		out.Status = s
	case VerbKubeconfig:
		kc, err := o.Kubeconfig(ctx, in.Cluster)
		if err != nil {
			return failed(out, err)
		}
		out.Kubeconfig = kc
	}
	return out, nil
}
