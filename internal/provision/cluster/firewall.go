package cluster

import (
	"errors"
	"slices"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// firewall is every node's Talos ingress firewall (talos.Firewall): the cluster's own ports from
// the nodes' addresses only; the worker's Talos API from the spec's admin CIDRs and the nodes; the
// control planes' Talos and Kubernetes APIs from everyone, gated by the security group.
//
// The runner's CIDR is never among its sources, whatever the run: the security group admits the
// runner to the control planes for its run only (admin-access-open … admin-access-close), and the
// bot reaches the worker through a control plane's apid (talos.Through), from the control plane's
// address. So no machine configuration keeps a runner's address, and a later run from any
// address reaches the cluster once its own run opened the group. See provision/netpolicy's
// package doc and docs/architecture.md, "Network policy".
func firewall(r *provision.Run, cpIPs []string) (*talos.Firewall, error) {
	spec := r.Spec()
	w, ok := r.Resource(scaleway.NodeWorker)
	if !ok || w.Attrs["ipv4"] == "" {
		return nil, errors.New("no worker address recorded: the nodes' firewall needs it")
	}
	return &talos.Firewall{
		AdminCIDRs:         spec.AdminCIDRs,
		NodeIPs:            append(slices.Clone(cpIPs), w.Attrs["ipv4"]),
		ControlPlaneIPs:    cpIPs,
		EdgeOnControlPlane: spec.ExposeEdgeOnControlPlane,
	}, nil
}
