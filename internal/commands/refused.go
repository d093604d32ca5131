package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
)

// RefusedView is an operation that clusterops refused, as its reply shows it: Kind chooses the
// reply, and the fields that kind names say what it shows. The decision is clusterops'; this is
// only its text.
type RefusedView struct {
	Kind    lifecycle.Kind
	Cluster string
	// Config is the repository's grammar: RefuseDNSZone and RefuseInvalid answer with the usage.
	Config ParseConfig
	// IsPR: RefuseClosed.
	IsPR bool
	// Zone and Zones: RefuseDNSZone (the zone asked for, the zones the repository allows).
	Zone  string
	Zones []string
	// Detail is the refusal in words where no field carries it: what does not validate
	// (RefuseInvalid), what cannot change in place (RefuseChanges), why the budget could not be
	// checked (RefuseBudget without Budget), and the whole reason of a kind without a reply of
	// its own. It is the bot's own text, shown whole up to maxErrorBytes (escaped): the values it
	// names passed the comment grammar's checks, which bound their length. Raw user input that no
	// check accepted is echoed through Quote (cut at MaxEcho), never through Detail.
	Detail string
	// Plan: RefuseChanges (the changes, those that would apply in place among them).
	Plan PlanView
	// Budget: RefuseBudget; nil when the budget could not be checked.
	Budget *BudgetRefusalView
	// Owner and OwnerNumber: RefuseCollision and RefuseScope (the issue the name belongs to).
	Owner       string
	OwnerNumber int
	// Serial and Witness: RefuseRollback (the bucket's serial, the status comment's).
	Serial, Witness int64
	// Lock: RefuseLocked.
	Lock LockView
	// Requested and Max: RefuseMaxTTL.
	Requested, Max time.Duration
	// Quota: RefuseQuota (the reason in one clause and the pre-flight's tables); nil when the
	// pre-flight said nothing, and the reply is then Detail's.
	Quota *QuotaRefusalView
	// Phase: RefuseNotPaused, RefuseNotReady (the phase the cluster is in).
	Phase lifecycle.Phase
}

// LockView is who holds a cluster's lock, and how long the refused command waited for it.
type LockView struct {
	Command, Actor, RunID string
	Since                 time.Time
	Waited                time.Duration
}

// QuotaRefusalView is an up the pre-flight refused: why in one clause, and its tables.
type QuotaRefusalView struct {
	Reason    string
	Preflight PreflightView
}

// RenderRefused is the reply to a refused operation.
func RenderRefused(v RefusedView) string { return fit(renderRefused(v)) }

