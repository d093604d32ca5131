// Package reaper is the schedule's side of a cluster's life: from the public state headers alone
// (no decryption), it destroys clusters past their expiry or whose issue / pull request is closed
// or merged, posts one warning before an expiry, honours the repository's keep label, retries
// failed teardowns on the next run, and sweeps orphans — resources tagged by the bot that no state
// document knows, older than a grace period.
//
// It is safe to run twice at once: every change goes through the cluster's lock (a busy lock makes
// the reaper skip that cluster for this run), a teardown that finds the document already gone is
// reported as such rather than as a second teardown, and the one-warning rule is enforced under
// the lock by a header label naming the expiry it warned for (so an extend re-arms it).
//
// Orphan detection assumes one state bucket per Scaleway project: resources of a cluster whose
// state lives in ANOTHER bucket look orphaned from here.
package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"
	"golang.org/x/sync/errgroup"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Issues is what the reaper asks of GitHub, for one repository (internal/github.Client).
type Issues interface {
	IssueState(ctx context.Context, number int) (open, isPR, merged bool, labels []string, err error)
	CreateComment(ctx context.Context, number int, body string) (github.Comment, error)
}

// Labelers says who last added a label to an issue and what a user may do (the keep rule's
// needs, clusterops.Labelers); internal/github.Client implements it.
type Labelers = clusterops.Labelers

// Teardown destroys one cluster (clusterops.Ops.Down).
type Teardown interface {
	Down(ctx context.Context, req clusterops.Intent) (*clusterops.Outcome, error)
}

// Inventory lists the bot-tagged resources per cluster (scaleway.Driver.ListTagged).
type Inventory interface {
	ListTagged(ctx context.Context, zones ...scw.Zone) ([]scaleway.TaggedCluster, error)
}

// Config is one reaper run. Ops is required.
type Config struct {
	// Ops gives the store, the graph builder and the engine. The reaper uses a copy whose lock
	// wait is a few milliseconds: a cluster someone else is working on is skipped, not waited for.
	Ops *clusterops.Ops
	// Teardown destroys a cluster; default: that copy of Ops.
	Teardown Teardown
	// Repository (owner/name), when set, limits the run to that repository's clusters; Issues,
	// when set, must act on that repository. Without Issues: no issue checks, no comments.
	Repository string
	Issues     Issues
	// Labelers checks who added the keep label; default: Issues when it implements Labelers.
	// Without one, a keep label is not honoured (the reaper cannot tell who added it).
	Labelers Labelers
	// Inventory, when set, enables the orphan pass over Zones (default: Spec.Zone).
	Inventory Inventory
	Zones     []scw.Zone
	// Pool and Parked, when both set, enable the parked pass: workers past their parked-until,
	// and servers tagged parked that no pool entry lists, are deleted.
	Pool   Pool
	Parked ParkedServers
	// ParkFor > 0 parks the worker of each cluster torn down (--park-for, POC_PARK_FOR);
	// ShareParked offers it to the bucket's other sharing repositories (share_parked_workers).
	ParkFor     time.Duration
	ShareParked bool
	// PauseSchedule, when set, pauses the ready clusters in its windows (pause_schedule of the
	// repository: set Repository with it); Pauser does it (default: the Ops copy, which prices
	// the paused cluster), with MaxPaused as the paused expiry bound.
	PauseSchedule *settings.PauseSchedule
	Pauser        Pauser
	MaxPaused     time.Duration
	// Spec is the base spec of a teardown without a document (the sweep by exact tag): its
	// image bucket and DNS zone matter. Default provision.DefaultSpec().
	Spec provision.Spec
	// KeepLabel pauses expiry while on the issue (default "poc/keep"); WarnBefore is the lead of
	// the expiry warning (0: no warning; repoconfig's default is 1 h).
	KeepLabel  string
	WarnBefore time.Duration
	// Grace is the age under which tagged resources without a document are left alone (default 1 h):
	// an `up` writes its document before creating anything, so a young orphan is most likely a
	// run still starting, or one that crashed minutes ago and will be resumed.
	Grace time.Duration
	// MaxTeardowns bounds the destructive actions of one run (teardowns and orphan sweeps
	// together; 0: no bound). Budget and Deadline bound its wall time (zero: none): listing,
	// look-ups, warnings and the start of a teardown stop at the bound. A teardown already
	// started runs to its end under the caller's ctx: cutting it would leave a half-destroyed
	// cluster that the next bounded run would cut again.
	MaxTeardowns int
	Budget       time.Duration
	Deadline     time.Time
	// DryRun decides and reports without destroying, writing or commenting.
	DryRun bool
	// Now is the clock of every decision (expiry, warning lead, orphan age); default time.Now.
	Now func() time.Time
	Log *slog.Logger
	// Actor and RunID name the reaper in the locks it takes (default "pocbot-reaper").
	Actor, RunID string
	// Parallel bounds concurrent GitHub look-ups (default 8).
	Parallel int
	// Gone, when set, is told of each cluster of Repository this run tore down (a pull request's
	// GitHub deployment goes inactive); its failures are its own to log.
	Gone func(ctx context.Context, cluster string, number int)
	// Paused, when set, is told of each cluster of Repository this run paused on the schedule (its
	// deployment goes inactive too: its URL no longer answers).
	Paused func(ctx context.Context, cluster string, number int)
}

