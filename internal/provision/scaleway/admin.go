package scaleway

import (
	"context"
	"slices"

	"github.com/pocbot/pocbot/internal/provision"
)

// OutAdminTemporary is the state output holding the runner's CIDR while a run needs the Talos and
// Kubernetes APIs and the admin CIDRs do not cover the runner. The security group's rules include
// it while it is set; the run removes it at its end (see RefreshRules).
const OutAdminTemporary = "admin_temporary_cidr"

// EffectiveSpec is the run's spec with the temporary admin CIDR, if any, among the admin CIDRs.
func EffectiveSpec(r *provision.Run) provision.Spec {
	spec := r.Spec()
	extra, _ := r.Output(OutAdminTemporary)
	spec.AdminCIDRs = AdmittedCIDRs(spec, extra)
	return spec
}

// AdmittedCIDRs are the CIDRs the security group admits to the APIs: the spec's admin CIDRs,
// plus temporary (the OutAdminTemporary output) when set.
func AdmittedCIDRs(spec provision.Spec, temporary string) []string {
	if temporary == "" || slices.Contains(spec.AdminCIDRs, temporary) {
		return spec.AdminCIDRs
	}
	return append(slices.Clone(spec.AdminCIDRs), temporary)
}

// RefreshRules PUTs the control planes' rules as the run's current spec and outputs say (after the
// temporary admin CIDR was set or cleared); nothing is sent when the group already holds them.
func (d *Driver) RefreshRules(ctx context.Context, r *provision.Run) error {
	sg, err := need(r, NodeSecGroup)
	if err != nil {
		return err
	}
	nodes := []string{}
	for i := range r.Spec().CPCount {
		nodes = append(nodes, NodeIP(i))
	}
	return d.putNodeRules(ctx, r, NodeSecRules, sg.ID, nodes, false)
}
