// Package clusterops owns every decision about a cluster's life and runs the operations on it.
// Up, Down, Extend and Pause take an Intent (who asks, for which repository and number, with
// which overrides, within which bounds) and return an Outcome with a typed Phase and, when
// nothing was done, a typed Refusal (lifecycle.Kind): closed issue, DNS zone, ownership (Owned),
// rollback (RolledBack), invalid spec, changes, budget and admission, quota (the pre-flight),
// lock, max_ttl. An operation takes the cluster's one lock (statestore.Hold), reads the state
// document once, writes its header once when admitted, builds the graph, runs the provisioning
// engine with a saver that writes the whole document after every step, and keeps the kubeconfig
// as its own encrypted object. It knows nothing of GitHub: callers translate events into intents
// and render outcomes.
package clusterops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// PublicKubeconfigDir is where the kubeconfig ciphertexts handed to a cluster's users live
// (public objects: encrypted to each user's SSH keys); Down removes them with the cluster.
func PublicKubeconfigDir(cluster string) string { return "kubeconfig/" + cluster }

const (
	artifactKubeconfig = "kubeconfig"
	artifactCancel     = "cancel"
)

// ErrNoCluster means no state document exists for the cluster.
var ErrNoCluster = errors.New("no such cluster")

// ErrPrecondition means a Down's precondition no longer held under the lock: nothing was done.
var ErrPrecondition = errors.New("precondition no longer holds")

// Builder adds a spec's nodes to a graph (cluster.Build with its outside parties bound).
type Builder func(g *provision.Graph, spec provision.Spec) error

// Preflighter decides whether spec fits, given what st already has, and which of offers (in
// order) the worker takes.
type Preflighter func(ctx context.Context, spec provision.Spec, st *provision.State, ask preflight.Ask) (preflight.Result, error)

// PauseBuilder adds a spec's pause graph (cluster.BuildPause with its outside parties bound);
// releaseIPs makes it delete the reserved IPs too.
type PauseBuilder func(g *provision.Graph, spec provision.Spec, releaseIPs bool) error

// Ops runs operations. Store and Build are required.
type Ops struct {
	Store *statestore.Store
	Build Builder
	// BuildPause adds a cluster's pause graph (cluster.BuildPause with the same parties as
	// Build); nil: Pause refuses.
	BuildPause PauseBuilder
	Engine     provision.Options // Progress is set per request
	Now        func() time.Time
	Log        *slog.Logger
	// LockLease is the lease of a cluster's lock, renewed at a third of it (default settings.DefaultLockLease).
	LockLease time.Duration
	// LockWait bounds the wait for a busy lock before giving up naming its holder (default settings.DefaultLockWait).
	LockWait time.Duration
	// CancelWait bounds a down's wait for the run it asked to stop (default 50 min: the longest
	// step of an up, the worker's rescue write, is bounded at 45).
	CancelWait time.Duration
	// RunnerCIDR is where this process runs (POC_RUNNER_CIDR, as cluster.Config has it): a status
	// checked from outside a cluster's admin CIDRs says that the security group is why its
	// checks fail.
	RunnerCIDR string
	// Quoter prices specs (the budget, an up's quote); Pool, when set, is the bucket's parked
	// workers, billed and so counted by the budget.
	Quoter *cost.Quoter
	Pool   Parked

	// Preflight, when set, weighs an up against the organization's quotas and the stock of the
	// worker offers before anything is written or created (see Up); cmd/bot binds it to
	// cluster.Preflight.
	Preflight Preflighter

	// saveFault, set by tests (export_test.go), runs before every state save of an operation:
	// an error is a crash from that save on.
	saveFault func() error
}

func (o *Ops) now() time.Time {
	if o.Now != nil {
		return o.Now().UTC()
	}
	return time.Now().UTC()
}

func (o *Ops) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.Default()
}

func (o *Ops) lease() time.Duration {
	return settings.DurationOr(o.LockLease, settings.DefaultLockLease)
}

// Lease is the lease of every lock these Ops take (LockLease or its default). Other packages
// that lock a cluster themselves (the reaper's orphan sweep) use it too, so that one setting
// says when a dead run's lock lapses.
func (o *Ops) Lease() time.Duration { return o.lease() }

func (o *Ops) cancelWait() time.Duration { return settings.DurationOr(o.CancelWait, 50*time.Minute) }

// LockWaitBound is how long an operation waits for a cluster's lock that another run holds
// (LockWait or its default) before it is refused.
func (o *Ops) LockWaitBound() time.Duration { return o.lockWait() }