// Action is what the reaper did (or, in a dry run, would do) with one cluster.
type Action string

// Actions.
const (
	ActionNone       Action = "none"      // nothing due
	ActionKept       Action = "kept"      // keep label: expiry paused
	ActionWarned     Action = "warned"    // the one warning before expiry was posted
	ActionDestroyed  Action = "destroyed" // torn down by this run
	ActionGone       Action = "gone"      // another run tore it down first
	ActionBusy       Action = "busy"      // its lock is held: left for the next run
	ActionFailed     Action = "failed"    // the teardown (or sweep) failed: retried next run
	ActionDeferred   Action = "deferred"  // due, but this run's bound was reached
	ActionSwept      Action = "swept"     // orphan resources removed
	ActionYoung      Action = "young"     // orphan resources younger than the grace period
	ActionDownFailed Action = "down-failed"
	// ActionTampered: the state object fails authentication (its header's MAC, then its
	// decryption): neither spared nor destroyed on its word, reported as a failure for a person.
	ActionTampered Action = "tampered"
)

// Decision is one line of the report.
type Decision struct {
	Cluster    string
	Repository string
	Number     int
	Kind       string
	Phase      string
	Expires    time.Time
	Orphan     bool
	Zone       string // orphans: where their resources are
	Action     Action
	// Reason is why a teardown was due: commands.ReapExpired / ReapClosed / ReapMerged, "orphan".
	Reason  commands.ReapReason
	Detail  string
	Deleted []provision.Deleted
	Err     error // what failed (teardown, sweep, look-up, comment)
}

// Report is what one run did.
type Report struct {
	Decisions []Decision
	Listed    int // headers read
	DryRun    bool
	Bounded   bool // MaxTeardowns, Budget or Deadline stopped something due
	Elapsed   time.Duration
}

// Count is the number of decisions with action a.
func (r Report) Count(a Action) int {
	n := 0
	for _, d := range r.Decisions {
		if d.Action == a {
			n++
		}
	}
	return n
}

// Failed is the number of teardowns and sweeps that failed, and of state objects that fail
// authentication: each needs a person, so the run reports failure.
func (r Report) Failed() int { return r.Count(ActionFailed) + r.Count(ActionTampered) }

const (
	defaultActor = "pocbot-reaper"
	defaultGrace = time.Hour
	reapCommand  = "reap"
	artifactSeen = "orphan-first-seen" // when an orphan without any creation date was first seen
)

// ReasonOrphan is the reason of an orphan sweep.
const ReasonOrphan commands.ReapReason = "orphan"

type run struct {
	cfg      Config
	ops      clusterops.Ops
	teardown Teardown
	log      *slog.Logger
	now      time.Time
	ctx      context.Context // bounded by Budget / Deadline
	work     context.Context // the caller's: a started teardown or sweep is not cut by the bound
	started  time.Time
	done     int // destructive actions started
	report   *Report
}

