package clusterops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Phase is where a cluster or an operation stands (lifecycle.Phase); the constants are
// lifecycle's.
type Phase = lifecycle.Phase

// Intent is what an adapter (a comment, a pull-request event, the CLI, the schedule) asks of one
// cluster: who asks, for which repository and number, with which overrides and within which
// bounds. The operation decides everything else (see Outcome).
type Intent struct {
	Cluster string
	// Spec is the spec of a cluster this intent creates (the seed's defaults plus the bucket).
	Spec provision.Spec
	// Override applies what the requester asked for explicitly, to the new spec or to the
	// existing cluster's spec (so that a bare `up` converges an existing cluster unchanged).
	Override func(*provision.Spec)
	// TTL sets the expiry of a cluster this intent creates (an existing cluster keeps its expiry:
	// extending is its own operation); 0 takes Bounds' default_ttl.
	TTL time.Duration
	// Repository and Number own the cluster (an issue or pull request; 0 for an operator's).
	Repository string
	Number     int
	Kind       string // "issue", "pull" or ""
	// RequestedBy is the requester's login, RequesterID their immutable account id (0: unknown).
	RequestedBy string
	RequesterID int64
	RunID       string
	Command     string
	Progress    provision.Progress
	// Bounds are the repository's bounds (`.github/poc.yml`, or the CLI's environment): budget,
	// allowed DNS zones, TTL range. Nil: unbounded (the schedule's teardowns, tests of the engine).
	Bounds *repoconfig.RepoConfig
	// Closed says that the issue or pull request is closed: an up is refused (the schedule would
	// tear the cluster down at its next run).
	Closed bool
	// Scope, when set, confines the intent to that repository's clusters (a workflow of one
	// repository, GITHUB_REPOSITORY): another repository's cluster is refused. An intent with a
	// Number is confined to its repository and number whatever Scope says.
	Scope string
	// DryRun makes Up report what it would do, without the lock and without changing anything.
	DryRun bool
	// Witness, when set, returns the state serial recorded outside the bucket (the cluster's status
	// comment): a document older than it was rolled back, and a new document continues above it.
	Witness func(ctx context.Context) (int64, error)
	// Started, when set, is called once the operation is admitted and before it changes anything,
	// with the outcome so far (spec, quote, whether the cluster exists); it returns the id of the
	// status comment to record in the header (0: none). Up and Down write the header once with it.
	Started func(ctx context.Context, o *Outcome) int64
	// Precondition, when set, is checked on an existing cluster's header read under the lock: a
	// reaper's reason to destroy (expired, say) must still hold once the lock is its own, since an
	// extend may have landed between its listing and the lock.
	Precondition func(statestore.Header) error
	// ParkFor > 0 makes a Down park the Elastic Metal worker in the bucket's pool for that long
	// instead of deleting it (park_for, --park-for); the Ops' graph must have a pool.
	ParkFor time.Duration
	// ParkWhileScarce > 0 makes a Pause park the worker for that long, park_for or not, while its
	// offer is not in stock (the schedule's pause: its resume would order the offer again).
	ParkWhileScarce time.Duration
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
}

// Outcome is what an operation decided and did. Phase is always set; Refusal is set (and
// returned as the error) when the operation was refused before it changed anything.
type Outcome struct {
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

// preflightIntent decides what needs no state: a closed issue; a DNS zone asked for explicitly by a
// repository's user (an intent with a number) outside the repository's dns_zones — any write
// user could otherwise add records to every zone the bot's API key reaches; an operator's intent
// may use any zone its key reaches.
func preflightIntent(in Intent) *Refusal {
	if in.Closed {
		return &Refusal{Kind: lifecycle.RefuseClosed, Cluster: in.Cluster, IsPR: in.Kind == "pull"}
	}
	if in.Number == 0 || in.Bounds == nil || in.Override == nil {
		return nil
	}
	var asked provision.Spec // the override sets only what was asked for explicitly
	in.Override(&asked)
	if asked.DNSZone != "" && in.Bounds.CheckDNSZone(asked.DNSZone) != nil {
		return &Refusal{Kind: lifecycle.RefuseDNSZone, Cluster: in.Cluster, Zone: asked.DNSZone, Zones: in.Bounds.DNSZones}
	}
	return nil
}

// Extend moves a cluster's expiry later by d (from now when it has passed), never beyond now +
// the bounds' max_ttl; a new expiry re-arms the one expiry warning. It writes the header once,
// under the cluster's lock.
func (o *Ops) Extend(ctx context.Context, in Intent, d time.Duration) (*Outcome, error) {
	out := &Outcome{}
	now := o.now()
	var ref *Refusal
	h, err := o.Update(ctx, in, func(h *statestore.Header) error {
		if ref = Owned(*h, in); ref != nil {
			return ref
		}
		base := h.Expires
		if base.Before(now) {
			base = now
		}
		next := base.Add(d)
		if life := next.Sub(now); in.Bounds != nil && life > in.Bounds.MaxTTL {
			ref = &Refusal{Kind: lifecycle.RefuseMaxTTL, Cluster: in.Cluster, Requested: life, Max: in.Bounds.MaxTTL}
			return ref
		}
		h.Expires = next
		return EditMeta(h, func(m *Meta) error { m.WarnedFor = time.Time{}; return nil })
	})
	switch {
	case ref != nil:
		return refused(out, ref)
	case errors.Is(err, ErrNoCluster):
		return refused(out, &Refusal{Kind: lifecycle.RefuseNoCluster, Cluster: in.Cluster, Err: err})
	case err != nil:
		return o.lockRefusal(out, in, err, o.lockWait())
	}
	out.Exists, out.Header, out.Phase = true, h, Phase(h.Phase)
	return out, nil
}
