// Package netpolicy is the cluster's network policy as one table of flows: who may open a
// connection to which port of which node, why, and where that need is documented. Both gates in
// front of a node are rendered from it, so that they cannot disagree: the control planes'
// Scaleway security group (SecurityGroup, used by provision/scaleway) and every node's Talos
// ingress firewall (Talos, used by provision/talos). A test holds the two renderings equal.
//
// The routing mode the table serves is Cilium's tunnel mode (VXLAN) with WireGuard, the one that
// works across Scaleway's L3 subnets (see provision/talos's package doc, "Routing"): traffic to a
// remote pod, a pod's or a host's, leaves as VXLAN inside WireGuard (UDP 51871) between node
// addresses, and the decrypted VXLAN (UDP 8472, from the peer node's address) meets the Talos
// firewall again.
//
// Two peers never cross the security group, so its rendering leaves them out: the pod CIDR (a
// pod talking to its own node: after decapsulation a remote pod's packet arrives from the pod
// CIDR too, but the group only ever sees the tunnel's outer packet between node addresses). And
// ICMP is admitted by Talos's own chain in block mode (nftables_chain_config.go), so the Talos
// rendering leaves out the ICMP flow that the group needs.
//
// The runner. The bot's runner (a GitHub-hosted runner: a new address at every run) must reach
// the control planes' Talos and Kubernetes APIs during its run and never after. Only the security
// group can admit it for one run: a runner can open the group through Scaleway's API from
// anywhere, but it could not reach a node whose Talos firewall does not already admit it to patch
// that firewall. So the flows marked GroupGated (the Talos API and the Kubernetes API) are open to
// everyone in the control planes' Talos firewall, and the group, which holds the runner's CIDR
// (the Admin peer, while its run lasts) and is closed again at the end of every run, is their
// only gate; both APIs authenticate every caller (mutual TLS, client certificates). The worker has
// no security group: its Talos firewall admits its Talos API from the admin CIDRs and the nodes
// only, never a runner, and the bot reaches it through a control plane's apid, which forwards a
// request carrying the "node" metadata from the control plane's own address (talos
// internal/app/apid/pkg/director/director.go, singleDirector, @v1.13.9). The runner's CIDR is thus
// written into no machine configuration.
package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// Peer is a class of sources.
type Peer string

// The peers of the table.
const (
	Admin         Peer = "admin CIDRs"    // spec.AdminCIDRs; in the security group, plus the run's runner CIDR while it runs
	Nodes         Peer = "node IPs"       // every node's address, control planes and worker
	ControlPlanes Peer = "control planes" // the control planes' addresses
	Pods          Peer = "pod CIDR"       // the cluster's pods (never seen by the security group)
	Anyone        Peer = "anyone"         // 0.0.0.0/0
)

// Role is a kind of node.
type Role string

// Roles.
const (
	ControlPlane Role = "control plane"
	Worker       Role = "worker"
)

// Proto is a transport protocol as both renderings name it.
type Proto string

// Protocols.
const (
	TCP  Proto = "TCP"
	UDP  Proto = "UDP"
	ICMP Proto = "ICMP"
)

// Ports of the table (machinery's constants where it has them). One definition each: the
// renderings, the Talos config and the stand-ins read them from here.
const (
	PortApid            = constants.ApidPort
	PortTrustd          = constants.TrustdPort
	PortKubeAPI         = constants.DefaultControlPlanePort
	PortKubelet         = constants.KubeletPort
	PortEtcdClient      = constants.EtcdClientPort
	PortEtcdPeer        = constants.EtcdPeerPort
	PortCiliumHealth    = 4240
	PortCiliumVXLAN     = 8472
	PortCiliumWireGuard = 51871
	PortHTTP            = 80
	PortHTTPS           = 443
)

// Flow is one row of the table.
type Flow struct {
	// Name is the Talos NetworkRuleConfig document's name.
	Name  string
	Proto Proto
	// Ports are inclusive ranges; nil for ICMP.
	Ports [][2]uint16
	From  []Peer
	To    []Role
	// EdgeOnControlPlane: the flow reaches the control planes too when the spec says
	// expose_edge_on_control_plane.
	EdgeOnControlPlane bool
	// GroupGated: on the control planes the Talos firewall admits everyone to the flow and the
	// security group alone decides who reaches it (the runner's CIDR only during its run; see
	// the package doc). The worker's Talos firewall keeps the flow's peers.
	GroupGated bool
	// BehindTunnel: the packet exists only once WireGuard has decrypted it on the node, so the
	// Talos firewall judges it and the security group never meets it (nor renders it: an open
	// port the group never needs is surface for nothing).
	BehindTunnel bool
	// Why the flow exists, and the document or source file that says so.
	Why, Source string
}

