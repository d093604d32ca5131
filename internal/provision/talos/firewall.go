package talos

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/pocbot/pocbot/internal/provision/netpolicy"

	"github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/types/network"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// Firewall is who may open a connection to which port of a node: Talos's ingress firewall, one
// NetworkDefaultActionConfig (ingress: block) and one NetworkRuleConfig per flow of the cluster's
// network-policy table (provision/netpolicy), on every node
// (https://docs.siderolabs.com/talos/v1.13/networking/ingress-firewall). The control planes also
// sit behind the Scaleway security group, rendered from the same table; the Elastic Metal worker
// has nothing else. In block mode Talos itself still lets ICMP in (rate-limited) and traffic from
// the pod and service subnets to the pod and service subnets — not a pod talking to its node's
// own address, which the table's pod-CIDR peers admit.
type Firewall struct {
	// AdminCIDRs reach the worker's Talos API (50000); the control planes' Talos and Kubernetes
	// APIs are open to everyone here and gated by the security group (netpolicy's GroupGated).
	// Never a runner's CIDR: see cluster's firewall.
	AdminCIDRs []string
	// NodeIPs are every node's address (control planes and worker): the cluster's own ports
	// accept them only.
	NodeIPs []string
	// ControlPlaneIPs reach etcd (2379-2380).
	ControlPlaneIPs []string
	// PodCIDRs are the cluster's pod subnets (machinery's default when empty): pods reach their
	// node's kubelet and Cilium health port.
	PodCIDRs []string
	// EdgeOnControlPlane opens 80/443 to everyone on the control planes too (the worker always).
	EdgeOnControlPlane bool
}

// Addresses are the firewall's sources in the network-policy table's terms.
func (f Firewall) Addresses() netpolicy.Addresses {
	pods := f.PodCIDRs
	if len(pods) == 0 {
		pods = []string{constants.DefaultIPv4PodCIDR}
	}
	return netpolicy.Addresses{Admin: f.AdminCIDRs, Nodes: f.NodeIPs, ControlPlanes: f.ControlPlaneIPs, Pods: pods, EdgeOnControlPlane: f.EdgeOnControlPlane}
}

type fwRule struct {
	name  string
	proto nethelpers.Protocol
	ports [][2]uint16
	from  []netip.Prefix
}

// rules lists the ingress rules of a control plane (true) or of the worker: the table's Talos
// rendering.
func (f Firewall) rules(controlPlane bool) ([]fwRule, error) {
	role := netpolicy.Worker
	if controlPlane {
		role = netpolicy.ControlPlane
	}
	rs, err := netpolicy.Talos(role, f.Addresses())
	if err != nil {
		return nil, err
	}
	out := make([]fwRule, 0, len(rs))
	for _, r := range rs {
		proto := nethelpers.ProtocolTCP
		if r.Proto == netpolicy.UDP {
			proto = nethelpers.ProtocolUDP
		}
		out = append(out, fwRule{r.Name, proto, r.Ports, r.From})
	}
	return out, nil
}

// documents renders the firewall of one node as machinery documents.
func (f Firewall) documents(controlPlane bool) ([]config.Document, error) {
	rules, err := f.rules(controlPlane)
	if err != nil {
		return nil, err
	}

	def := network.NewDefaultActionConfigV1Alpha1()
	def.Ingress = nethelpers.DefaultActionBlock

	docs := []config.Document{def}

	for _, r := range rules {
		d := network.NewRuleConfigV1Alpha1()
		d.MetaName = r.name
		d.PortSelector.Protocol = r.proto

		for _, p := range r.ports {
			d.PortSelector.Ports = append(d.PortSelector.Ports, network.PortRange{Lo: p[0], Hi: p[1]})
		}

		for _, s := range r.from {
			d.Ingress = append(d.Ingress, network.IngressRule{Subnet: s})
		}

		docs = append(docs, d)
	}

	return docs, nil
}

// Documents renders the firewall of a control plane (true) or of the worker as the YAML
// documents the machine config carries.
func (f Firewall) Documents(controlPlane bool) ([]byte, error) {
	b, err := withFirewall(nil, f, controlPlane)
	if err != nil {
		return nil, err
	}
	return b[len("---\n"):], nil
}

// withFirewall appends the node's firewall documents to a rendered machine config. The documents
// are the same in the 1.13 and 1.14 contracts (machinery registers them for both); the caller
// validates the result as a whole.
func withFirewall(cfg []byte, f Firewall, controlPlane bool) ([]byte, error) {
	docs, err := f.documents(controlPlane)
	if err != nil {
		return nil, err
	}

	c, err := container.New(docs...)
	if err != nil {
		return nil, fmt.Errorf("firewall documents: %w", err)
	}

	b, err := c.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, fmt.Errorf("encode firewall documents: %w", err)
	}

	out := slices.Clone(cfg)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}

	return append(append(out, "---\n"...), b...), nil
}