func (o *Ops) lockWait() time.Duration {
	return settings.DurationOr(o.LockWait, settings.DefaultLockWait)
}

// acquire holds the lock key for in (statestore.Hold: its context ends when the lock is lost;
// the work done under it must use it), waiting up to wait while it is busy.
func (o *Ops) acquire(ctx context.Context, key statestore.LockKey, in Intent, wait time.Duration) (*statestore.Held, error) {
	info := statestore.LockInfo{RunID: in.RunID, Actor: in.RequestedBy, Command: in.Command}
	return o.Store.Hold(ctx, key, info, o.lease(), statestore.WaitUpTo(wait))
}

func (o *Ops) release(ctx context.Context, h *statestore.Held) {
	if err := h.Release(ctx); err != nil {
		o.log().Error("release a lock", "err", err)
	}
}

// Load reads a cluster's document and decrypts its state.
func (o *Ops) Load(ctx context.Context, clusterName string) (*statestore.Document, *provision.State, error) {
	doc, err := o.Store.Get(ctx, clusterName)
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, nil, fmt.Errorf("cluster %q: %w (see `bot state ls`)", clusterName, ErrNoCluster)
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := decodeState(doc)
	if err != nil {
		return nil, nil, err
	}
	return doc, st, nil
}

func decodeState(doc *statestore.Document) (*provision.State, error) {
	var st provision.State
	if err := json.Unmarshal(doc.Body, &st); err != nil {
		return nil, fmt.Errorf("state of cluster %q does not decode: %w", doc.Header.Cluster, err)
	}
	if st.Version != provision.StateVersion {
		return nil, fmt.Errorf("state of cluster %q has schema version %d; this bot reads %d: use a matching bot version",
			doc.Header.Cluster, st.Version, provision.StateVersion)
	}
	fresh := st.Clone() // initialises the maps
	return fresh, nil
}

// docSaver writes the whole document after every engine step, conditional on the version it last
// wrote, and answers the engine's between-steps cancel question.
type docSaver struct {
	store   *statestore.Store
	cluster string // immutable copy: CancelRequested runs beside Save
	mu      sync.Mutex
	doc     *statestore.Document
	fault   func() error // a test's crash: every save from some point on fails (nil: none)
}

func (s *docSaver) Save(ctx context.Context, st *provision.State) error {
	if s.fault != nil {
		if err := s.fault(); err != nil {
			return err
		}
	}
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doc.Body = body
	return s.store.Put(ctx, s.doc)
}

