// Package clusterops runs one operation on one cluster against its stored state: it takes the
// cluster's lock (renewing its lease while it works), reads and decrypts the state document, builds
// the cluster's graph, runs the provisioning engine with a saver that writes the whole document
// after every step, and keeps the kubeconfig as its own encrypted object. It knows nothing of
// GitHub: callers say who asked, and render what comes back.
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

	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Phases recorded in the public header.
const (
	PhaseProvisioning = "provisioning"
	PhaseReady        = "ready"
	PhaseFailed       = "failed"
	PhaseDestroying   = "destroying"
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
	// LockLease is the lease of a cluster's lock, renewed at a third of it (default 2 min).
	LockLease time.Duration
	// LockWait bounds the wait for a busy lock before giving up naming its holder (default 10 min).
	LockWait time.Duration
	// CancelWait bounds a down's wait for the run it asked to stop (default 50 min: the longest
	// step of an up, the worker's rescue write, is bounded at 45).
	CancelWait time.Duration
	// RunnerCIDR is where this process runs (POC_RUNNER_CIDR, as cluster.Config has it): a status
	// checked from outside a cluster's admin CIDRs says that the security group is why its
	// checks fail.
	RunnerCIDR string
	// Preflight, when set, weighs an up against the organization's quotas and the stock of the
	// worker offers before anything is written or created (see Up); cmd/bot binds it to
	// cluster.Preflight.
	Preflight Preflighter

	// saveFault, set by tests (export_test.go), runs before every state save of an operation:
	// an error is a crash from that save on.
	saveFault func() error
}

// Preflighter decides whether spec fits, given what st already has, and which of offers (in
// order) the worker takes.
type Preflighter func(ctx context.Context, spec provision.Spec, st *provision.State, offers []string) (preflight.Result, error)

// Request is who asks what of which cluster.
type Request struct {
	Cluster string
	// Spec is the spec of a cluster this request creates (the seed's defaults plus the bucket).
	Spec provision.Spec
	// Override applies what the requester asked for explicitly, to the new spec or to the
	// existing cluster's spec (so that a bare `up` converges an existing cluster unchanged).
	Override func(*provision.Spec)
	// TTL sets the expiry of a cluster this request creates (an existing cluster keeps its expiry:
	// extending is its own operation).
	TTL         time.Duration
	Repository  string
	Number      int
	Kind        string // "issue", "pull" or ""
	RequestedBy string
	RunID       string
	Command     string
	Progress    provision.Progress
	// Precondition, when set, is checked on an existing cluster's header read under the lock: a
	// reaper's reason to destroy (expired, say) must still hold once the lock is its own, since an
	// extend may have landed between its listing and the lock; an operator run from one
	// repository's workflow must not touch another repository's cluster.
	Precondition func(statestore.Header) error
	// ParkFor > 0 makes a Down park the Elastic Metal worker in the bucket's pool for that long
	// instead of deleting it (park_for, --park-for); the Ops' graph must have a pool.
	ParkFor time.Duration
	// Admit, when set, decides whether a cluster this request creates may exist (the budget). It
	// runs under the repository's admission lock, taken after the cluster's own lock, and the lock
	// is held until the cluster's first document is written: the next up of the repository lists
	// the clusters only once this one is among them, so a check-then-create race cannot let two
	// ups through a budget that has room for one. An error from Admit is returned as is (wrapped),
	// with nothing written or created. An existing cluster is never re-admitted.
	Admit func(ctx context.Context) error
	// MinSerial is where the serials of a document this request creates continue from: the state
	// serial a witness outside the bucket recorded for an earlier life of the cluster (see
	// chatops), so that a new life is never mistaken for a rolled-back state.
	MinSerial int64
	// DailyCostNanos is the daily cost (nano-euros) recorded in the header of a cluster this
	// request creates, so that budgets read it at once without the key.
	DailyCostNanos int64
	// MaxPaused > 0 makes a Pause set the paused cluster's expiry to that long from the pause
	// (max_paused), keeping the running lifetime it had left for its resume.
	MaxPaused time.Duration
	// ReleaseIPs makes a Pause delete the reserved IPs too (`--release-ips`): a lower floor, new
	// endpoints at the resume.
	ReleaseIPs bool
	// NoCancel makes a Down that finds the lock held give up at once instead of asking the holder
	// to stop (the reaper: a busy cluster is for its next run).
	NoCancel bool
	// WorkerOffers are the Elastic Metal offers the worker may take, in order (worker_offers);
	// empty: the spec's baremetal offer alone.
	WorkerOffers []string
}

