package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"
)

// Phase of a step event.
type Phase string

// Phases a step goes through.
const (
	PhaseStarted  Phase = "started"
	PhaseProgress Phase = "progress" // a node's own note while it works (e.g. "waiting for running")
	PhaseDone     Phase = "done"
	PhaseFailed   Phase = "failed"
	PhaseSkipped  Phase = "skipped" // not run: an earlier step failed, or the run was cancelled
)

// Event is one progress report, rendered by the GitHub side and the CLI.
type Event struct {
	Step    string        `json:"step"`
	Phase   Phase         `json:"phase"`
	Detail  string        `json:"detail,omitempty"`
	Err     error         `json:"-"`
	Elapsed time.Duration `json:"elapsed"`
	// Row and Reading are set on a first-contact observation (Run.Observe): the assumptions
	// register's row (internal/assume) and the reading the step met.
	Row     string `json:"row,omitempty"`
	Reading string `json:"reading,omitempty"`
}

// Progress receives events; Event must not block for long (it is called from the workers).
type Progress interface{ Event(Event) }

// ProgressFunc adapts a function to Progress.
type ProgressFunc func(Event)

// Event implements Progress.
func (f ProgressFunc) Event(e Event) { f(e) }

// ErrCancelled is returned by Up when a cancel request was found between steps.
var ErrCancelled = errors.New("provisioning cancelled by request")

// Options tune the engine. Zero values take the defaults.
type Options struct {
	PollInterval time.Duration // default PollIntervalFromEnv()
	StepTimeout  time.Duration // per node, retries included; default 30 min
	Backoff      Backoff       // retry policy of transient errors; default 1/4 poll .. 8 polls
	Progress     Progress
	Logger       *slog.Logger
	SaveTimeout  time.Duration // bound of one Save; default 30 s
}

// Engine applies and destroys graphs.
type Engine struct{ opts Options }

// New returns an engine; a bad POC_POLL_INTERVAL falls back to the default with a warning.
func New(opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PollInterval <= 0 {
		d, err := PollIntervalFromEnv()
		if err != nil {
			opts.Logger.Warn("ignoring POC_POLL_INTERVAL", "err", err)
			d = DefaultPollInterval
		}
		opts.PollInterval = d
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 30 * time.Minute
	}
	if opts.Backoff.Min <= 0 {
		opts.Backoff.Min = max(opts.PollInterval/4, time.Millisecond)
	}
	if opts.Backoff.Max <= 0 {
		opts.Backoff.Max = 8 * opts.PollInterval
	}
	if opts.SaveTimeout <= 0 {
		opts.SaveTimeout = 30 * time.Second
	}
	if opts.Progress == nil {
		opts.Progress = ProgressFunc(func(Event) {})
	}
	return &Engine{opts: opts}
}

// Deleted is one resource a destroy removed.
type Deleted struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Swept is true when the resource was found by the sweep, not through the graph.
	Swept bool `json:"swept,omitempty"`
}

// Report says what a destroy removed.
type Report struct {
	Deleted []Deleted     `json:"deleted"`
	Elapsed time.Duration `json:"elapsed"`
}

// Run is what a node sees of the engine during one Up or Down: the state (through accessors that
// save), the spec, naming and tagging conventions, waits and retries.
type Run struct {
	e        *Engine
	mu       sync.Mutex
	st       *State
	saver    Saver
	sweeping bool
	report   Report
	saveMu   sync.Mutex
	// unsaved: a change was made that no save has stored yet (a save failed, or is running).
	unsaved bool
}

func (e *Engine) newRun(st *State, saver Saver) *Run {
	st.init()
	return &Run{e: e, st: st, saver: saver}
}

// ClusterID is the cluster's id.
func (r *Run) ClusterID() string { return r.st.ClusterID }

// Spec is the cluster's spec (a copy).
func (r *Run) Spec() Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.Spec
}

// Name prefixes a resource name: poc-<cluster>-<suffix> (ResourceName).
func (r *Run) Name(suffix string) string { return ResourceName(r.st.ClusterID, suffix) }

// Tags are the tags of the resource of one node (NodeTags).
func (r *Run) Tags(node string) []string { return NodeTags(r.st.ClusterID, node) }

// Logger is the engine's logger.
func (r *Run) Logger() *slog.Logger { return r.e.opts.Logger }

// PollInterval is the wait interval nodes use.
func (r *Run) PollInterval() time.Duration { return r.e.opts.PollInterval }

// SSHKey is the cluster's generated key pair.
func (r *Run) SSHKey() *SSHKeyPair {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.SSHKey
}