// setPhase writes the header's phase and metadata in one write, with st as the body when given
// (an up's first write of a document carries both).
func (s *docSaver) setPhase(ctx context.Context, phase Phase, st *provision.State, edit func(*Meta)) error {
	var body []byte
	if st != nil {
		if s.fault != nil { // a save of the body, as Save
			if err := s.fault(); err != nil {
				return err
			}
		}
		var err error
		if body, err = json.Marshal(st); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if body != nil {
		s.doc.Body = body
	}
	s.doc.Header.Phase = string(phase)
	if edit != nil {
		if err := EditMeta(&s.doc.Header, func(m *Meta) error { edit(m); return nil }); err != nil {
			return err
		}
	}
	return s.store.Put(ctx, s.doc)
}

func (s *docSaver) CancelRequested(ctx context.Context) (bool, error) {
	_, err := s.store.GetArtifact(ctx, s.cluster, artifactCancel)
	if errors.Is(err, statestore.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Up creates or converges a cluster. It decides, in this order, and refuses with the first that
// fails: the issue is open and the DNS zone allowed (no state needed); then, under the cluster's
// one lock and from one read of its document: the cluster is the intent's (Owned), its state
// not rolled back (RolledBack), the spec valid and its changes possible in place; a new
// cluster fits the budget, checked again under the repository's admission lock right before its
// first document is written, so that concurrent ups cannot all pass it. Once admitted it calls
// Started, writes the header once (phase, status comment id, daily cost, requester id), runs the
// engine and records the final phase. A dry intent stops after the decisions, without the lock.
func (o *Ops) Up(ctx context.Context, in Intent) (_ *Outcome, err error) {
	out := &Outcome{Phase: lifecycle.PhaseProvisioning}
	if r := preflightIntent(in); r != nil {
		return refused(out, r)
	}
	if in.TTL == 0 && in.Bounds != nil {
		in.TTL = in.Bounds.DefaultTTL
	}
	if in.DryRun {
		return o.plan(ctx, in, out)
	}
	h, err := o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, o.lockWait())
	if err != nil {
		return o.lockRefusal(out, in, err, o.lockWait())
	}
	defer o.release(ctx, h)
	ctx = h.Context()
	defer func() { err = lockLost(ctx, err) }()
	// A cancel left by a down that found nothing running is stale; one that cannot be removed
	// would stop this up at its first step.
	if err := o.Store.DeleteArtifact(ctx, in.Cluster, artifactCancel); err != nil {
		return failed(out, fmt.Errorf("clear a stale cancel request of %q: %w", in.Cluster, err))
	}
	doc, st, err := o.decide(ctx, in, out)
	if err != nil || out.Refusal != nil {
		return out, err
	}
	saver := &docSaver{store: o.Store, cluster: in.Cluster, doc: doc, fault: o.saveFault}
	// An up of a paused cluster is its resume: the machines come back, etcd from the snapshot.
	resuming := out.Exists && Paused(doc.Header)
	phase := lifecycle.PhaseProvisioning
	if resuming {
		phase = lifecycle.PhaseResuming
	}
	start := func(ctx context.Context) error {
		var sticky int64
		if in.Started != nil {
			sticky = in.Started(ctx, out)
		}
		return saver.setPhase(ctx, phase, st, func(m *Meta) {
			m.DownFailed = time.Time{}
			if sticky != 0 {
				m.StickyID = sticky
			}
			// A resume records the running cost as it starts, under the admission lock (its
			// machines are billed from now on): the next admission counts it running.
			if !out.Quote.Daily.IsZero() {
				m.DailyCostNanos = out.Quote.Daily.Nanos
			}
			if in.RequesterID != 0 && m.RequesterID == 0 && strings.EqualFold(saver.doc.Header.RequestedBy, in.RequestedBy) {
				m.RequesterID = in.RequesterID
			}
		})
	}
	switch {
	case out.Created:
		err = o.admit(ctx, in, out, start) // the document exists before anything is created
	case resuming:
		// A resume brings a paused cluster's daily cost back from its floor to the running one:
		// it passes the budget as a new cluster does, under the same admission lock (the cluster
		// itself is left out of the count).
		err = o.admit(ctx, in, out, start)
	default:
		err = start(ctx)
	}
	if err != nil || out.Refusal != nil {
		return out, err
	}
	out.Header = saver.doc.Header
	g, engine, err := o.prepare(st, in)
	if err != nil {
		return failed(out, err)
	}
	upErr := engine.Up(ctx, g, st, saver)
	// The engine saved every step through saver; read back what it saved.
	final, derr := decodeState(saver.doc)
	if derr != nil {
		return failed(out, derr)
	}
	out.State = final
	// Write the outcome even when ctx is done (a cancelled up still records its phase).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if upErr != nil {
		return o.upFailed(wctx, in, out, upErr, g, engine, saver, resuming)
	}
	return o.upReady(wctx, in, out, saver, resuming)
}

// upFailed records a failed (or cancelled) up: the runner's temporary admin rule closed, the
// phase failed (resuming for a resume, which an up or resume continues).
func (o *Ops) upFailed(wctx context.Context, in Intent, out *Outcome, upErr error, g *provision.Graph, engine *provision.Engine,
	saver *docSaver, resuming bool) (*Outcome, error) {
	if f := o.closeAdminAfterFailure(wctx, g, engine, out.State, saver, in.Cluster); f != nil {
		out.State = f
	}
	failedPhase := lifecycle.PhaseFailed
	if resuming {
		failedPhase = lifecycle.PhaseResuming
	}
	if err := saver.setPhase(wctx, failedPhase, nil, nil); err != nil {
		o.log().Error("record the failed phase", "cluster", in.Cluster, "err", err)
	}
	out.Header, out.Phase = saver.doc.Header, lifecycle.PhaseFailed
	if errors.Is(upErr, provision.ErrCancelled) {
		out.Phase = lifecycle.PhaseCancelled
	}
	return out, upErr
}

// upReady records a finished up: the resume's snapshot cleared, the kubeconfig artifact, the
// header's ready phase (and, for a resume, the lifetime it had left).
func (o *Ops) upReady(wctx context.Context, in Intent, out *Outcome, saver *docSaver, resuming bool) (*Outcome, error) {
	final := out.State
	if err := o.finishResume(wctx, saver, final); err != nil {
		return failed(out, err)
	}
	if kc, ok := final.Secrets[cluster.SecretKubeconfig]; ok {
		loc, err := o.Store.PutArtifact(wctx, in.Cluster, artifactKubeconfig, kc)
		if err != nil {
			return failed(out, fmt.Errorf("store the kubeconfig of %q: %w", in.Cluster, err))
		}
		out.KubeconfigLocation = loc
	}
	if err := saver.setPhase(wctx, lifecycle.PhaseReady, nil, func(m *Meta) {
		if out.KubeconfigLocation != "" {
			m.Kubeconfig = out.KubeconfigLocation
		}
		if resuming && m.PausedTTLLeft > 0 {
			// The running lifetime left at the pause, from now: the pause stopped its clock.
			saver.doc.Header.Expires = o.now().Add(m.PausedTTLLeft)
			m.PausedTTLLeft = 0
		}
	}); err != nil {
		return failed(out, err)
	}
	out.Header, out.Phase = saver.doc.Header, lifecycle.PhaseReady
	return out, nil
}

// lockLost names the lost lock in the error of work cut short by its loss (the work's own error
// says only "context canceled").
func lockLost(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// failed ends an operation that failed.
func failed(out *Outcome, err error) (*Outcome, error) {
	out.Phase = lifecycle.PhaseFailed
	return out, err
}

// decide reads the cluster's document once and makes the up's decisions on it (see Up): it
// returns the document to write (a new one for a new cluster) and the state to converge, or
// leaves a refusal in out.
func (o *Ops) decide(ctx context.Context, in Intent, out *Outcome) (*statestore.Document, *provision.State, error) {
	doc, err := o.Store.Get(ctx, in.Cluster)
	var st *provision.State
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		want := o.want(in, in.Spec)
		if err := want.Validate(); err != nil {
			_, rerr := refused(out, &Refusal{Kind: lifecycle.RefuseInvalid, Cluster: in.Cluster, Err: err})
			return nil, nil, rerr
		}
		if st, err = provision.NewState(in.Cluster, want); err != nil {
			_, err = failed(out, err)
			return nil, nil, err
		}
		// A status comment left by an earlier life of the cluster may record a higher serial (its
		// down could not edit it): a new document continues above it, so that the new life is
		// never mistaken for a rolled-back state.
		var serial int64
		if in.Witness != nil {
			if w, werr := in.Witness(ctx); werr == nil {
				serial = w
			}
		}
		now := o.now()
		doc = &statestore.Document{Header: statestore.Header{
			Cluster: in.Cluster, Repository: in.Repository, Number: in.Number, Kind: in.Kind,
			RequestedBy: in.RequestedBy, Created: now, Phase: string(lifecycle.PhaseProvisioning), Serial: serial,
		}}
		if in.TTL > 0 {
			doc.Header.Expires = now.Add(in.TTL)
		}
		out.Created = true
	case err != nil:
		_, err = failed(out, err)
		return nil, nil, err
	default:
		out.Exists = true
		if r := o.admissible(ctx, in, doc.Header); r != nil {
			_, rerr := refused(out, r)
			return nil, nil, rerr
		}
		if in.Precondition != nil {
			if perr := in.Precondition(doc.Header); perr != nil {
				_, err = failed(out, fmt.Errorf("up %s: %w: %w", in.Cluster, ErrPrecondition, perr))
				return nil, nil, err
			}
		}
		if st, err = decodeState(doc); err != nil {
			_, err = failed(out, err)
			return nil, nil, err
		}
		want := o.want(in, st.Spec)
		if err := want.Validate(); err != nil {
			_, err = failed(out, err)
			return nil, nil, err
		}
		inPlace, cannot := provision.Diff(st.Spec, want)
		if len(cannot) > 0 {
			out.Spec = want
			_, rerr := refused(out, &Refusal{Kind: lifecycle.RefuseChanges, Cluster: in.Cluster, Changes: cannot, InPlace: inPlace})
			return nil, nil, rerr
		}
		out.InPlace = inPlace
		st.Spec = want
	}
	out.Header, out.Spec = doc.Header, st.Spec
	if o.Quoter != nil {
		life := in.TTL
		if out.Exists && !doc.Header.Expires.IsZero() {
			life = doc.Header.Expires.Sub(o.now())
		}
		if out.Quote, err = Quote(ctx, o.Quoter, st.Spec, life, true); err != nil {
			_, err = failed(out, fmt.Errorf("price cluster %q: %w", in.Cluster, err))
			return nil, nil, err
		}
	} else if in.Bounds != nil {
		_, err = failed(out, fmt.Errorf("cluster %q: the budget needs prices and these operations have no quoter", in.Cluster))
		return nil, nil, err
	}
	if o.Preflight != nil {
		// Quotas and stock, before anything is written or created.
		pf, err := o.Preflight(ctx, st.Spec, st, preflightAsk(in, st.Spec))
		if err != nil {
			_, err = failed(out, fmt.Errorf("pre-flight of %q (nothing was created): %w", in.Cluster, err))
			return nil, nil, err
		}
		out.Preflight = &pf
		if pf.Refusal != nil {
			_, rerr := refused(out, &Refusal{Kind: lifecycle.RefuseQuota, Cluster: in.Cluster, Err: pf.Refusal})
			return nil, nil, rerr
		}
		if pf.Offer != "" {
			// The worker is not ordered yet: the first offer that fits. The budget weighs the
			// offer asked for (the pre-flight prices each candidate itself).
			st.Spec.BaremetalOffer = pf.Offer
			out.Spec = st.Spec
		}
	}
	return doc, st, nil
}

// admissible applies the rules every operation on an existing cluster obeys: it is the intent's
// (Owned), and its state is not older than its witness (RolledBack). A witness that cannot be
// read fails closed.
// admitExisting records an existing cluster's header in out and applies the rules of acting on
// it: admissible (owner, rollback), then the intent's precondition. It returns the refused or
// failed outcome, or nil when verb may go on.
func (o *Ops) admitExisting(ctx context.Context, verb string, in Intent, out *Outcome, h statestore.Header) (*Outcome, error) {
	out.Exists, out.Header = true, h
	if r := o.admissible(ctx, in, h); r != nil {
		return refused(out, r)
	}
	if in.Precondition != nil {
		if perr := in.Precondition(h); perr != nil {
			return failed(out, fmt.Errorf("%s %s: %w: %w", verb, in.Cluster, ErrPrecondition, perr))
		}
	}
	return nil, nil
}

func (o *Ops) admissible(ctx context.Context, in Intent, h statestore.Header) *Refusal {
	if r := Owned(h, in); r != nil {
		return r
	}
	if in.Witness == nil {
		return nil
	}
	w, err := in.Witness(ctx)
	if err != nil {
		return &Refusal{Kind: lifecycle.RefuseRollback, Cluster: in.Cluster, Serial: h.Serial, Err: err}
	}
	if r := RolledBack(h, w); r != nil {
		o.log().Error("rolled-back state refused", "cluster", in.Cluster, "serial", h.Serial, "witness", w)
		return r
	}
	return nil
}

// lockRefusal turns a busy lock into a refusal; any other error is a failure.
func (o *Ops) lockRefusal(out *Outcome, in Intent, err error, waited time.Duration) (*Outcome, error) {
	var le *statestore.LockedError
	if errors.As(err, &le) {
		return refused(out, &Refusal{Kind: lifecycle.RefuseLocked, Cluster: in.Cluster, Holder: le.Holder, Waited: waited, Err: err})
	}
	return failed(out, err)
}

// closeAdminAfterFailure removes the runner's temporary admin rule that a failed up left in the
// security group (admin-access-close never ran: nothing starts after a failure): the rule is for
// the run only, failures included. It returns the state saved after, or nil when nothing ran.
func (o *Ops) closeAdminAfterFailure(ctx context.Context, g *provision.Graph, engine *provision.Engine, st *provision.State, saver *docSaver, name string) *provision.State {
	if st == nil || st.Outputs[scaleway.OutAdminTemporary] == "" {
		return nil
	}
	if err := runAdminClose(ctx, g, engine, st, saver); err != nil {
		o.log().Error("close the runner's temporary admin rule after a failed up: it stays until the next run, the reaper or the down", "cluster", name, "err", err)
	}
	final, err := decodeState(saver.doc)
	if err != nil {
		return nil
	}
	return final
}

// runAdminClose runs the graph's admin-access-close alone on st.
func runAdminClose(ctx context.Context, g *provision.Graph, engine *provision.Engine, st *provision.State, saver provision.Saver) error {
	n, ok := g.Node(cluster.NodeAdminClose)
	if !ok {
		return fmt.Errorf("the graph has no %s step", cluster.NodeAdminClose)
	}
	n.Needs = nil
	g2 := provision.NewGraph()
	if err := g2.Add(n); err != nil {
		return err
	}
	return engine.Up(ctx, g2, st, saver)
}

// CloseRunnerAccess removes the runner's temporary admin rule that a killed run left behind (a
// process killed mid-run runs neither admin-access-close nor the close after a failure): the
// reaper calls it for every cluster it spares. It reads the state without the lock first, and
// takes the lock (one try: a live run holds it and closes its own rule) only when the state
// records a temporary CIDR. It returns the CIDR closed ("" when there was none).
func (o *Ops) CloseRunnerAccess(ctx context.Context, req Intent) (string, error) {
	_, st, err := o.Load(ctx, req.Cluster)
	if err != nil {
		return "", err
	}
	if st.Outputs[scaleway.OutAdminTemporary] == "" {
		return "", nil
	}
	h, err := o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, o.lockWait())
	if err != nil {
		return "", fmt.Errorf("close the runner access %s left on cluster %q: %w", st.Outputs[scaleway.OutAdminTemporary], req.Cluster, err)
	}
	defer o.release(ctx, h)
	ctx = h.Context()
	doc, err := o.Store.Get(ctx, req.Cluster)
	if err != nil {
		return "", err
	}
	if st, err = decodeState(doc); err != nil {
		return "", err
	}
	cidr := st.Outputs[scaleway.OutAdminTemporary]
	if cidr == "" {
		return "", nil // closed by a run between the read and the lock
	}
	g, engine, err := o.prepare(st, req)
	if err != nil {
		return "", err
	}
	saver := &docSaver{store: o.Store, cluster: req.Cluster, doc: doc, fault: o.saveFault}
	if err := runAdminClose(ctx, g, engine, st, noCancel{saver}); err != nil {
		return "", fmt.Errorf("close the runner access %s left on cluster %q (retried by the next reaper run or up): %w", cidr, req.Cluster, err)
	}
	return cidr, nil
}