// Result is what an operation leaves.
type Result struct {
	Header  statestore.Header
	State   *provision.State
	Created bool
	// InPlace lists the spec changes applied by this up; an up whose spec differs in a way that
	// cannot change in place fails with a *RefusedError instead.
	InPlace []provision.Change
	// KubeconfigLocation is where the encrypted kubeconfig object is.
	KubeconfigLocation string
	// Report is what down deleted.
	Report *provision.Report
	// Preflight is the up's pre-flight (quotas, stock, the offer taken), when Ops has one.
	Preflight *preflight.Result
}

// RefusedError lists spec changes an existing cluster cannot take.
type RefusedError struct {
	Cluster string
	Changes []provision.Change
}

func (e *RefusedError) Error() string {
	var parts []string
	for _, c := range e.Changes {
		parts = append(parts, fmt.Sprintf("%s %v → %v (%s)", c.Field, c.Old, c.New, c.Why))
	}
	return fmt.Sprintf("cluster %q exists with other settings that cannot change in place: %s; run down first, then up with the new settings",
		e.Cluster, strings.Join(parts, "; "))
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
	if o.LockLease > 0 {
		return o.LockLease
	}
	return 2 * time.Minute
}

// Lease is the lease of every lock these Ops take (LockLease or its default). Other packages
// that lock a cluster themselves (the reaper's orphan sweep) use it too, so that one setting
// says when a dead run's lock lapses.
func (o *Ops) Lease() time.Duration { return o.lease() }

func (o *Ops) cancelWait() time.Duration {
	if o.CancelWait > 0 {
		return o.CancelWait
	}
	return 50 * time.Minute
}

func (o *Ops) lockWait() time.Duration {
	if o.LockWait > 0 {
		return o.LockWait
	}
	return 10 * time.Minute
}