// Resource returns a copy of the record of a node.
func (r *Run) Resource(name string) (Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.st.Resources[name]
	if !ok {
		return Record{}, false
	}
	c := *rec
	c.Attrs = maps.Clone(rec.Attrs)
	return c, true
}

// Record stores the record of a node and saves the state at once. Call it as soon as a create
// returns an id: a crash after that point is then resumed from the id, not from a tag look-up.
// The save survives the cancellation of ctx, so that a create that just returned is not lost.
func (r *Run) Record(ctx context.Context, name string, rec Record) error {
	c := rec
	c.Attrs = maps.Clone(rec.Attrs)
	return r.mutate(ctx, func(st *State) { st.Resources[name] = &c })
}

// Forget removes the record of a node (after its resource is gone) and saves.
func (r *Run) Forget(ctx context.Context, name string) error {
	return r.mutate(ctx, func(st *State) { delete(st.Resources, name) })
}

// Trigger returns the trigger hash last applied by an out-of-state node.
func (r *Run) Trigger(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.Triggers[name]
}

// SetTrigger records the trigger hash of an out-of-state node once it has run, and saves.
func (r *Run) SetTrigger(ctx context.Context, name, hash string) error {
	return r.change(ctx, func(st *State) bool {
		if old, ok := st.Triggers[name]; ok && old == hash {
			return false
		}
		st.Triggers[name] = hash
		return true
	})
}

// Secret returns a secret stored by a node (a copy).
func (r *Run) Secret(key string) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.st.Secrets[key]
	return append([]byte(nil), v...), ok
}

// SetSecret stores a secret in the encrypted state and saves.
func (r *Run) SetSecret(ctx context.Context, key string, v []byte) error {
	return r.Set(ctx, map[string][]byte{key: v}, nil)
}

// Set stores secrets and outputs together, in one save; a value the state holds already is not
// saved again (nil is a value: a secret set to nil is present and empty).
func (r *Run) Set(ctx context.Context, secrets map[string][]byte, outputs map[string]string) error {
	return r.change(ctx, func(st *State) bool {
		changed := false
		for k, v := range secrets {
			if old, ok := st.Secrets[k]; ok && bytes.Equal(old, v) {
				continue
			}
			st.Secrets[k], changed = append([]byte(nil), v...), true
		}
		for k, v := range outputs {
			if old, ok := st.Outputs[k]; ok && old == v {
				continue
			}
			st.Outputs[k], changed = v, true
		}
		return changed
	})
}

// Output returns an output (endpoint, location) stored by a node.
func (r *Run) Output(key string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.st.Outputs[key]
	return v, ok
}

// SetOutput stores an output and saves.
func (r *Run) SetOutput(ctx context.Context, key, v string) error {
	return r.Set(ctx, nil, map[string]string{key: v})
}

// Note reports a node's progress detail.
func (r *Run) Note(step, detail string) {
	r.e.opts.Progress.Event(Event{Step: step, Phase: PhaseProgress, Detail: detail})
}

// Observe reports, as a progress note of step, that the step met reading of the assumptions
// register's row (a first-contact observation: the caller keeps it for `bot doctor --live`).
func (r *Run) Observe(step, row, reading, detail string) {
	r.e.opts.Progress.Event(Event{Step: step, Phase: PhaseProgress, Detail: detail, Row: row, Reading: reading})
}

// Deleted adds a removed resource to the destroy report.
func (r *Run) Deleted(kind, id, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Deleted = append(r.report.Deleted, Deleted{Kind: kind, ID: id, Name: name, Swept: r.sweeping})
}

// Poll waits until check reports done, at the engine's poll interval, within ctx's deadline.
func (r *Run) Poll(ctx context.Context, what string, check func(ctx context.Context) (bool, error)) error {
	return Poll(ctx, r.e.opts.PollInterval, what, check)
}

// Retry retries fn's transient errors with the engine's backoff, within ctx's deadline.
func (r *Run) Retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	return Retry(ctx, r.e.opts.Backoff, what, fn)
}

func (r *Run) mutate(ctx context.Context, f func(*State)) error {
	return r.change(ctx, func(st *State) bool { f(st); return true })
}

