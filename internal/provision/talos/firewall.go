package talos

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/config/config"
	"github.com/siderolabs/talos/pkg/machinery/config/container"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/types/network"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// Firewall is who may open a connection to which port of a node: Talos's ingress firewall, one
// NetworkDefaultActionConfig (ingress: block) and one NetworkRuleConfig per service, on every
// node (https://docs.siderolabs.com/talos/v1.13/networking/ingress-firewall). The control planes
// also sit behind the Scaleway security group; the Elastic Metal worker has nothing else.
//
// The ports are the ones Talos's network-connectivity page lists
// (https://docs.siderolabs.com/talos/v1.13/learn-more/talos-network-connectivity: apid 50000 from
// talosctl and the control planes, trustd 50001 on the control planes from the workers), the
// Kubernetes ones (6443 on the control planes, 10250 kubelet, 2379-2380 etcd between the control
// planes, as talosctl's own firewall patch does: cmd/talosctl/cmd/mgmt/cluster/internal/
// firewallpatch/firewallpatch.go, v1.13.9) and Cilium's between nodes
// (https://docs.cilium.io/en/stable/operations/system_requirements/#firewall-rules: 4240/tcp
// health checks, 51871/udp WireGuard, 8472/udp VXLAN in tunnel mode). In block mode Talos itself
// still lets ICMP in (rate-limited) and traffic between the pod and service subnets.
type Firewall struct {
	// AdminCIDRs reach the Talos API (50000) of every node and the Kubernetes API (6443) of the
	// control planes; during a run they hold the runner's temporary CIDR when the spec's do not
	// cover it (see cluster.Config.RunnerCIDR).
	AdminCIDRs []string
	// NodeIPs are every node's address (control planes and worker): the cluster's own ports
	// accept them only.
	NodeIPs []string
	// ControlPlaneIPs reach etcd (2379-2380).
	ControlPlaneIPs []string
	// EdgeOnControlPlane opens 80/443 to everyone on the control planes too (the worker always).
	EdgeOnControlPlane bool
	// CiliumTunnel opens VXLAN (8472/udp) between nodes.
	CiliumTunnel bool
}

// Well-known ports of the rules (machinery's constants where it has them).
const (
	PortApid          = constants.ApidPort
	PortTrustd        = constants.TrustdPort
	PortKubeAPI       = constants.DefaultControlPlanePort
	PortKubelet       = constants.KubeletPort
	PortEtcdClient    = constants.EtcdClientPort
	PortEtcdPeer      = constants.EtcdPeerPort
	PortCiliumHealth  = 4240
	PortCiliumVXLAN   = 8472
	PortHTTP, PortTLS = 80, 443
)

type fwRule struct {
	name  string
	proto nethelpers.Protocol
	ports [][2]uint16
	from  []netip.Prefix
}

// rules lists the ingress rules of a control plane (true) or of the worker.
func (f Firewall) rules(controlPlane bool) ([]fwRule, error) {
	admin, err := prefixes(f.AdminCIDRs)
	if err != nil {
		return nil, fmt.Errorf("admin CIDRs: %w", err)
	}

	nodes, err := prefixes(f.NodeIPs)
	if err != nil {
		return nil, fmt.Errorf("node IPs: %w", err)
	}

	cps, err := prefixes(f.ControlPlaneIPs)
	if err != nil {
		return nil, fmt.Errorf("control-plane IPs: %w", err)
	}

	if len(nodes) == 0 {
		return nil, fmt.Errorf("the firewall needs the nodes' addresses")
	}

	one := func(p int) [][2]uint16 { return [][2]uint16{{uint16(p), uint16(p)}} }
	anywhere := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	adminOrNode := union(admin, nodes)

	out := []fwRule{
		{"apid-ingress", nethelpers.ProtocolTCP, one(PortApid), adminOrNode},
		{"kubelet-ingress", nethelpers.ProtocolTCP, one(PortKubelet), nodes},
		{"cilium-health-ingress", nethelpers.ProtocolTCP, one(PortCiliumHealth), nodes},
		{"cilium-wireguard-ingress", nethelpers.ProtocolUDP, one(CiliumWireGuardPort), nodes},
	}

	if f.CiliumTunnel {
		out = append(out, fwRule{"cilium-vxlan-ingress", nethelpers.ProtocolUDP, one(PortCiliumVXLAN), nodes})
	}

	if controlPlane {
		out = append(out,
			fwRule{"trustd-ingress", nethelpers.ProtocolTCP, one(PortTrustd), nodes},
			fwRule{"kubernetes-api-ingress", nethelpers.ProtocolTCP, one(PortKubeAPI), adminOrNode},
			fwRule{"etcd-ingress", nethelpers.ProtocolTCP, [][2]uint16{{uint16(PortEtcdClient), uint16(PortEtcdPeer)}}, cps},
		)
	}

	if !controlPlane || f.EdgeOnControlPlane {
		out = append(out, fwRule{"edge-ingress", nethelpers.ProtocolTCP, [][2]uint16{{PortHTTP, PortHTTP}, {PortTLS, PortTLS}}, anywhere})
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

// prefixes parses CIDRs or bare addresses (a bare address is its /32).
func prefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))

	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())

			continue
		}

		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", s)
		}

		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}

	return out, nil
}

// union is a then b without repeats, in order.
func union(a, b []netip.Prefix) []netip.Prefix {
	out := slices.Clone(a)

	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}

	return out
}