func renderRefused(v RefusedView) string {
	switch v.Kind {
	case lifecycle.RefuseClosed:
		what := "issue"
		if v.IsPR {
			what = "pull request"
		}
		// The schedule tears down the clusters of closed issues and pull requests: a cluster made
		// now would be billed until the next run destroys it (found by the soak).
		return fmt.Sprintf("😕 **Not run:** this %s is closed, and the schedule tears down the clusters of closed issues and pull requests. "+
			"Reopen it, then comment `/poc up` again.\n\nNothing was created or changed.\n", what)
	case lifecycle.RefuseDNSZone:
		return ErrorReply(dnsZoneError(v.Zone, v.Zones), VerbUp, v.Config)
	case lifecycle.RefuseInvalid:
		// The comment's flags make an invalid spec (e.g. an offer the bot cannot use).
		return ErrorReply(fmt.Errorf("%w: %s", ErrSyntax, cellText(v.Detail, maxErrorBytes)), VerbUp, v.Config)
	case lifecycle.RefuseChanges:
		return fmt.Sprintf("😕 **Not changed:** %s.\n\n", cellText(v.Detail, maxErrorBytes)) + RenderPlan(v.Plan)
	case lifecycle.RefuseBudget:
		if v.Budget == nil {
			return fmt.Sprintf("😕 **Not created:** the budget of `.github/poc.yml` cannot be checked: listing the running clusters failed (%s). Nothing was created; try again in a minute.",
				cellText(v.Detail, maxErrorBytes))
		}
		return RenderBudgetRefusal(*v.Budget)
	case lifecycle.RefuseCollision, lifecycle.RefuseScope:
		return fmt.Sprintf("😕 **Not run:** the cluster name `%s` is already used by %s#%d (two repositories whose names differ only "+
			"by where the owner ends map to the same name). Nothing was changed. An operator can act on it with `bot … --cluster %s`.\n",
			v.Cluster, Escape(v.Owner), v.OwnerNumber, v.Cluster)
	case lifecycle.RefuseRollback:
		key := "clusters/" + v.Cluster + ".state"
		return fmt.Sprintf("😕 **Not run:** the state of cluster `%s` in the bucket is serial %d, older than serial %d that its status comment recorded: "+
			"`%s` was rolled back (an older version put back by someone who can write to the bucket, or a restore). Nothing was done. "+
			"Restore the newest version of `%s` from the bucket's versioning and try again; if the older state is the one you want, "+
			"delete the status comment of this cluster first (only people with write access to the repository can).\n",
			v.Cluster, v.Serial, v.Witness, key, key)
	case lifecycle.RefuseLocked:
		return renderLocked(v.Cluster, v.Lock)
	case lifecycle.RefuseMaxTTL:
		return RenderBudgetRefusal(BudgetRefusalView{Limit: LimitMaxTTL, Requested: FormatDuration(v.Requested), Max: FormatDuration(v.Max)})
	case lifecycle.RefuseQuota:
		if v.Quota != nil {
			return RenderQuotaRefusal(v.Cluster, v.Quota.Reason, v.Quota.Preflight)
		}
	case lifecycle.RefuseNoCluster:
		return RenderStatus(StatusView{Cluster: v.Cluster})
	case lifecycle.RefuseNotPaused:
		return fmt.Sprintf("😕 **Not run:** cluster `%s` is not paused (it is %s): nothing to resume. "+
			"`/poc pause` pauses it, `/poc up` converges it.\n", v.Cluster, Escape(string(v.Phase)))
	case lifecycle.RefuseNotReady:
		return fmt.Sprintf("😕 **Not paused:** cluster `%s` is %s: a cluster is paused once it is ready, so that its etcd snapshot holds "+
			"a whole cluster. Nothing was changed. `/poc up` finishes (or retries) its up, `/poc status` says where it stands, "+
			"`/poc down` removes it.\n", v.Cluster, Escape(string(v.Phase)))
	}
	return fmt.Sprintf("😕 **Not run:** %s\n", cellText(v.Detail, maxErrorBytes))
}

// renderLocked explains a lock that stayed busy past the wait bound.
func renderLocked(cluster string, l LockView) string {
	who := l.Command
	if who == "" {
		who = "another run"
	}
	if l.Actor != "" {
		who += " by " + l.Actor
	}
	if l.RunID != "" {
		who += " (run " + l.RunID + ")"
	}
	return fmt.Sprintf("⏳ **Not run:** cluster `%s` is busy: %s holds its lock since %s. This command waited %s and gave up; "+
		"nothing was changed. Comment again once that run has finished.\n",
		cluster, cellText(who, maxCellBytes), l.Since.UTC().Format("2006-01-02 15:04 UTC"), FormatDuration(l.Waited))
}

// dnsZoneError says why `--dns-zone zone` is refused and which setting allows it: any write
// user could otherwise add records to every zone the bot's API key reaches.
func dnsZoneError(zone string, allowed []string) error {
	list := "none is listed"
	if len(allowed) > 0 {
		q := make([]string, len(allowed))
		for i, z := range allowed {
			q[i] = Quote(z)
		}
		list = "allowed: " + strings.Join(q, ", ")
	}
	return fmt.Errorf("%w: --dns-zone %s is not a zone this repository allows (%s); a maintainer lists the zones clusters may use under `dns_zones` in `%s`",
		ErrSyntax, Quote(zone), list, repoconfig.Path)
}