// change applies f to the state and saves it, unless f changed nothing (it says so) and every
// earlier change is saved: each save is a whole-state write on the run's path.
func (r *Run) change(ctx context.Context, f func(*State) bool) error {
	// saveMu orders whole saves so that a later mutation is never overwritten by an older copy.
	r.saveMu.Lock()
	defer r.saveMu.Unlock()
	r.mu.Lock()
	if !f(r.st) && !r.unsaved {
		r.mu.Unlock()
		return nil
	}
	r.st.UpdatedAt = time.Now().UTC()
	snap := r.st.Clone()
	r.unsaved = r.saver != nil
	r.mu.Unlock()
	if r.saver == nil {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.e.opts.SaveTimeout)
	defer cancel()
	if err := r.saver.Save(sctx, snap); err != nil {
		return fmt.Errorf("save state of cluster %q: %w", r.st.ClusterID, err)
	}
	r.mu.Lock()
	r.unsaved = false // saveMu held: no change came in since snap
	r.mu.Unlock()
	return nil
}

func (r *Run) cancelled(ctx context.Context) (bool, error) {
	r.mu.Lock()
	c := r.st.CancelRequested
	r.mu.Unlock()
	if c {
		return true, nil
	}
	if cc, ok := r.saver.(CancelChecker); ok {
		return cc.CancelRequested(ctx)
	}
	return false, nil
}

func (e *Engine) emit(ev Event) { e.opts.Progress.Event(ev) }

func (e *Engine) timeout(n *Node) time.Duration {
	if n.Timeout > 0 {
		return n.Timeout
	}
	return e.opts.StepTimeout
}

// Up applies the graph: pre-flight checks of every node, then every node in parallel as its
// needs complete. It resumes from st (and the nodes' tag look-ups); on a cancel request found
// between steps it starts nothing more, cuts the steps in flight and stops with ErrCancelled.
// st is updated in place and saved after each change.
func (e *Engine) Up(ctx context.Context, g *Graph, st *State, saver Saver) error {
	if err := g.Validate(); err != nil {
		return err
	}
	r := e.newRun(st, saver)
	if st.SSHKey == nil {
		key, err := GenerateSSHKey("pocbot-" + st.ClusterID)
		if err != nil {
			return err
		}
		if err := r.mutate(ctx, func(s *State) { s.SSHKey = key }); err != nil {
			return err
		}
	}
	if c, err := r.cancelled(ctx); err != nil {
		return fmt.Errorf("read cancel request of cluster %q: %w", st.ClusterID, err)
	} else if c {
		return ErrCancelled
	}
	if err := e.preflight(ctx, g, r); err != nil {
		return err
	}
	forward := func(n *Node) []string { return n.Needs }
	return e.walk(ctx, g, r, forward, true)
}