// admit writes a new cluster's first document through write. With bounds, the budget check and
// the write happen under the repository's admission lock: the next up of the repository lists the
// clusters only once this one is among them, so a check-then-create race cannot let two ups
// through a budget that has room for one. A refusal is left in out, with nothing written.
func (o *Ops) admit(ctx context.Context, in Intent, out *Outcome, write func(context.Context) error) error {
	if in.Bounds == nil {
		return write(ctx)
	}
	h, err := o.acquire(ctx, admissionLock(in.Repository), Intent{RunID: in.RunID, RequestedBy: in.RequestedBy,
		Command: "admit " + in.Cluster}, o.lockWait())
	if err != nil {
		return fmt.Errorf("admit cluster %q: take the admission lock of %s: %w", in.Cluster, in.Repository, err)
	}
	defer o.release(ctx, h)
	if r := o.budget(h.Context(), in, out.Quote); r != nil {
		_, err := refused(out, r)
		return err
	}
	return write(ctx) // the operation's context: what Started begins outlives the admission lock
}

// admissionLock is the lock that serialises the admission of new clusters of one repository,
// named by the repository (GitHub names are case-insensitive).
func admissionLock(repository string) statestore.LockKey {
	return statestore.DigestLock(statestore.LockAdmission, strings.ToLower(repository))
}

