// Package clusterops owns every decision about a cluster's life and runs the operations on it.
// An operation reads what it decides on once (Facts: the state document under the cluster's one
// lock, then, when its decision gets that far, the price, the pre-flight and the budget's other
// clusters), decides with one pure function (Decide: a plan, or a typed Refusal of a
// lifecycle.Kind: closed issue, DNS zone, ownership, rollback, invalid spec, changes, budget,
// quota, lock, max_ttl, no cluster, not paused, not ready, a precondition that no longer holds),
// and only then acts: it writes the header once, runs the provisioning engine with a saver that
// writes the whole document after every step, and keeps the kubeconfig as its own encrypted
// object. What it decided and how the work goes reach the caller's Observer on the caller's
// goroutine, never from the code that holds a lock. It knows nothing of GitHub: callers translate
// events into intents (data) and render outcomes.
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
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/pool"
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
	// Engine are the engine's options. Its Progress, when set, hears every step in the engine's
	// own goroutine, before the step goes on (a test's hook into a step); the request's observer
	// hears them through its queue.
	Engine provision.Options
	Now    func() time.Time
	Log    *slog.Logger
	// LockLease is the lease of a cluster's lock, renewed at a third of it (default settings.DefaultLockLease).
	LockLease time.Duration
	// LockWait bounds the wait for a busy lock before giving up naming its holder (default settings.DefaultLockWait).
	LockWait time.Duration
	// CancelWait bounds a down's wait for the run it asked to stop (default 50 min: the longest
	// step of an up, the worker's rescue write, is bounded at 45).
	CancelWait time.Duration
	// RunnerCIDR is where this process runs (POC_RUNNER_CIDR, as cluster.Config has it): a read
	// of the nodes from outside a cluster's admin CIDRs (Status's checks, MachineConfigs) admits
	// it to the control planes for the read, as a run that changes the cluster does; with
	// NoReadRunnerAccess (POC_READ_RUNNER_ACCESS=false) it fails at once, naming admin_cidrs.
	RunnerCIDR         string
	NoReadRunnerAccess bool
	// Quoter prices specs (the budget, an up's quote); Pool, when set, is the bucket's parked
	// workers, billed and so counted by the budget.
	Quoter *cost.Quoter
	Pool   Parked

	// Preflight, when set, weighs an up against the organization's quotas and the stock of the
	// worker offers before anything is written or created (see Up); cmd/bot binds it to
	// cluster.Preflight.
	Preflight Preflighter
	// Rebind renames a claimed spare's resources (scaleway.Driver.Rebind); nil: an up never
	// claims a spare (it takes the cold path, saying so).
	Rebind Rebinder
	// SpareHealth re-checks a spare before a claim hands it out (nil: checkHealthOf, the checks
	// of a status with health).
	SpareHealth HealthCheck
	// ETA, when set, estimates the up of a new cluster (Outcome.ETA, before Started and in a dry
	// run) and records how long it took once it succeeded.
	ETA *eta.Book
	// FirstContact, when set, keeps the first-contact observations an up's steps report
	// (provision.Run.Observe): the readings of register rows `bot doctor --live` cannot settle.
	FirstContact *firstcontact.Book

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

func (o *Ops) cancelWait() time.Duration {
	return settings.DurationOr(o.CancelWait, settings.DefaultCancelWait)
}

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

// write is an operation's one header write: h, with st as the body when given (an up's first
// write of a document carries both).
func (s *docSaver) write(ctx context.Context, h statestore.Header, st *provision.State) error {
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
	s.doc.Header = h
	return s.store.Put(ctx, s.doc)
}

// editHeader edits the header in memory; the next write carries it.
func (s *docSaver) editHeader(edit func(*statestore.Header)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	edit(&s.doc.Header)
}

// setPhase writes the header's phase and its metadata's edit in one write.
func (s *docSaver) setPhase(ctx context.Context, phase Phase, edit func(*Meta)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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

// withPoolScope says under ctx whose cluster runs, for its parked workers (cluster.WithPoolScope):
// the repository its document's header records (an existing cluster is its repository's, whoever
// asks), else the intent's, and the intent's sharing choice.
func withPoolScope(ctx context.Context, in Intent, doc *statestore.Document) context.Context {
	repo := in.Repository
	if doc != nil && doc.Header.Repository != "" {
		repo = doc.Header.Repository
	}
	return cluster.WithPoolScope(ctx, pool.Scope{Repository: repo, Share: in.ShareParked})
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
	g, engine, err := o.prepare(st, nil)
	if err != nil {
		return "", err
	}
	saver := &docSaver{store: o.Store, cluster: req.Cluster, doc: doc, fault: o.saveFault}
	if err := runAdminClose(ctx, g, engine, st, noCancel{saver}); err != nil {
		return "", fmt.Errorf("close the runner access %s left on cluster %q (retried by the next reaper run or up): %w", cidr, req.Cluster, err)
	}
	return cidr, nil
}

// admissionLock is the lock that serialises the admission of new clusters of one repository,
// named by the repository (GitHub names are case-insensitive).
func admissionLock(repository string) statestore.LockKey {
	return statestore.DigestLock(statestore.LockAdmission, strings.ToLower(repository))
}

// prepare builds the cluster's graph and an engine reporting to progress (nil: nowhere).
func (o *Ops) prepare(st *provision.State, progress provision.Progress) (*provision.Graph, *provision.Engine, error) {
	g, err := o.graph(st.Spec)
	if err != nil {
		return nil, nil, err
	}
	return g, o.engine(progress), nil
}

// engine is an engine of the Ops' options reporting to progress.
func (o *Ops) engine(progress provision.Progress) *provision.Engine {
	eopts := o.Engine
	if hook := o.Engine.Progress; hook != nil && progress != nil {
		eopts.Progress = provision.ProgressFunc(func(e provision.Event) {
			hook.Event(e)
			progress.Event(e)
		})
	} else if progress != nil {
		eopts.Progress = progress
	}
	if eopts.Logger == nil {
		eopts.Logger = o.log()
	}
	return provision.New(eopts)
}

// noCancel hides CancelChecker: a down never cancels itself.
type noCancel struct{ provision.Saver }

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