// Run makes one pass. Its error is reserved for what stops the whole pass (the state listing
// cannot be read, a bad Config); per-cluster failures are in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{DryRun: cfg.DryRun}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return rep, err
	}
	started := time.Now()
	work := ctx
	if deadline := runDeadline(started, cfg.Budget, cfg.Deadline); !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	r := &run{cfg: cfg, ops: *cfg.Ops, log: cfg.Log, now: cfg.Now().UTC(), ctx: ctx, work: work, started: started, report: &rep}
	// A reaper never queues behind another run: WaitLock gives up after one try.
	r.ops.LockWait = time.Millisecond
	r.teardown = cfg.Teardown
	if r.teardown == nil {
		r.teardown = &r.ops
	}

	headers, err := cfg.Ops.Store.List(ctx)
	if err != nil && headers == nil {
		return rep, fmt.Errorf("reaper: list the state headers in %s: %w", cfg.Ops.Store.Location(), err)
	}
	if err != nil {
		// Some documents cannot be read or authenticated: the others are still handled; the bad
		// ones are never mistaken for orphans (the sweep checks for a document under the lock),
		// never spared nor destroyed on what their header says, and reported in every
		// repository's run (the repository they name is not to be believed either).
		r.log.Error("some state headers cannot be read or authenticated", "err", err)
		rep.Decisions = append(rep.Decisions, hostile(err)...)
	}
	rep.Listed = len(headers)
	known, mine := partition(headers, cfg.Repository)
	// Plan decides from the headers and the issues alone; a dry run reports the plan, a run
	// executes it.
	steps := Plan(mine, r.lookUpIssues(mine), r.now, Policy{KeepLabel: cfg.KeepLabel, WarnBefore: cfg.WarnBefore,
		Repository: cfg.Repository, Comment: cfg.Issues != nil})
	rep.Decisions = append(rep.Decisions, r.apply(steps, mine)...)
	if cfg.Inventory != nil {
		rep.Decisions = append(rep.Decisions, r.orphans(known)...)
	}
	if cfg.Pool != nil && cfg.Parked != nil {
		rep.Decisions = append(rep.Decisions, r.parked()...)
	}
	rep.Elapsed = time.Since(started)
	for _, d := range rep.Decisions {
		r.log.Info("reaper", "cluster", d.Cluster, "action", string(d.Action), "reason", string(d.Reason), "detail", d.Detail, "err", d.Err, "dry_run", cfg.DryRun)
	}
	return rep, nil
}