// preflightAsk is what the pre-flight weighs beside the spec: the offers an up may order its
// worker from, in order (the intent's worker_offers, else the spec's offer), and the
// repository's quotas:.
func preflightAsk(in Intent, spec provision.Spec) preflight.Ask {
	ask := preflight.Ask{Offers: []string{spec.BaremetalOffer}, Quotas: in.Quotas}
	if len(in.WorkerOffers) > 0 {
		ask.Offers = in.WorkerOffers
	}
	return ask
}

// want is base with the intent's overrides, its image key following its Talos version and
// extensions (the shared image is keyed by schematic and version).
func (o *Ops) want(in Intent, base provision.Spec) provision.Spec {
	s := base
	s.AdminCIDRs = append([]string(nil), base.AdminCIDRs...)
	s.TalosExtensions = append([]string{}, base.TalosExtensions...)
	if in.Override != nil {
		in.Override(&s)
	}
	s.ImageKey = provision.ImageKeyFor(cluster.SchematicID(s), s.TalosVersion)
	return s
}

// plan is a dry up: the same decisions from one read, without the lock, nothing written: the
// spec it would apply, whether the cluster exists, the changes (refused ones included), the
// price, the budget's verdict for a new cluster, and what it would create.
func (o *Ops) plan(ctx context.Context, in Intent, out *Outcome) (*Outcome, error) {
	out.Phase = lifecycle.PhasePlanned
	doc, err := o.Store.Get(ctx, in.Cluster)
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		out.Spec = o.want(in, in.Spec)
		if err := out.Spec.Validate(); err != nil {
			return refused(out, &Refusal{Kind: lifecycle.RefuseInvalid, Cluster: in.Cluster, Err: err})
		}
		g := provision.NewGraph()
		if err := o.Build(g, out.Spec); err != nil {
			return failed(out, fmt.Errorf("build the plan of %q: %w", in.Cluster, err))
		}
		for _, name := range g.Names() {
			n, _ := g.Node(name)
			out.Plan = append(out.Plan, PlanNode{Kind: n.Kind, Name: name})
		}
	case err != nil:
		return failed(out, err)
	default:
		out.Exists, out.Header = true, doc.Header
		if r := o.admissible(ctx, in, doc.Header); r != nil {
			return refused(out, r)
		}
		st, err := decodeState(doc)
		if err != nil {
			return failed(out, err)
		}
		out.Spec = o.want(in, st.Spec)
		out.InPlace, out.Refused = provision.Diff(st.Spec, out.Spec)
		if err := out.Spec.Validate(); err != nil {
			return failed(out, err)
		}
	}
	if o.Preflight != nil { // the dry run's headroom, stock and offer: shown, not refused
		var st *provision.State
		if doc != nil {
			st, _ = decodeState(doc)
		}
		pf, err := o.Preflight(ctx, out.Spec, st, preflightAsk(in, out.Spec))
		if err != nil {
			return failed(out, fmt.Errorf("pre-flight (nothing was created): %w", err))
		}
		out.Preflight = &pf
	}
	if o.Quoter == nil {
		return out, nil
	}
	life := in.TTL
	if out.Exists && !out.Header.Expires.IsZero() {
		life = out.Header.Expires.Sub(o.now())
	}
	if out.Quote, err = Quote(ctx, o.Quoter, out.Spec, life, true); err != nil {
		return failed(out, fmt.Errorf("price cluster %q: %w", in.Cluster, err))
	}
	return out, nil
}

