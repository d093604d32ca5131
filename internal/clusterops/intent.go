package clusterops

import (
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Phase is where a cluster or an operation stands (lifecycle.Phase); the constants are
// lifecycle's.
type Phase = lifecycle.Phase

// Verb is an operation on a cluster, as clusterops decides and runs it.
type Verb string

// Verbs. Up, Resume, Down, Pause, Extend and Keep take the cluster's lock and write its header
// once; Status, Cost and Kubeconfig only read.
const (
	VerbUp     Verb = "up"     // create or converge; of a paused cluster, its resume
	VerbResume Verb = "resume" // the up of a paused cluster (another is refused: not paused)
	VerbDown   Verb = "down"   // destroy (the schedule's teardown is a down with a Precondition)
	VerbPause  Verb = "pause"  // snapshot etcd, then delete the machines (the schedule's too)
	VerbExtend Verb = "extend" // a later expiry (Intent.ExtendBy), within max_ttl
	// VerbKeep records the schedule's marks in the header: the keep label as last seen and the
	// one expiry warning (Intent.Keep, Intent.Warn, Intent.Unwarn).
	VerbKeep       Verb = "keep"
	VerbStatus     Verb = "status"     // the header, the state, the lock holder and, asked, the APIs' health
	VerbCost       Verb = "cost"       // the cluster's prices (or the default cluster's, without one)
	VerbKubeconfig Verb = "kubeconfig" // the admin kubeconfig, from its encrypted object
)

// writes says whether the verb takes the cluster's lock and writes its document.
func (v Verb) writes() bool {
	switch v {
	case VerbStatus, VerbCost, VerbKubeconfig:
		return false
	}
	return true
}

// SpecPatch is what a requester set explicitly, by the setting's name in the settings table:
// the flags of a comment, or of `bot up` and their variables (settings.Values, which
// provision.Spec.Apply binds to the spec's fields). A setting left out keeps the spec's value, so
// that a bare up converges an existing cluster unchanged.
type SpecPatch = settings.Values

// Precondition is what the schedule's reason to act said of the header it listed; it must still
// hold on the header read under the lock (an extend, a command's resume, another run's pause may
// have landed since the listing). The zero value always holds.
type Precondition struct {
	// Phase, when set, must be the header's phase (a scheduled pause: ready).
	Phase Phase
	// ExpiredAt, when set, is when the cluster was found expired: the header's expiry must still
	// be set and not after it (a teardown for expiry).
	ExpiredAt time.Time
	// AsleepAt, when set, is when the schedule pauses: no command may keep the cluster awake
	// past it (a scheduled pause: the header's awake_until).
	AsleepAt time.Time
	// Absent: the cluster must not exist (a pull request's job that found none makes it, unless
	// the pull request's own event made it meanwhile: then it waits for that one).
	Absent bool
}

// Intent is what an adapter (a comment, a pull-request event, the CLI, the schedule) asks of one
// cluster: who asks, for which repository and number, with which settings and within which
// bounds, and what it read before asking (the status comment's serial and id). It is data: the
// operation reads what it decides on, decides (Decide), and only then acts, telling an Observer.
type Intent struct {
	Cluster string
	// Spec is the spec of a cluster this intent creates (the seed's defaults plus the bucket).
	Spec provision.Spec
	// Patch is what the requester set explicitly, applied to the new spec or to the existing
	// cluster's spec.
	Patch SpecPatch
	// TTL sets the expiry of a cluster this intent creates (an existing cluster keeps its expiry:
	// extending is its own operation); 0 takes Bounds' default_ttl.
	TTL time.Duration
	// Repository and Number own the cluster (an issue or pull request; 0 for an operator's).
	Repository string
	Number     int
	Kind       string // "issue", "pull" or ""
	// RequestedBy is the requester's login, RequesterID their immutable account id (0: unknown);
	// Permission their role on the repository as GitHub answered it ("" outside a comment): it
	// says whether their command wakes a cluster paused in its window (commands.Wakes).
	RequestedBy string
	RequesterID int64
	Permission  string
	RunID       string
	Command     string
	// Bounds are the repository's bounds (`.github/poc.yml`, or the CLI's environment): budget,
	// allowed DNS zones, TTL range, pause schedule. Nil: unbounded (the schedule's teardowns,
	// tests of the engine).
	Bounds *repoconfig.RepoConfig
	// Closed says that the issue or pull request is closed: an up is refused (the schedule would
	// tear the cluster down at its next run).
	Closed bool
	// Scope, when set, confines the intent to that repository's clusters (a workflow of one
	// repository, GITHUB_REPOSITORY): another repository's cluster is refused. An intent with a
	// Number is confined to its repository and number whatever Scope says.
	Scope string
	// DryRun makes an up decide without the lock and without acting: the decision is the answer.
	DryRun bool
	// Witness is the state serial recorded outside the bucket (the cluster's status comment), read
	// by the adapter before the operation: a document older than it was rolled back, and a new
	// document continues above it. 0: none.
	Witness int64
	// StatusComment is the id of the cluster's status comment, found (or made) by the adapter
	// before the operation; the header's one write records it. 0: none yet.
	StatusComment int64
	// Precondition is the schedule's reason to act, checked on the header read under the lock.
	Precondition Precondition
	// ParkFor > 0 makes a Down park the Elastic Metal worker in the bucket's pool for that long
	// instead of deleting it (park_for, --park-for); the Ops' graph must have a pool.
	ParkFor time.Duration
	// ParkWhileScarce > 0 makes a Pause park the worker for that long, park_for or not, while its
	// offer is not in stock (the schedule's pause: its resume would order the offer again).
	ParkWhileScarce time.Duration
	// ShareParked offers the workers this repository's clusters park to the bucket's other
	// repositories that share theirs, and lets its ups adopt theirs (share_parked_workers);
	// false: a parked worker serves its own repository only (pool.Worker.Offered).
	ShareParked bool
	// MaxPaused > 0 makes a Pause set the paused cluster's expiry to that long from the pause
	// (max_paused), keeping the running lifetime it had left for its resume.
	MaxPaused time.Duration
	// ReleaseIPs makes a Pause delete the reserved IPs too (`--release-ips`): a lower floor, new
	// endpoints at the resume.
	ReleaseIPs bool
	// WorkerOffers are the Elastic Metal offers the worker may take, in order (worker_offers);
	// empty: the spec's baremetal offer alone.
	WorkerOffers []string
	// Quotas are the repository's `quotas:` (.github/poc.yml): the organization's quotas the
	// pre-flight weighs when Scaleway's API does not give them.
	Quotas map[string]int
	// NoCancel makes a Down that finds the lock held give up at once instead of asking the holder
	// to stop (the reaper: a busy cluster is for its next run).
	NoCancel bool
	// IfExists makes a Down of a cluster without a document a refusal (no cluster) instead of a
	// sweep of what carries its tag (a pull request's close, which has nothing to say then).
	IfExists bool
	// ExtendBy is how much later an Extend moves the expiry (from now when it has passed).
	ExtendBy time.Duration
	// Health makes a Status check the APIs of a cluster that has machines.
	Health bool
	// Warm makes an up of a new cluster claim a spare of the warm pool when one fits (a comment's
	// up, a pull request's, `bot up`); Cold says the requester asked for the cold path (`bot up
	// --cold`), which the outcome's Path then says. Neither: no spare is looked at (the schedule,
	// a spare's own build).
	Warm, Cold bool
	// Keep, Warn and Unwarn are a Keep's marks: the keep label as the schedule saw it (nil:
	// unchanged), the expiry to record the one warning for (zero: none; it must still be the
	// header's), and the expiry whose warning mark to take back (its comment failed).
	Keep         *bool
	Warn, Unwarn time.Time
}

// Observer hears an operation that acts: what it decided, once, and the engine's steps while it
// works. Ops never calls it from the code that holds a lock: that code queues what it has to
// say, and Run delivers it, in order, on the caller's goroutine, which holds no lock and which
// the work never waits for. A slow observer (a GitHub call) delays what it hears, never the work.
type Observer interface {
	// Admitted is the decision of an operation that goes ahead: its verb (a wake's resume), the
	// spec, the quote, the pre-flight, the header as first written.
	Admitted(Outcome)
	// Step is one of the engine's step events.
	Step(provision.Event)
}

// Outcome is what an operation decided and did. Phase is always set; Refusal is set (and
// returned as the error) when the operation was refused before it changed anything.
type Outcome struct {
	// Verb is what the operation did: the verb asked, or VerbResume when the command woke a
	// cluster paused inside its window.
	Verb    Verb
	Phase   Phase
	Refusal *Refusal
	Header  statestore.Header
	State   *provision.State
	// Exists says that the cluster had a state document when the operation read it; Created
	// that this operation wrote its first one.
	Exists, Created bool
	// Spec is the spec the operation applied (or, dry, would apply).
	Spec provision.Spec
	// InPlace lists the spec changes applied by this up.
	InPlace []provision.Change
	// Refused lists the changes a dry up would refuse (a real up refuses with RefuseChanges).
	Refused []provision.Change
	// Quote prices Spec over the cluster's remaining life (up).
	Quote cost.Quote
	// Plan lists what a dry up of a new cluster would create, in the graph's order.
	Plan []PlanNode
	// KubeconfigLocation is where the encrypted kubeconfig object is.
	KubeconfigLocation string
	// Report is what down deleted.
	Report *provision.Report
	// Preflight is the up's pre-flight (quotas, stock, the offer taken), when Ops has one; a
	// RefuseQuota refusal carries the *preflight.Refusal as its Err.
	Preflight *preflight.Result
	// ETA is how long the up of a new cluster is expected to take (Ops.ETA; nil without a book,
	// or for an existing cluster).
	ETA *eta.Estimate
	// Status is what a Status found (its lock holder, its health).
	Status *Status
	// Kubeconfig is the admin kubeconfig a Kubeconfig read.
	Kubeconfig []byte
	// Warned says that a Keep marked the header for the one expiry warning: the schedule posts it.
	Warned bool
	// Path says, for an up that asked for the warm pool (Intent.Warm or Cold), which path it took
	// and why: "warm: claimed the warm spare …" or "cold: …".
	Path string
	// Claimed is the spare this operation made the cluster of ("": none; a later up of a cluster
	// once claimed claims nothing, though its header still names the spare it came from).
	Claimed string
}

// PlanNode is one resource a dry up would create.
type PlanNode struct{ Kind, Name string }

// Refusal says why an operation did nothing; its Kind is the decision, the other fields what an
// adapter needs to explain it.
type Refusal struct {
	Kind    lifecycle.Kind
	Cluster string
	// Err is the reason in words where no field below carries it (an invalid spec, a budget that
	// cannot be checked).
	Err error
	// Changes: RefuseChanges (with InPlace, the changes that would apply).
	Changes, InPlace []provision.Change
	// Budget and Running: RefuseBudget (Budget is nil when the budget could not be checked).
	Budget  *cost.BudgetError
	Running []string
	// Holder and Waited: RefuseLocked.
	Holder statestore.LockInfo
	Waited time.Duration
	// Owner and OwnerNumber: RefuseCollision, RefuseScope (the cluster's owner).
	Owner       string
	OwnerNumber int
	// Serial and Witness: RefuseRollback.
	Serial, Witness int64
	// Zone and Zones: RefuseDNSZone (the zone asked for, the zones allowed).
	Zone  string
	Zones []string
	// Requested and Max: RefuseMaxTTL.
	Requested, Max time.Duration
	// IsPR: RefuseClosed.
	IsPR bool
	// Phase: RefuseNotPaused, RefuseNotReady (the phase the cluster is in).
	Phase Phase
}

func (r *Refusal) Error() string {
	switch r.Kind {
	case lifecycle.RefuseChanges:
		var parts []string
		for _, c := range r.Changes {
			parts = append(parts, fmt.Sprintf("%s %v → %v (%s)", c.Field, c.Old, c.New, c.Why))
		}
		return fmt.Sprintf("cluster %q exists with other settings that cannot change in place: %s; run down first, then up with the new settings",
			r.Cluster, strings.Join(parts, "; "))
	case lifecycle.RefuseBudget:
		if r.Budget != nil {
			return fmt.Sprintf("cluster %q refused by the budget: %s", r.Cluster, r.Budget.Error())
		}
		return fmt.Sprintf("cluster %q: the budget cannot be checked: listing the running clusters failed: %v", r.Cluster, r.Err)
	case lifecycle.RefuseLocked:
		return fmt.Sprintf("cluster %q is busy: %s by %s (run %s) holds its lock since %s", r.Cluster, r.Holder.Command, r.Holder.Actor,
			r.Holder.RunID, r.Holder.Since.UTC().Format(time.RFC3339))
	case lifecycle.RefuseCollision, lifecycle.RefuseScope:
		return fmt.Sprintf("cluster %q belongs to %s#%d: run it from that repository", r.Cluster, r.Owner, r.OwnerNumber)
	case lifecycle.RefuseRollback:
		return fmt.Sprintf("the state of cluster %q is serial %d, older than serial %d that its status comment recorded: the bucket was rolled back",
			r.Cluster, r.Serial, r.Witness)
	case lifecycle.RefuseDNSZone:
		return fmt.Sprintf("--dns-zone %s is not a zone this repository allows (%v)", r.Zone, r.Zones)
	case lifecycle.RefuseMaxTTL:
		return fmt.Sprintf("the new expiry of cluster %q would be %s from now, over max_ttl %s", r.Cluster, r.Requested, r.Max)
	case lifecycle.RefuseClosed:
		return fmt.Sprintf("cluster %q: the issue or pull request is closed", r.Cluster)
	case lifecycle.RefuseQuota:
		return fmt.Sprintf("up %s refused by the pre-flight, nothing was created: %v", r.Cluster, r.Err)
	case lifecycle.RefuseNotPaused:
		return fmt.Sprintf("cluster %q is not paused (it is %s): nothing to resume", r.Cluster, r.Phase)
	case lifecycle.RefuseNotReady:
		return fmt.Sprintf("cluster %q cannot be paused now: it is %s; a cluster is paused once ready (run up first, or down)", r.Cluster, r.Phase)
	case lifecycle.RefusePrecondition:
		return fmt.Sprintf("cluster %q: %v", r.Cluster, r.Err)
	}
	if r.Err != nil {
		return fmt.Sprintf("cluster %q refused (%s): %v", r.Cluster, r.Kind, r.Err)
	}
	return fmt.Sprintf("cluster %q refused: %s", r.Cluster, r.Kind)
}

func (r *Refusal) Unwrap() error { return r.Err }

// refused ends an operation with a refusal: the outcome carries it and it is the error.
func refused(out *Outcome, r *Refusal) (*Outcome, error) {
	out.Phase, out.Refusal = lifecycle.PhaseRefused, r
	return out, r
}

// Owned is the one rule of who may act on an existing cluster: the owner recorded in its header
// (repository, number) must be the intent's. An operator's cluster (no repository) and a run by
// hand (no repository, no scope) pass. It returns the refusal, or nil.
func Owned(h statestore.Header, in Intent) *Refusal {
	repo, kind := in.Repository, lifecycle.RefuseCollision
	if in.Number == 0 {
		repo, kind = in.Scope, lifecycle.RefuseScope
	}
	if repo == "" || h.Repository == "" {
		return nil
	}
	if strings.EqualFold(h.Repository, repo) && (in.Number == 0 || h.Number == 0 || h.Number == in.Number) {
		return nil
	}
	return &Refusal{Kind: kind, Cluster: h.Cluster, Owner: h.Repository, OwnerNumber: h.Number}
}

// RolledBack is the rollback rule: a document older than the serial its witness recorded was put
// back by someone who can write to the bucket. It returns the refusal, or nil.
func RolledBack(h statestore.Header, witness int64) *Refusal {
	if witness <= h.Serial {
		return nil
	}
	return &Refusal{Kind: lifecycle.RefuseRollback, Cluster: h.Cluster, Serial: h.Serial, Witness: witness}
}
