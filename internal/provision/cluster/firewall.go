package cluster

import (
	"errors"
	"slices"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// firewall is every node's Talos ingress firewall for this run (talos.Firewall): the Talos and
// Kubernetes APIs from the admin CIDRs, the cluster's own ports from the nodes' addresses only.
//
// The runner. When the admin CIDRs do not cover POC_RUNNER_CIDR, the run's temporary admin CIDR
// (scaleway.EffectiveSpec) is among the firewall's admin sources, and it stays there for the
// cluster's life: every later run (a rerun of up, a kubeconfig refresh) must reach the nodes
// again, and a node whose firewall was closed to the runner cannot be reopened by it (the worker
// has no security group to open from Scaleway's API). What closes the control planes to the
// runner at the end of each run is the security group (admin-access-close); the worker's Talos
// API stays reachable from the runner's CIDR, where it speaks mutual TLS only. See docs/architecture.md,
// "Network policy".
func firewall(r *provision.Run, cpIPs []string) (*talos.Firewall, error) {
	spec := scaleway.EffectiveSpec(r)
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