// lockForDown takes the cluster's lock for a down. When an up holds it, it records a cancel
// request that the up honours at its next step and waits for the lock (taking the request back
// when nobody takes over); with NoCancel (the reaper) a busy lock is given up at once.
func (o *Ops) lockForDown(ctx context.Context, in Intent) (*statestore.Held, error) {
	h, err := o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, 0)
	var locked *statestore.LockedError
	if !errors.As(err, &locked) || in.NoCancel {
		return h, err
	}
	if _, perr := o.Store.PutArtifact(ctx, in.Cluster, artifactCancel, []byte(in.RequestedBy)); perr != nil {
		return nil, fmt.Errorf("ask the running %s to stop: %w", locked.Holder.Command, perr)
	}
	o.log().Info("asked the run holding the lock to stop", "cluster", in.Cluster, "holder", locked.Holder.Command, "run", locked.Holder.RunID)
	// The holder stops at its next step, and one step (an Elastic Metal delivery, the rescue
	// write) can last longer than the usual wait: having stopped it, this down must take over.
	h, err = o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, max(o.lockWait(), o.cancelWait()))
	if err != nil {
		// Nobody takes over: take the request back, or the up would stop for nothing.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if derr := o.Store.DeleteArtifact(dctx, in.Cluster, artifactCancel); derr != nil {
			o.log().Error("take back the cancel request", "cluster", in.Cluster, "err", derr)
		}
		cancel()
	}
	return h, err
}

