package chatops

import (
	"context"
	"fmt"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

// refusal answers an operation clusterops refused: the reply for its kind, then 😕. The decision
// is clusterops'; this only renders it.
func (r *run) refusal(ctx context.Context, out *clusterops.Outcome) error {
	ref := out.Refusal
	why := string(ref.Kind)
	var body string
	switch ref.Kind {
	case lifecycle.RefuseClosed:
		what := "issue"
		if ref.IsPR {
			what = "pull request"
		}
		// The schedule tears down the clusters of closed issues and pull requests: a cluster made
		// now would be billed until the next run destroys it (found by the soak).
		body = fmt.Sprintf("😕 **Not run:** this %s is closed, and the schedule tears down the clusters of closed issues and pull requests. "+
			"Reopen it, then comment `/poc up` again.\n\nNothing was created or changed.\n", what)
	case lifecycle.RefuseDNSZone:
		body = commands.ErrorReply(dnsZoneRefusal(ref.Zone, ref.Zones), commands.VerbUp, r.pcfg)
	case lifecycle.RefuseInvalid:
		// The comment's flags make an invalid spec (e.g. an offer the bot cannot use).
		body = commands.ErrorReply(fmt.Errorf("%w: %s", commands.ErrSyntax, commands.Escape(ref.Err.Error())), commands.VerbUp, r.pcfg)
	case lifecycle.RefuseChanges:
		body = fmt.Sprintf("😕 **Not changed:** %s.\n\n", commands.Escape(ref.Error())) +
			commands.RenderPlan(commands.PlanView{Cluster: r.cluster, Changes: changes(ref.InPlace, ref.Changes), Talos: out.Spec.TalosVersion, AdminCIDRs: out.Spec.AdminCIDRs})
	case lifecycle.RefuseBudget:
		body = budgetReply(ref)
	case lifecycle.RefuseCollision, lifecycle.RefuseScope:
		why = "name collision with " + ref.Owner
		body = fmt.Sprintf("😕 **Not run:** the cluster name `%s` is already used by %s#%d (two repositories whose names differ only "+
			"by where the owner ends map to the same name). Nothing was changed. An operator can act on it with `bot … --cluster %s`.\n",
			r.cluster, commands.Escape(ref.Owner), ref.OwnerNumber, r.cluster)
	case lifecycle.RefuseRollback:
		if ref.Err != nil { // the witness could not be read: not a rollback, a failure
			return r.fail(ctx, fmt.Errorf("read the status comment of cluster %q (the witness of its state's serial): %w", r.cluster, ref.Err))
		}
		key := "clusters/" + r.cluster + ".state"
		body = fmt.Sprintf("😕 **Not run:** the state of cluster `%s` in the bucket is serial %d, older than serial %d that its status comment recorded: "+
			"`%s` was rolled back (an older version put back by someone who can write to the bucket, or a restore). Nothing was done. "+
			"Restore the newest version of `%s` from the bucket's versioning and try again; if the older state is the one you want, "+
			"delete the status comment of this cluster first (only people with write access to the repository can).\n",
			r.cluster, ref.Serial, ref.Witness, key, key)
	case lifecycle.RefuseLocked:
		body = lockReply(r.cluster, ref.Holder, r.lockWait())
	case lifecycle.RefuseMaxTTL:
		body = commands.RenderBudgetRefusal(commands.BudgetRefusalView{Limit: commands.LimitMaxTTL,
			Requested: commands.FormatDuration(ref.Requested), Max: commands.FormatDuration(ref.Max)})
	case lifecycle.RefuseQuota:
		body = r.quotaRefusal(ref.Err, out.Preflight)
	case lifecycle.RefuseNoCluster:
		body = commands.RenderStatus(commands.StatusView{Cluster: r.cluster})
	default:
		body = fmt.Sprintf("😕 **Not run:** %s\n", commands.Escape(ref.Error()))
	}
	return r.refuse(ctx, why, body)
}

// budgetReply renders a budget refusal.
func budgetReply(ref *clusterops.Refusal) string {
	be := ref.Budget
	if be == nil {
		return fmt.Sprintf("😕 **Not created:** the budget of `.github/poc.yml` cannot be checked: listing the running clusters failed (%s). Nothing was created; try again in a minute.",
			commands.Escape(ref.Err.Error()))
	}
	v := commands.BudgetRefusalView{Limit: commands.BudgetLimit(be.Limit), Max: be.Max, Running: ref.Running}
	switch v.Limit {
	case commands.LimitMaxClusters:
		v.Current, v.Requested = fmt.Sprintf("%d clusters", be.Running), "1 cluster"
	case commands.LimitMaxDailyEUR:
		v.Current, v.Requested = be.Current.Format(2)+" per day", be.Candidate.Format(2)+" per day"
	case commands.LimitUnknownPrice:
		v.Detail = be.Detail
	}
	return commands.RenderBudgetRefusal(v)
}
