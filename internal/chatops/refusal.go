package chatops

import (
	"context"
	"fmt"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

// refusal answers an operation clusterops refused: the reply for its kind (rendered by
// commands.RenderRefused), then 😕. The decision is clusterops'; this only translates it.
func (r *run) refusal(ctx context.Context, out *clusterops.Outcome) error {
	ref := out.Refusal
	why := string(ref.Kind)
	switch ref.Kind {
	case lifecycle.RefuseCollision, lifecycle.RefuseScope:
		why = "name collision with " + ref.Owner
	}
	return r.refuse(ctx, why, commands.RenderRefused(r.refusedView(out)))
}

// refusedView is the reply's view of a refusal.
func (r *run) refusedView(out *clusterops.Outcome) commands.RefusedView {
	ref := out.Refusal
	v := commands.RefusedView{Kind: ref.Kind, Cluster: r.cluster, Config: r.pcfg, IsPR: ref.IsPR, Zone: ref.Zone, Zones: ref.Zones,
		Detail: ref.Error(), Owner: ref.Owner, OwnerNumber: ref.OwnerNumber, Serial: ref.Serial, Witness: ref.Witness,
		Lock: lockView(ref.Holder, ref.Waited), Requested: ref.Requested, Max: ref.Max, Phase: ref.Phase}
	switch ref.Kind {
	case lifecycle.RefuseInvalid:
		v.Detail = ref.Err.Error()
	case lifecycle.RefuseChanges:
		v.Plan = commands.PlanView{Cluster: r.cluster, Changes: changes(ref.InPlace, ref.Changes), Talos: out.Spec.TalosVersion, AdminCIDRs: out.Spec.AdminCIDRs}
	case lifecycle.RefuseBudget:
		v.Budget = budgetView(ref)
		if v.Budget == nil {
			v.Detail = ref.Err.Error()
		}
	case lifecycle.RefuseQuota:
		v.Quota = quotaView(ref.Err, out.Preflight)
	}
	return v
}

// budgetView is the reply's view of a budget refusal (nil when the budget could not be checked).
func budgetView(ref *clusterops.Refusal) *commands.BudgetRefusalView {
	be := ref.Budget
	if be == nil {
		return nil
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
	return &v
}