// Down destroys a cluster. When an up holds the lock, Down records a cancel request that the up
// honours at its next step, then waits for the lock. Under the lock it reads the document once,
// applies the rules of an existing cluster (Owned, RolledBack, the intent's precondition), calls
// Started, writes the destroying phase once, and runs the engine's teardown; a cluster without a
// document still has what carries its exact tag swept.
func (o *Ops) Down(ctx context.Context, in Intent) (*Outcome, error) {
	out := &Outcome{Phase: lifecycle.PhaseDestroying}
	h, err := o.lockForDown(ctx, in)
	if err != nil {
		return o.lockRefusal(out, in, err, max(o.lockWait(), o.cancelWait()))
	}
	defer o.release(ctx, h)
	ctx = cluster.WithParkFor(h.Context(), in.ParkFor)

	doc, err := o.Store.Get(ctx, in.Cluster)
	var st *provision.State
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		// No state: still sweep whatever carries the cluster's exact tag (a crash before the first save).
		if st, err = provision.NewState(in.Cluster, in.Spec); err != nil {
			return failed(out, err)
		}
		doc = nil
	case err != nil:
		return failed(out, err)
	default:
		if res, err := o.admitExisting(ctx, "down", in, out, doc.Header); res != nil {
			return res, err
		}
		if st, err = decodeState(doc); err != nil {
			return failed(out, err)
		}
	}
	out.Spec = st.Spec
	var sticky int64
	if in.Started != nil {
		sticky = in.Started(ctx, out)
	}
	var saver provision.Saver = provision.NewMemorySaver()
	var ds *docSaver
	if doc != nil {
		ds = &docSaver{store: o.Store, cluster: in.Cluster, doc: doc, fault: o.saveFault}
		if err := ds.setPhase(ctx, lifecycle.PhaseDestroying, nil, func(m *Meta) {
			if sticky != 0 {
				m.StickyID = sticky
			}
		}); err != nil {
			return failed(out, err)
		}
		saver = ds
		out.Header = doc.Header
	}
	g, engine, err := o.prepare(st, in)
	if err != nil {
		return failed(out, err)
	}
	// The request was for the up this down replaced: clear it before the engine's checks.
	if err := o.Store.DeleteArtifact(ctx, in.Cluster, artifactCancel); err != nil {
		return failed(out, fmt.Errorf("clear the cancel request of %q: %w", in.Cluster, err))
	}
	rep, downErr := engine.Down(ctx, g, st, noCancel{saver})
	out.Report = rep
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if downErr != nil {
		if ds != nil {
			_ = ds.setPhase(wctx, lifecycle.PhaseFailed, nil, func(m *Meta) { m.DownFailed = o.now() })
			out.Header = ds.doc.Header
		}
		return failed(out, downErr)
	}
	if err := o.Store.DeleteArtifacts(wctx, in.Cluster); err != nil {
		return failed(out, fmt.Errorf("cluster %q destroyed, but its artifacts remain: %w", in.Cluster, err))
	}
	if err := o.Store.DeletePublic(wctx, PublicKubeconfigDir(in.Cluster)); err != nil {
		return failed(out, fmt.Errorf("cluster %q destroyed, but its users' kubeconfig objects remain: %w", in.Cluster, err))
	}
	if ds != nil {
		if err := o.Store.Delete(wctx, ds.doc); err != nil {
			return failed(out, fmt.Errorf("cluster %q destroyed, but its state document remains: %w", in.Cluster, err))
		}
	}
	out.Phase = lifecycle.PhaseDestroyed
	return out, nil
}