// acquire holds the lock key for req (statestore.Hold: its context ends when the lock is lost;
// the work done under it must use it), waiting up to wait while it is busy.
func (o *Ops) acquire(ctx context.Context, key statestore.LockKey, req Request, wait time.Duration) (*statestore.Held, error) {
	info := statestore.LockInfo{RunID: req.RunID, Actor: req.RequestedBy, Command: req.Command}
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

func (s *docSaver) setPhase(ctx context.Context, phase string, edit func(*Meta)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doc.Header.Phase = phase
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

// Up creates or converges a cluster.
func (o *Ops) Up(ctx context.Context, req Request) (*Result, error) {
	if err := o.want(req, req.Spec).Validate(); err != nil {
		return nil, err
	}
	h, err := o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, o.lockWait())
	if err != nil {
		return nil, err
	}
	defer o.release(ctx, h)
	ctx = h.Context()
	// A cancel left by a down that found nothing running is stale; one that cannot be removed
	// would stop this up at its first step.
	if err := o.Store.DeleteArtifact(ctx, req.Cluster, artifactCancel); err != nil {
		return nil, fmt.Errorf("clear a stale cancel request of %q: %w", req.Cluster, err)
	}

	res := &Result{}
	doc, err := o.Store.Get(ctx, req.Cluster)
	var st *provision.State
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		st, err = provision.NewState(req.Cluster, o.want(req, req.Spec))
		if err != nil {
			return nil, err
		}
		now := o.now()
		doc = &statestore.Document{Header: statestore.Header{
			Cluster: req.Cluster, Repository: req.Repository, Number: req.Number, Kind: req.Kind,
			RequestedBy: req.RequestedBy, Created: now, Phase: PhaseProvisioning, Serial: req.MinSerial,
		}}
		if req.TTL > 0 {
			doc.Header.Expires = now.Add(req.TTL)
		}
		Meta{DailyCostNanos: req.DailyCostNanos}.Into(&doc.Header)
		res.Created = true
	case err != nil:
		return nil, err
	default:
		if req.Precondition != nil {
			if perr := req.Precondition(doc.Header); perr != nil {
				return nil, fmt.Errorf("up %s: %w: %w", req.Cluster, ErrPrecondition, perr)
			}
		}
		st, err = decodeState(doc)
		if err != nil {
			return nil, err
		}
		want := o.want(req, st.Spec)
		if err := want.Validate(); err != nil {
			return nil, err
		}
		inPlace, refused := provision.Diff(st.Spec, want)
		if len(refused) > 0 {
			return nil, &RefusedError{Cluster: req.Cluster, Changes: refused}
		}
		res.InPlace = inPlace
		st.Spec = want
	}
	if o.Preflight != nil {
		pf, err := o.Preflight(ctx, st.Spec, st, workerOffers(req, st.Spec))
		if err != nil {
			return nil, fmt.Errorf("pre-flight of %q (nothing was created): %w", req.Cluster, err)
		}
		if pf.Refusal != nil {
			return &Result{Preflight: &pf}, fmt.Errorf("up %s refused by the pre-flight, nothing was created: %w", req.Cluster, pf.Refusal)
		}
		if pf.Offer != "" {
			st.Spec.BaremetalOffer = pf.Offer // the worker is not ordered yet: the first offer that fits
		}
		res.Preflight = &pf
	}
	saver := &docSaver{store: o.Store, cluster: req.Cluster, doc: doc, fault: o.saveFault}
	if err := o.admit(ctx, req, res.Created, func() error { return saver.Save(ctx, st) }); err != nil {
		return nil, err // the document exists before anything is created
	}
	// An up of a paused cluster is its resume: the machines come back, etcd from the snapshot.
	resuming := !res.Created && Paused(doc.Header)
	phase := PhaseProvisioning
	if resuming {
		phase = PhaseResuming
	}
	if err := saver.setPhase(ctx, phase, func(m *Meta) { m.DownFailed = time.Time{} }); err != nil {
		return nil, err
	}
	g, engine, err := o.prepare(st, req)
	if err != nil {
		return nil, err
	}
	upErr := engine.Up(ctx, g, st, saver)
	// The engine saved every step through saver; read back what it saved.
	final, derr := decodeState(saver.doc)
	if derr != nil {
		return nil, derr
	}
	res.State = final
	// Write the outcome even when ctx is done (a cancelled up still records its phase).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if upErr != nil {
		if f := o.closeAdminAfterFailure(wctx, g, engine, final, saver, req.Cluster); f != nil {
			final = f
			res.State = final
		}
		failed := PhaseFailed
		if resuming {
			failed = PhaseResuming // still the resume of a paused cluster: an up or resume continues it
		}
		if err := saver.setPhase(wctx, failed, nil); err != nil {
			o.log().Error("record the failed phase", "cluster", req.Cluster, "err", err)
		}
		res.Header = saver.doc.Header
		return res, upErr
	}
	if err := o.finishResume(wctx, saver, final); err != nil {
		return res, err
	}
	if kc, ok := final.Secrets[cluster.SecretKubeconfig]; ok {
		loc, err := o.Store.PutArtifact(wctx, req.Cluster, artifactKubeconfig, kc)
		if err != nil {
			return res, fmt.Errorf("store the kubeconfig of %q: %w", req.Cluster, err)
		}
		res.KubeconfigLocation = loc
	}
	if err := saver.setPhase(wctx, PhaseReady, func(m *Meta) {
		if res.KubeconfigLocation != "" {
			m.Kubeconfig = res.KubeconfigLocation
		}
		if resuming && req.DailyCostNanos > 0 {
			m.DailyCostNanos = req.DailyCostNanos // running again: the running cost
		}
		if resuming && m.PausedTTLLeft > 0 {
			// The running lifetime left at the pause, from now: the pause stopped its clock.
			saver.doc.Header.Expires = o.now().Add(m.PausedTTLLeft)
			m.PausedTTLLeft = 0
		}
	}); err != nil {
		return res, err
	}
	res.Header = saver.doc.Header
	return res, nil
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
func (o *Ops) CloseRunnerAccess(ctx context.Context, req Request) (string, error) {
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

// admit writes a cluster's first document. For a new cluster with an Admit check, the check and
// the write happen under the repository's admission lock (see Request.Admit).
func (o *Ops) admit(ctx context.Context, req Request, created bool, write func() error) error {
	if !created || req.Admit == nil {
		return write()
	}
	h, err := o.acquire(ctx, admissionLock(req.Repository), Request{RunID: req.RunID, RequestedBy: req.RequestedBy,
		Command: "admit " + req.Cluster}, o.lockWait())
	if err != nil {
		return fmt.Errorf("admit cluster %q: take the admission lock of %s: %w", req.Cluster, req.Repository, err)
	}
	defer o.release(ctx, h)
	if err := req.Admit(h.Context()); err != nil {
		return fmt.Errorf("admit cluster %q: %w", req.Cluster, err)
	}
	return write()
}

// admissionLock is the lock that serialises the admission of new clusters of one repository,
// named by the repository (GitHub names are case-insensitive).
func admissionLock(repository string) statestore.LockKey {
	return statestore.DigestLock(statestore.LockAdmission, strings.ToLower(repository))
}

// workerOffers are the offers an up may order its worker from, in order: the request's
// worker_offers, else the spec's offer.
func workerOffers(req Request, spec provision.Spec) []string {
	if len(req.WorkerOffers) > 0 {
		return req.WorkerOffers
	}
	return []string{spec.BaremetalOffer}
}

// Check is the pre-flight of an up of req without taking the lock or creating anything (the
// dry run's headroom, stock and offer): zero when Ops has no Preflight.
func (o *Ops) Check(ctx context.Context, req Request, spec provision.Spec) (*preflight.Result, error) {
	if o.Preflight == nil {
		return nil, nil
	}
	var st *provision.State
	if doc, err := o.Store.Get(ctx, req.Cluster); err == nil {
		if st, err = decodeState(doc); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, statestore.ErrNotFound) {
		return nil, err
	}
	pf, err := o.Preflight(ctx, spec, st, workerOffers(req, spec))
	if err != nil {
		return nil, err
	}
	return &pf, nil
}

// want is base with the request's overrides, its image key following its Talos version and
// extensions (the shared image is keyed by schematic and version).
func (o *Ops) want(req Request, base provision.Spec) provision.Spec {
	s := base
	s.AdminCIDRs = append([]string(nil), base.AdminCIDRs...)
	s.TalosExtensions = append([]string{}, base.TalosExtensions...)
	if req.Override != nil {
		req.Override(&s)
	}
	s.ImageKey = provision.ImageKeyFor(cluster.SchematicID(s), s.TalosVersion)
	return s
}

// Plan is what an up would do, without taking the lock or creating anything: the spec it would
// apply, whether the cluster exists, the in-place changes, and the changes it would refuse.
func (o *Ops) Plan(ctx context.Context, req Request) (spec provision.Spec, exists bool, inPlace, refused []provision.Change, err error) {
	doc, err := o.Store.Get(ctx, req.Cluster)
	if errors.Is(err, statestore.ErrNotFound) {
		spec = o.want(req, req.Spec)
		return spec, false, nil, nil, spec.Validate()
	}
	if err != nil {
		return spec, false, nil, nil, err
	}
	st, err := decodeState(doc)
	if err != nil {
		return spec, true, nil, nil, err
	}
	spec = o.want(req, st.Spec)
	inPlace, refused = provision.Diff(st.Spec, spec)
	return spec, true, inPlace, refused, spec.Validate()
}

// Down destroys a cluster. When an up holds the lock, Down records a cancel request that the up
// honours at its next step, then waits for the lock.
func (o *Ops) Down(ctx context.Context, req Request) (*Result, error) {
	h, err := o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, 0)
	var locked *statestore.LockedError
	if errors.As(err, &locked) && !req.NoCancel {
		if _, perr := o.Store.PutArtifact(ctx, req.Cluster, artifactCancel, []byte(req.RequestedBy)); perr != nil {
			return nil, fmt.Errorf("ask the running %s to stop: %w", locked.Holder.Command, perr)
		}
		o.log().Info("asked the run holding the lock to stop", "cluster", req.Cluster, "holder", locked.Holder.Command, "run", locked.Holder.RunID)
		// The holder stops at its next step, and one step (an Elastic Metal delivery, the rescue
		// write) can last longer than the usual wait: having stopped it, this down must take over.
		h, err = o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, max(o.lockWait(), o.cancelWait()))
		if err != nil {
			// Nobody takes over: take the request back, or the up would stop for nothing.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			if derr := o.Store.DeleteArtifact(dctx, req.Cluster, artifactCancel); derr != nil {
				o.log().Error("take back the cancel request", "cluster", req.Cluster, "err", derr)
			}
			cancel()
		}
	} else if errors.As(err, &locked) {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	defer o.release(ctx, h)
	ctx = cluster.WithParkFor(h.Context(), req.ParkFor)

	res := &Result{}
	doc, err := o.Store.Get(ctx, req.Cluster)
	var st *provision.State
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		// No state: still sweep whatever carries the cluster's exact tag (a crash before the first save).
		st, err = provision.NewState(req.Cluster, req.Spec)
		if err != nil {
			return nil, err
		}
		doc = nil
	case err != nil:
		return nil, err
	default:
		if req.Precondition != nil {
			if perr := req.Precondition(doc.Header); perr != nil {
				return &Result{Header: doc.Header}, fmt.Errorf("down %s: %w: %w", req.Cluster, ErrPrecondition, perr)
			}
		}
		st, err = decodeState(doc)
		if err != nil {
			return nil, err
		}
	}
	var saver provision.Saver = provision.NewMemorySaver()
	var ds *docSaver
	if doc != nil {
		ds = &docSaver{store: o.Store, cluster: req.Cluster, doc: doc, fault: o.saveFault}
		if err := ds.setPhase(ctx, PhaseDestroying, nil); err != nil {
			return nil, err
		}
		saver = ds
		res.Header = doc.Header
	}
	g, engine, err := o.prepare(st, req)
	if err != nil {
		return nil, err
	}
	// The request was for the up this down replaced: clear it before the engine's checks.
	if err := o.Store.DeleteArtifact(ctx, req.Cluster, artifactCancel); err != nil {
		return nil, fmt.Errorf("clear the cancel request of %q: %w", req.Cluster, err)
	}
	rep, downErr := engine.Down(ctx, g, st, noCancel{saver})
	res.Report = rep
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if downErr != nil {
		if ds != nil {
			_ = ds.setPhase(wctx, PhaseFailed, func(m *Meta) { m.DownFailed = o.now() })
			res.Header = ds.doc.Header
		}
		return res, downErr
	}
	if err := o.Store.DeleteArtifacts(wctx, req.Cluster); err != nil {
		return res, fmt.Errorf("cluster %q destroyed, but its artifacts remain: %w", req.Cluster, err)
	}
	if err := o.Store.DeletePublic(wctx, PublicKubeconfigDir(req.Cluster)); err != nil {
		return res, fmt.Errorf("cluster %q destroyed, but its users' kubeconfig objects remain: %w", req.Cluster, err)
	}
	if ds != nil {
		if err := o.Store.Delete(wctx, ds.doc); err != nil {
			return res, fmt.Errorf("cluster %q destroyed, but its state document remains: %w", req.Cluster, err)
		}
	}
	return res, nil
}

// prepare builds the cluster's graph and an engine reporting to the request's progress.
func (o *Ops) prepare(st *provision.State, req Request) (*provision.Graph, *provision.Engine, error) {
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
func (o *Ops) Update(ctx context.Context, req Request, change func(h *statestore.Header) error) (statestore.Header, error) {
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
	h, err := o.acquire(ctx, statestore.DigestLock(statestore.LockImage, key), Request{Command: "image " + key}, o.lockWait())
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