func (e *Engine) preflight(ctx context.Context, g *Graph, r *Run) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, name := range g.order {
		n := g.nodes[name]
		if n.Preflight == nil {
			continue
		}
		wg.Go(func() {
			step := "preflight " + n.Name
			start := time.Now()
			e.emit(Event{Step: step, Phase: PhaseStarted})
			pctx, cancel := context.WithTimeout(ctx, e.timeout(n))
			defer cancel()
			err := Retry(pctx, e.opts.Backoff, step, func(ctx context.Context) error { return n.Preflight(ctx, r) })
			if err != nil {
				e.emit(Event{Step: step, Phase: PhaseFailed, Err: err, Elapsed: time.Since(start)})
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			e.emit(Event{Step: step, Phase: PhaseDone, Elapsed: time.Since(start)})
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("pre-flight checks failed, nothing was created: %w", errors.Join(errs...))
	}
	return nil
}

// walk runs every node once all of deps(node) are done. forward=true applies, false destroys.
func (e *Engine) walk(ctx context.Context, g *Graph, r *Run, deps func(*Node) []string, forward bool) error {
	ctx, cancelAll := context.WithCancelCause(ctx)
	defer cancelAll(nil)
	type result struct {
		name string
		err  error
	}
	pending := map[string]int{}
	dependents := map[string][]string{}
	for _, name := range g.order {
		n := g.nodes[name]
		ds := deps(n)
		pending[name] = len(ds)
		for _, d := range ds {
			dependents[d] = append(dependents[d], name)
		}
	}
	results := make(chan result)
	running, started := 0, map[string]bool{}
	var errs []error
	stop := false // no new node once something failed (up) or a cancel was seen
	start := func(name string) {
		n := g.nodes[name]
		started[name] = true
		running++
		go func() {
			results <- result{name, e.runNode(ctx, r, n, forward)}
		}()
	}
	launch := func() {
		for _, name := range g.order {
			if stop || started[name] || pending[name] > 0 {
				continue
			}
			if forward {
				// A cancel request is read between steps. Once it is seen nothing more starts,
				// so the steps then in flight are cut as a failure cuts them: one of them may be
				// waiting for the work of a step that will now never start (the worker's trust
				// waits for the bootstrap), and would hold the cluster's lock for its whole
				// timeout while the down that asked for the cancel waits for that lock. What a
				// cut step created is recorded or carries the cluster's tag: the down removes it.
				c, err := r.cancelled(ctx)
				if err != nil {
					err = fmt.Errorf("read cancel request of cluster %q: %w", r.ClusterID(), err)
					errs = append(errs, err)
					stop = true
					cancelAll(err)
					continue
				}
				if c {
					errs = append(errs, ErrCancelled)
					stop = true
					cancelAll(ErrCancelled)
					continue
				}
			}
			start(name)
		}
	}
	launch()
	for running > 0 {
		res := <-results
		running--
		if res.err != nil {
			errs = append(errs, res.err)
			if forward {
				// Up stops at the first failure: the rerun resumes from what was recorded.
				stop = true
				cancelAll(fmt.Errorf("step %s failed", res.name))
			}
			// Down goes on with what does not depend on the failed node.
		} else {
			for _, d := range dependents[res.name] {
				pending[d]--
			}
		}
		launch()
	}
	for _, name := range g.order {
		if !started[name] {
			e.emit(Event{Step: name, Phase: PhaseSkipped})
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) runNode(ctx context.Context, r *Run, n *Node, forward bool) error {
	fn, verb := n.Apply, "apply"
	if !forward {
		fn, verb = n.Destroy, "destroy"
		if fn == nil {
			return r.Forget(ctx, n.Name) // nothing to remove; drop any record
		}
	}
	step := n.Name
	if !forward {
		step = "destroy " + n.Name
	}
	start := time.Now()
	e.emit(Event{Step: step, Phase: PhaseStarted})
	nctx, cancel := context.WithTimeout(ctx, e.timeout(n))
	defer cancel()
	err := Retry(nctx, e.opts.Backoff, verb+" "+n.Name, func(ctx context.Context) error { return fn(ctx, r) })
	if err == nil && !forward {
		err = r.Forget(ctx, n.Name)
	}
	if err != nil {
		err = fmt.Errorf("%s %s: %w", verb, n.Name, err)
		e.emit(Event{Step: step, Phase: PhaseFailed, Err: err, Elapsed: time.Since(start)})
		e.opts.Logger.Warn("step failed", "step", step, "err", err)
		return err
	}
	e.emit(Event{Step: step, Phase: PhaseDone, Elapsed: time.Since(start)})
	return nil
}

// Down destroys the graph in reverse dependency order (a node is destroyed once every node that
// needs it is gone), treating not-found as done, then runs every sweeper. It returns what was
// deleted even when some step failed; the error then names every failed step.
func (e *Engine) Down(ctx context.Context, g *Graph, st *State, saver Saver) (*Report, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	r := e.newRun(st, saver)
	dependents := map[string][]string{}
	for _, name := range g.order {
		for _, need := range g.nodes[name].Needs {
			dependents[need] = append(dependents[need], name)
		}
	}
	reverse := func(n *Node) []string { return dependents[n.Name] }
	err := e.walk(ctx, g, r, reverse, false)
	r.mu.Lock()
	r.sweeping = true
	r.mu.Unlock()
	var serrs []error
	for _, s := range g.sweepers {
		step := "sweep " + s.Name
		start := time.Now()
		e.emit(Event{Step: step, Phase: PhaseStarted})
		sctx, cancel := context.WithTimeout(ctx, e.opts.StepTimeout)
		serr := Retry(sctx, e.opts.Backoff, step, func(ctx context.Context) error { return s.Sweep(ctx, r) })
		cancel()
		if serr != nil {
			serr = fmt.Errorf("%s: %w", step, serr)
			serrs = append(serrs, serr)
			e.emit(Event{Step: step, Phase: PhaseFailed, Err: serr, Elapsed: time.Since(start)})
			continue
		}
		e.emit(Event{Step: step, Phase: PhaseDone, Elapsed: time.Since(start)})
	}
	r.mu.Lock()
	rep := r.report
	r.mu.Unlock()
	sort.SliceStable(rep.Deleted, func(i, j int) bool { return !rep.Deleted[i].Swept && rep.Deleted[j].Swept })
	rep.Elapsed = time.Since(t0)
	if all := errors.Join(append([]error{err}, serrs...)...); all != nil {
		return &rep, fmt.Errorf("destroy cluster %q incomplete (run down again): %w", st.ClusterID, all)
	}
	return &rep, nil
}