func one(p int) [][2]uint16 { return [][2]uint16{{uint16(p), uint16(p)}} }

var both = []Role{ControlPlane, Worker}

// Flows is the table, in the order both renderings keep.
func Flows() []Flow {
	return []Flow{
		{Name: "apid-ingress", Proto: TCP, Ports: one(PortApid), From: []Peer{Admin, Nodes}, To: both, GroupGated: true,
			Why: "talosctl from the admins, and from the runner during its run (on the control planes: the security group decides); " +
				"a control plane forwards a request for another node to that node's apid, which is how the runner reaches the worker",
			Source: "https://docs.siderolabs.com/talos/v1.13/learn-more/talos-network-connectivity; talos internal/app/apid/pkg/director/director.go @v1.13.9"},
		{Name: "trustd-ingress", Proto: TCP, Ports: one(PortTrustd), From: []Peer{Nodes}, To: []Role{ControlPlane},
			Why:    "a worker gets its Talos API certificate from a control plane's trustd",
			Source: "https://docs.siderolabs.com/talos/v1.13/learn-more/talos-network-connectivity"},
		{Name: "kubernetes-api-ingress", Proto: TCP, Ports: one(PortKubeAPI), From: []Peer{Admin, Nodes}, To: []Role{ControlPlane}, GroupGated: true,
			Why:    "kubectl from the admins and the runner during its run (the security group decides); every kubelet (and Talos's trustd discovery) on the nodes",
			Source: "https://docs.siderolabs.com/talos/v1.13/learn-more/talos-network-connectivity"},
		{Name: "etcd-ingress", Proto: TCP, Ports: [][2]uint16{{PortEtcdClient, PortEtcdPeer}}, From: []Peer{ControlPlanes}, To: []Role{ControlPlane},
			Why:    "etcd peers and clients between the control planes only",
			Source: "talos cmd/talosctl/cmd/mgmt/cluster/internal/firewallpatch/firewallpatch.go @v1.13.9"},
		{Name: "kubelet-ingress", Proto: TCP, Ports: one(PortKubelet), From: []Peer{Nodes, Pods}, To: both,
			Why:    "the API server (logs, exec) from the control planes; metrics-server and node exporters scrape their own node from the pod CIDR",
			Source: "https://kubernetes.io/docs/reference/networking/ports-and-protocols/; talos nftables_chain_config.go @v1.13.9 admits pod traffic only to pod/service addresses"},
		{Name: "cilium-health-ingress", Proto: TCP, Ports: one(PortCiliumHealth), From: []Peer{Nodes, Pods}, To: both,
			Why:    "Cilium's health checks: agents probe every node, and each node's health endpoint (an address of the pod CIDR) probes them too",
			Source: "https://docs.cilium.io/en/v1.18/operations/system_requirements/#firewall-rules"},
		{Name: "cilium-vxlan-ingress", Proto: UDP, Ports: one(PortCiliumVXLAN), From: []Peer{Nodes}, To: both, BehindTunnel: true,
			Why:    "tunnel mode: traffic to a remote pod is VXLAN inside WireGuard; decrypted on cilium_wg0 it is VXLAN from the peer node's address, which the Talos firewall judges again (the security group only sees the WireGuard packet)",
			Source: "https://docs.cilium.io/en/v1.18/operations/system_requirements/#firewall-rules; cilium bpf/lib/wireguard.h (1.18 line), PR #29000; talos nftables_chain_config.go @v1.13.9"},
		{Name: "cilium-wireguard-ingress", Proto: UDP, Ports: one(PortCiliumWireGuard), From: []Peer{Nodes}, To: both,
			Why:    "traffic to a remote pod, a pod's or a host's (tunnel mode encrypts the whole overlay), encrypted by Cilium's WireGuard between node addresses",
			Source: "https://docs.cilium.io/en/v1.18/operations/system_requirements/#firewall-rules; cilium bpf/lib/wireguard.h (1.18 line), PR #29000"},
		{Name: "edge-ingress", Proto: TCP, Ports: [][2]uint16{{PortHTTP, PortHTTP}, {PortHTTPS, PortHTTPS}}, From: []Peer{Anyone}, To: []Role{Worker}, EdgeOnControlPlane: true,
			Why:    "the edge gateway's HTTP and HTTPS (NodePorts 80 and 443) on the worker; on the control planes with expose_edge_on_control_plane",
			Source: "docs/seed.md, The control planes' security group (the seed's edge rules)"},
		{Name: "edge-quic-ingress", Proto: UDP, Ports: one(PortHTTPS), From: []Peer{Anyone}, To: []Role{Worker}, EdgeOnControlPlane: true,
			Why:    "HTTP/3 (QUIC over UDP 443) on the edge",
			Source: "RFC 9114 §3.1 (HTTP/3 over QUIC, UDP)"},
		{Name: "icmp", Proto: ICMP, From: []Peer{Admin, Nodes}, To: []Role{ControlPlane},
			Why:    "ping and path-MTU discovery; Talos's block chain admits ICMP itself, so only the security group needs it",
			Source: "docs/seed.md, The control planes' security group; talos nftables_chain_config.go @v1.13.9 (ICMP accepted, rate-limited)"},
	}
}

