// Package lifecycle is the vocabulary of a cluster's life, shared by the package that decides it
// (internal/clusterops) and the one that renders it (internal/commands): the Phase an operation
// leaves a cluster in and the Kind of a refusal. It holds no rule of its own beyond what a phase
// means to a reader (its emoji, whether the operation is over), and imports nothing.
package lifecycle

// Phase is where a cluster, or an operation on it, stands. The phases a state document's header
// records are Provisioning, Ready, Failed and Destroying; the others end an operation without a
// document to record them in (Destroyed, Cancelled, Refused, Planned); a pause adds Pausing,
// Paused and Resuming.
type Phase string

// Phases.
const (
	PhaseProvisioning Phase = "provisioning"
	PhaseReady        Phase = "ready"
	PhaseFailed       Phase = "failed"
	PhaseDestroying   Phase = "destroying"
	PhaseDestroyed    Phase = "destroyed"
	PhaseCancelled    Phase = "cancelled"
	PhaseRefused      Phase = "refused"
	PhasePlanned      Phase = "planned"
	// A pause's and a resume's (the header records them).
	PhasePausing  Phase = "pausing"  // snapshot taken or being taken; machines being deleted
	PhasePaused   Phase = "paused"   // no machine: reserved IPs, security group, DNS, state and snapshot kept
	PhaseResuming Phase = "resuming" // machines being created again, etcd recovered from the snapshot
)

// Emoji is the mark a status comment's title carries for the phase: ⏳ only while work goes on.
func (p Phase) Emoji() string {
	switch p {
	case PhaseReady, PhaseDestroyed, PhasePlanned:
		return "✅"
	case PhaseFailed:
		return "❌"
	case PhaseCancelled:
		return "⏭️"
	case PhaseRefused:
		return "😕"
	case PhasePaused:
		return "⏸️"
	}
	return "⏳"
}

// Kind names why an operation was refused before it changed anything.
type Kind string

// Refusal kinds. Each is decided in one place, internal/clusterops (Permission and Parse are
// decided by internal/commands' policy and grammar, before any operation).
const (
	RefuseClosed     Kind = "closed"               // the issue or pull request is closed
	RefuseDNSZone    Kind = "dns zone not allowed" // --dns-zone outside the repository's dns_zones
	RefuseInvalid    Kind = "invalid settings"     // the requested spec does not validate
	RefuseBudget     Kind = "budget"               // max_clusters, max_daily_eur or an unknown price
	RefuseChanges    Kind = "changes that cannot apply in place"
	RefuseRollback   Kind = "rollback"  // the state is older than its witness on GitHub
	RefuseCollision  Kind = "collision" // the cluster name belongs to another issue or repository
	RefuseScope      Kind = "scope"     // a workflow of one repository asked for another's cluster
	RefuseLocked     Kind = "locked"    // another run holds the cluster's lock past the wait
	RefuseMaxTTL     Kind = "max_ttl"   // an expiry beyond the repository's max_ttl
	RefuseQuota      Kind = "quota"     // the Scaleway project's quota has no room
	RefuseNoCluster  Kind = "no cluster"
	RefusePermission Kind = "permission"
	RefuseParse      Kind = "parse error"
	RefuseNotPaused  Kind = "not paused" // a resume of a cluster that is not paused
	RefuseNotReady   Kind = "not ready"  // a pause of a cluster that is not ready (provisioning, failed…)
	// RefusePrecondition: the schedule's reason to act (expired, ready to pause) no longer holds
	// on the header read under the lock: an extend, a resume or another run landed since.
	RefusePrecondition Kind = "precondition"
)

// Kinds lists every refusal kind, in the order above: the decision's table has a case for each.
func Kinds() []Kind {
	return []Kind{RefuseClosed, RefuseDNSZone, RefuseInvalid, RefuseBudget, RefuseChanges, RefuseRollback, RefuseCollision,
		RefuseScope, RefuseLocked, RefuseMaxTTL, RefuseQuota, RefuseNoCluster, RefusePermission, RefuseParse, RefuseNotPaused,
		RefuseNotReady, RefusePrecondition}
}