// prepare builds the cluster's graph and an engine reporting to the request's progress.
func (o *Ops) prepare(st *provision.State, req Intent) (*provision.Graph, *provision.Engine, error) {
	g := provision.NewGraph()
	if err := o.Build(g, st.Spec); err != nil {
		return nil, nil, err
	}
	eopts := o.Engine
	eopts.Progress = req.Progress
	if eopts.Logger == nil {
		eopts.Logger = o.log()
	}
	return g, provision.New(eopts), nil
}

// noCancel hides CancelChecker: a down never cancels itself.
type noCancel struct{ provision.Saver }

// Update changes a cluster's public header under its lock (extend, warned flags, sticky id).
func (o *Ops) Update(ctx context.Context, req Intent, change func(h *statestore.Header) error) (statestore.Header, error) {
	h, err := o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, o.lockWait())
	if err != nil {
		return statestore.Header{}, err
	}
	defer o.release(ctx, h)
	ctx = h.Context()
	doc, err := o.Store.Get(ctx, req.Cluster)
	if errors.Is(err, statestore.ErrNotFound) {
		return statestore.Header{}, fmt.Errorf("cluster %q: %w", req.Cluster, ErrNoCluster)
	}
	if err != nil {
		return statestore.Header{}, err
	}
	if doc.Header.Labels == nil {
		doc.Header.Labels = map[string]string{}
	}
	if err := change(&doc.Header); err != nil {
		return statestore.Header{}, err
	}
	if err := o.Store.Put(ctx, doc); err != nil {
		return statestore.Header{}, err
	}
	return doc.Header, nil
}

// LockImage holds the lock of a shared image (cluster.ImageLocker), with the same lease and
// renewal as a cluster's; the image is made under the context it returns, which ends when the
// lock is lost.
func (o *Ops) LockImage(ctx context.Context, key string) (context.Context, func(), error) {
	h, err := o.acquire(ctx, statestore.DigestLock(statestore.LockImage, key), Intent{Command: "image " + key}, o.lockWait())
	if err != nil {
		return nil, nil, err
	}
	return h.Context(), func() { o.release(ctx, h) }, nil
}

// Kubeconfig returns the cluster's admin kubeconfig (from its own encrypted object).
func (o *Ops) Kubeconfig(ctx context.Context, clusterName string) ([]byte, error) {
	kc, err := o.Store.GetArtifact(ctx, clusterName, artifactKubeconfig)
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, fmt.Errorf("cluster %q has no kubeconfig yet: run up until it completes", clusterName)
	}
	return kc, err
}