// Addresses are the cluster's sources, as addresses or CIDRs.
type Addresses struct {
	Admin, Nodes, ControlPlanes, Pods []string
	// EdgeOnControlPlane is the spec's expose_edge_on_control_plane.
	EdgeOnControlPlane bool
}

// Rule is a rendered flow: one protocol, its port ranges, and the concrete sources.
type Rule struct {
	Name  string
	Proto Proto
	Ports [][2]uint16
	From  []netip.Prefix
}

// reaches tells whether a flow applies to a node of role.
func (f Flow) reaches(role Role, a Addresses) bool {
	return slices.Contains(f.To, role) || (role == ControlPlane && f.EdgeOnControlPlane && a.EdgeOnControlPlane)
}

// render is the table for a node of role, keeping the flows and peers keep says; peersOf gives a
// flow's peers in this rendering.
func render(role Role, a Addresses, keepFlow func(Flow) bool, keepPeer func(Peer) bool, peersOf func(Flow) []Peer) ([]Rule, error) {
	peers := map[Peer][]string{Admin: a.Admin, Nodes: a.Nodes, ControlPlanes: a.ControlPlanes, Pods: a.Pods, Anyone: {"0.0.0.0/0"}}
	if len(a.Nodes) == 0 {
		return nil, fmt.Errorf("the network policy needs the nodes' addresses")
	}
	var out []Rule
	for _, f := range Flows() {
		if !f.reaches(role, a) || !keepFlow(f) {
			continue
		}
		r := Rule{Name: f.Name, Proto: f.Proto, Ports: f.Ports}
		for _, p := range peersOf(f) {
			if !keepPeer(p) {
				continue
			}
			ps, err := Prefixes(peers[p])
			if err != nil {
				return nil, fmt.Errorf("%s of flow %s: %w", p, f.Name, err)
			}
			for _, x := range ps {
				if !slices.Contains(r.From, x) {
					r.From = append(r.From, x)
				}
			}
		}
		if len(r.From) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// Talos renders the ingress rules of a node's Talos firewall: every flow that reaches role but
// ICMP (Talos admits it itself); on a control plane a GroupGated flow is open to everyone.
func Talos(role Role, a Addresses) ([]Rule, error) {
	return render(role, a, func(f Flow) bool { return f.Proto != ICMP }, func(Peer) bool { return true }, func(f Flow) []Peer {
		if role == ControlPlane && f.GroupGated {
			return []Peer{Anyone}
		}
		return f.From
	})
}

// SecurityGroup renders the control planes' security group: every flow that reaches a control
// plane but those behind the tunnel, from every peer but the pod CIDR (local to a node, never
// seen by the group). The caller puts the runner's CIDR among the admin CIDRs for the length of
// its run.
func SecurityGroup(a Addresses) ([]Rule, error) {
	return render(ControlPlane, a, func(f Flow) bool { return !f.BehindTunnel }, func(p Peer) bool { return p != Pods }, func(f Flow) []Peer { return f.From })
}

// Prefixes parses CIDRs or bare addresses (a bare address is its /32).
func Prefixes(in []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(in))
	for _, s := range in {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ad, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither an address nor a CIDR", s)
		}
		out = append(out, netip.PrefixFrom(ad, ad.BitLen()))
	}
	return out, nil
}