// withDefaults checks cfg and fills its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Ops == nil || cfg.Ops.Store == nil || cfg.Ops.Build == nil {
		return cfg, errors.New("reaper: Config.Ops with a Store and a Build is required")
	}
	if cfg.Issues != nil && cfg.Repository == "" {
		return cfg, errors.New("reaper: GitHub settings without a repository: set Config.Repository (GITHUB_REPOSITORY) to the repository the GitHub client acts on")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Actor == "" {
		cfg.Actor = defaultActor
	}
	if cfg.KeepLabel == "" {
		cfg.KeepLabel = "poc/keep"
	}
	if cfg.Grace <= 0 {
		cfg.Grace = defaultGrace
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	if cfg.Spec.Zone == "" {
		base := provision.DefaultSpec()
		base.ImageBucket, base.DNSZone = cfg.Spec.ImageBucket, cfg.Spec.DNSZone
		cfg.Spec = base
	}
	if len(cfg.Zones) == 0 {
		cfg.Zones = []scw.Zone{scw.Zone(cfg.Spec.Zone)}
	}
	return cfg, nil
}

// runDeadline is the earlier of the deadline and started+budget (zero values: no bound).
func runDeadline(started time.Time, budget time.Duration, deadline time.Time) time.Time {
	if budget > 0 && (deadline.IsZero() || started.Add(budget).Before(deadline)) {
		return started.Add(budget)
	}
	return deadline
}

// partition names every cluster that has a document (known: never an orphan) and keeps the
// headers of repository's clusters (all of them when repository is empty).
func partition(headers []statestore.Header, repository string) (known map[string]bool, mine []statestore.Header) {
	known = make(map[string]bool, len(headers))
	for _, h := range headers {
		known[h.Cluster] = true
		if repository == "" || h.Repository == repository {
			mine = append(mine, h)
		}
	}
	return known, mine
}

// apply runs the plan's steps (or, in a dry run, reports them) in its order: the spared clusters
// before each teardown (keep label recorded, warnings, the runner access a killed run left, the
// schedule's pauses), then the teardown.
func (r *run) apply(steps []Step, mine []statestore.Header) []Decision {
	byName := map[string]statestore.Header{}
	for _, h := range mine {
		byName[h.Cluster] = h
	}
	var out, spared []Decision
	do := func(st Step) Decision {
		if r.cfg.DryRun {
			return r.dry(st)
		}
		return r.execute(st)
	}
	for _, st := range steps {
		if !st.Teardown {
			spared = append(spared, do(st))
			continue
		}
		if spared != nil {
			// closeRunners and schedulePauses say what they would do in a dry run.
			out = append(out, r.schedulePauses(r.closeRunners(spared), byName)...)
			spared = nil
		}
		out = append(out, do(st))
	}
	if spared != nil {
		out = append(out, r.schedulePauses(r.closeRunners(spared), byName)...)
	}
	return out
}

// hostile turns List's per-object errors into report lines.
func hostile(err error) []Decision {
	var le *statestore.ListError
	if !errors.As(err, &le) {
		return nil
	}
	var out []Decision
	for _, b := range le.Bad {
		name := strings.TrimSuffix(strings.TrimPrefix(b.Key, "clusters/"), ".state")
		out = append(out, Decision{Cluster: name, Action: ActionTampered, Err: b.Err,
			Detail: "state object " + b.Key + " fails authentication (edited, damaged, or written with another key): " +
				"nothing is decided on it; compare it with the bucket's earlier versions, restore the right one or remove it, and run `bot down --cluster " + name + "` if its cluster must go"})
	}
	return out
}

// lookUpIssues asks GitHub about the issue or PR of each header that has one, a few at a time.
func (r *run) lookUpIssues(hs []statestore.Header) map[string]*IssueState {
	out := map[string]*IssueState{}
	if r.cfg.Issues == nil {
		return out
	}
	var mu sync.Mutex
	g := errgroup.Group{}
	g.SetLimit(r.cfg.Parallel)
	for _, h := range hs {
		if h.Number <= 0 {
			continue
		}
		g.Go(func() error {
			in := &IssueState{}
			in.Open, in.IsPR, in.Merged, in.Labels, in.Err = r.cfg.Issues.IssueState(r.ctx, h.Number)
			if in.Err != nil {
				in.Err = fmt.Errorf("look up %s#%d: %w", h.Repository, h.Number, in.Err)
			} else if in.Open && slices.Contains(in.Labels, r.cfg.KeepLabel) {
				in.KeepRefused = r.vouch(r.ctx, h.Number)
			}
			mu.Lock()
			out[h.Cluster] = in
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// execute carries out a planned step: the keep label recorded, the one warning posted, the
// teardown (bounded by the run's time and count, skipped when its lock is busy).
func (r *run) execute(st Step) Decision {
	d := st.Decision
	if st.SyncKeep != nil || st.Warn {
		r.record(&d, st)
	}
	if st.Teardown {
		return r.tearDown(d)
	}
	return d
}

// dry is a planned step's report line in a dry run: nothing is executed.
func (r *run) dry(st Step) Decision {
	d := st.Decision
	if st.Warn {
		d.Action, d.Detail = ActionWarned, d.Detail+"; would warn"
	}
	if st.Teardown {
		d.Action, d.Detail = ActionDestroyed, teardownDetail(d, r.now)
	}
	return d
}

func (r *run) request(cluster string) clusterops.Intent {
	// NoCancel: a cluster someone works on is busy, left for the next run; never stopped by the reaper.
	return clusterops.Intent{Cluster: cluster, Spec: r.cfg.Spec, RequestedBy: r.cfg.Actor, RunID: r.cfg.RunID,
		Command: reapCommand, NoCancel: true, ParkFor: r.cfg.ParkFor, ShareParked: r.cfg.ShareParked}
}

// record writes the step's changes to the header in one operation under the cluster's lock
// (clusterops' keep): the keep label (SyncKeep) and the mark of the one warning of this expiry
// (Warn; an expiry moved since the listing, by an extend, is warned for by a later run), then
// posts the warning, once the lock is given back. The mark is set BEFORE the comment so that two
// reapers never both post; if the comment then fails, the mark is taken back so that the next
// run tries again.
func (r *run) record(d *Decision, st Step) {
	h := st.Header
	in := r.request(h.Cluster)
	in.Keep = st.SyncKeep
	if st.Warn {
		in.Warn = h.Expires
	}
	out, err := r.ops.Run(r.ctx, clusterops.VerbKeep, in, nil)
	switch {
	case errors.Is(err, statestore.ErrLocked):
		if st.Warn {
			d.Detail += "; warning left for the next run (cluster busy)"
		}
		return
	case err != nil:
		what := "keep label"
		if st.Warn {
			what = "expiry warning"
		}
		d.Err = errors.Join(d.Err, fmt.Errorf("record the %s of %s: %w", what, h.Cluster, err))
		return
	}
	if out.Warned {
		r.warn(d, h, st.Issue)
	}
}

// warn posts the one warning of this expiry, whose mark record set; if the comment fails, the
// mark is taken back.
func (r *run) warn(d *Decision, h statestore.Header, in *IssueState) {
	v := commands.ExpiryWarningView{Cluster: h.Cluster, Requester: h.RequestedBy,
		At: h.Expires, Now: r.now, KeepLabel: r.cfg.KeepLabel, Accrued: accrued(h, r.now)}
	if in != nil {
		v.KeepIgnored = in.KeepRefused
	}
	if _, err := r.cfg.Issues.CreateComment(r.ctx, h.Number, commands.RenderExpiryWarning(v)); err != nil {
		d.Err = errors.Join(d.Err, fmt.Errorf("post the expiry warning on %s#%d: %w", h.Repository, h.Number, err))
		back := r.request(h.Cluster)
		back.Unwarn = h.Expires
		if _, uerr := r.ops.Run(context.WithoutCancel(r.ctx), clusterops.VerbKeep, back, nil); uerr != nil {
			r.log.Error("take back the warned label after a failed comment; the warning will not be retried", "cluster", h.Cluster, "err", uerr)
		}
		return
	}
	d.Action = ActionWarned
	d.Detail += "; warned"
}

// timeLeft says whether the run's time bound still lets something start.
func (r *run) timeLeft(d *Decision) bool {
	if r.ctx.Err() != nil {
		d.Action, d.Detail = ActionDeferred, d.Detail+"; the run's time bound was reached"
		r.report.Bounded = true
		return false
	}
	return true
}

// countLeft says whether MaxTeardowns lets another destructive action start.
func (r *run) countLeft(d *Decision) bool {
	if r.cfg.MaxTeardowns > 0 && r.done >= r.cfg.MaxTeardowns {
		d.Action, d.Detail = ActionDeferred, d.Detail+fmt.Sprintf("; this run's bound of %d teardowns was reached", r.cfg.MaxTeardowns)
		r.report.Bounded = true
		return false
	}
	return true
}

// lockBusy reads the cluster's lock; a live lease means someone works on it now. Lock leases
// are in the store's (real) clock, not the reaper's decision clock.
func (r *run) lockBusy(cluster string) (*statestore.LockInfo, error) {
	li, err := r.ops.Store.ReadLock(r.ctx, cluster)
	if err != nil || li == nil || !time.Now().Before(li.Expires) {
		return nil, err
	}
	return li, nil
}

func busyDetail(li *statestore.LockInfo) string {
	return fmt.Sprintf("locked by %s (%s, run %s) until %s", orDash(li.Actor), orDash(li.Command), orDash(li.RunID), li.Expires.UTC().Format(time.RFC3339))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mayStart decides whether a destructive action on cluster starts now: time and count left, the
// lock free; a dry run records dryAction instead. When it returns true the action is counted.
func (r *run) mayStart(d *Decision, cluster string, dryAction Action) bool {
	if !r.timeLeft(d) {
		return false
	}
	li, err := r.lockBusy(cluster)
	if err != nil {
		d.Action, d.Err = ActionFailed, fmt.Errorf("read the lock of %s: %w", cluster, err)
		return false
	}
	if li != nil {
		d.Action, d.Detail = ActionBusy, d.Detail+"; "+busyDetail(li)
		return false
	}
	if !r.countLeft(d) {
		return false
	}
	if r.cfg.DryRun {
		d.Action = dryAction
		return false
	}
	r.done++
	return true
}

// teardownDetail is a due teardown's reason in words, at now (the clock that decided it).
func teardownDetail(d Decision, now time.Time) string {
	switch d.Reason {
	case commands.ReapExpired:
		return "expired " + commands.FormatDuration(now.Sub(d.Expires)) + " ago"
	case commands.ReapMerged:
		return "pull request merged"
	case commands.ReapClosed:
		return "issue or pull request closed"
	}
	return d.Detail
}

func (r *run) tearDown(d Decision) Decision {
	d.Detail = teardownDetail(d, r.now)
	if !r.mayStart(&d, d.Cluster, ActionDestroyed) {
		return d
	}
	req := r.request(d.Cluster)
	// The reason was read at the listing; teardowns run one after another and take minutes, so it
	// is checked again: the issue's state now (on GitHub, before the lock: no GitHub call is made
	// under a lock), and, under the lock, the expiry the header records (an extend).
	if why := r.stillDue(d); why != "" {
		r.done--
		d.Action, d.Detail = ActionNone, d.Detail+"; not torn down: "+why
		return d
	}
	if d.Reason == commands.ReapExpired {
		req.Precondition.ExpiredAt = r.now
	}
	res, err := r.teardown.Down(r.work, req)
	if res != nil && res.Report != nil {
		d.Deleted = res.Report.Deleted
	}
	var locked *statestore.LockedError
	switch {
	case errors.Is(err, clusterops.ErrPrecondition):
		r.done--
		d.Action, d.Detail = ActionNone, d.Detail+"; not torn down: "+err.Error()
		return d
	case errors.As(err, &locked):
		d.Action, d.Detail = ActionBusy, d.Detail+"; "+busyDetail(&locked.Holder)
		return d
	case err != nil:
		d.Action, d.Err = ActionFailed, fmt.Errorf("tear down %s (retried next run): %w", d.Cluster, err)
		return d
	case res == nil || res.Header.Cluster == "":
		// The document was gone once the lock was ours: another run destroyed it first.
		d.Action, d.Detail = ActionGone, d.Detail+"; already torn down by another run"
		return d
	}
	d.Action = ActionDestroyed
	d.Detail += fmt.Sprintf("; %d resources deleted", len(d.Deleted))
	if r.cfg.Issues != nil && d.Number > 0 && d.Repository == r.cfg.Repository {
		view := commands.ReapedView{Reason: d.Reason, ExpiredAt: d.Expires, Down: commands.DownView{
			Cluster: d.Cluster, Duration: res.Report.Elapsed, Accrued: accrued(res.Header, r.now)}}
		for _, x := range d.Deleted {
			view.Down.Deleted = append(view.Down.Deleted, commands.DeletedResource{Kind: x.Kind, Name: x.Name, ID: x.ID})
		}
		// Past the run's bound too: a teardown without its notice would surprise the issue.
		cctx, cancel := context.WithTimeout(r.work, 30*time.Second)
		defer cancel()
		if _, err := r.cfg.Issues.CreateComment(cctx, d.Number, commands.RenderReaped(view)); err != nil {
			d.Err = fmt.Errorf("post the teardown notice on %s#%d: %w", d.Repository, d.Number, err)
		}
		if r.cfg.Gone != nil {
			r.cfg.Gone(cctx, d.Cluster, d.Number)
		}
	}
	return d
}

// stillDue asks GitHub again about the issue of a teardown's decision: "" when it is still due,
// else why not (reopened, or the keep label added since the listing by someone who may).
func (r *run) stillDue(d Decision) string {
	if r.cfg.Issues == nil || d.Number == 0 || d.Repository != r.cfg.Repository {
		return ""
	}
	open, _, _, labels, err := r.cfg.Issues.IssueState(r.work, d.Number)
	switch {
	case err != nil:
		return fmt.Sprintf("check %s#%d again: %v", d.Repository, d.Number, err)
	case d.Reason != commands.ReapExpired && open:
		return fmt.Sprintf("%s#%d was reopened", d.Repository, d.Number)
	// A closed issue goes, kept or not; so does a paused cluster past max_paused.
	case d.Reason == commands.ReapExpired && lifecycle.Phase(d.Phase) != lifecycle.PhasePaused &&
		slices.Contains(labels, r.cfg.KeepLabel) && r.vouch(r.work, d.Number) == nil:
		return fmt.Sprintf("the %s label was added to %s#%d", r.cfg.KeepLabel, d.Repository, d.Number)
	}
	return ""
}

// closeRunners removes, from every cluster spared, the runner's temporary admin rule that a killed
// run left in its security group (clusterops.Ops.CloseRunnerAccess): the rule is for one run
// only. A cluster whose lock is held is left to the run holding it; a dry run only reads.
func (r *run) closeRunners(spared []Decision) []Decision {
	for i, d := range spared {
		if d.Action == ActionTampered || r.ctx.Err() != nil {
			continue
		}
		if li, err := r.lockBusy(d.Cluster); err != nil || li != nil {
			continue
		}
		if r.cfg.DryRun {
			_, st, err := r.ops.Load(r.ctx, d.Cluster)
			if err == nil && st.Outputs[scaleway.OutAdminTemporary] != "" {
				spared[i].Detail += "; would close the runner access " + st.Outputs[scaleway.OutAdminTemporary] + " left by a killed run"
			}
			continue
		}
		cidr, err := r.ops.CloseRunnerAccess(r.work, clusterops.Intent{Cluster: d.Cluster, RequestedBy: r.cfg.Actor, RunID: r.cfg.RunID, Command: "close runner access"})
		switch {
		case err != nil:
			spared[i].Err = errors.Join(d.Err, err)
		case cidr != "":
			spared[i].Detail += "; closed the runner access " + cidr + " left by a killed run"
		}
	}
	return spared
}

// accrued prices a cluster's life so far from the daily cost recorded in its header, if any, by
// the started hour as every other accrued figure the bot writes (cost.Quote.Accrued).
func accrued(h statestore.Header, now time.Time) string {
	m, err := clusterops.MetaOf(h)
	n := m.DailyCostNanos
	if err != nil || n <= 0 || h.Created.IsZero() || now.Before(h.Created) {
		return ""
	}
	return cost.AccruedAtDaily(cost.EUR(0, n), h.Created, now).Format(2)
}

// Opportunistic bounds cfg for the pass at the start of every bot run (GitHub disables the
// schedules of repositories idle for 60 days, so event runs must reap too): at most one teardown
// and a few seconds of deciding, unless cfg says otherwise. Call it once the event's own
// acknowledgement is out, since a teardown it starts runs to its end.
func Opportunistic(cfg Config) Config {
	if cfg.MaxTeardowns == 0 {
		cfg.MaxTeardowns = 1
	}
	if cfg.Budget == 0 && cfg.Deadline.IsZero() {
		cfg.Budget = 20 * time.Second
	}
	return cfg
}

// vouch checks the keep label on issue number (clusterops.KeepVouched, the one keep rule): nil
// when it counts. Without Labelers (or Issues implementing it) it does not count.
func (r *run) vouch(ctx context.Context, number int) *commands.KeepRefusal {
	lb := r.cfg.Labelers
	if lb == nil {
		lb, _ = r.cfg.Issues.(Labelers)
	}
	if lb == nil {
		return &commands.KeepRefusal{Unknown: "the reaper was given no way to ask GitHub who added it"}
	}
	return clusterops.KeepVouched(ctx, lb, number, r.cfg.KeepLabel)
}
