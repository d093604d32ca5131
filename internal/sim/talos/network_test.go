package talos

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

// fw is a Talos ingress firewall in block mode admitting the UDP ports from subnet, one rule each.
func fw(subnet string, ports ...int) string {
	out := "---\napiVersion: v1alpha1\nkind: NetworkDefaultActionConfig\ningress: block\n"
	for _, p := range ports {
		out += fmt.Sprintf("---\napiVersion: v1alpha1\nkind: NetworkRuleConfig\nname: udp-%d-ingress\nportSelector:\n  ports: [%d]\n  protocol: udp\ningress:\n  - subnet: %s\n", p, p, subnet)
	}
	return out
}

var (
	fwVXLAN   = fw("127.0.0.1/32", vxlanPort)
	fwNoVXLAN = fw("127.0.0.1/32", wireguardPort)
	fwBoth    = fw("127.0.0.0/24", vxlanPort, wireguardPort)
)

// TestHostToRemotePod: the modeled path from a control plane's host to a pod on the worker without
// encryption, as a function of the routing mode, the segments and the worker's firewall: tunnel
// mode needs VXLAN (UDP 8472) admitted from the control plane's address (WireGuard's port is not
// enough: nothing is encrypted); native routing needs one segment and auto direct node routes.
// With WireGuard: TestCrossNodeWithWireGuard.
func TestHostToRemotePod(t *testing.T) {
	t.Parallel()
	_, w, _ := configs(t, forms[0], "https://127.0.0.1:6443", "/dev/sda")
	load := func(docs string) netNode {
		cfg, err := configloader.NewFromBytes(append(append([]byte{}, w...), docs...))
		if err != nil {
			t.Fatal(err)
		}
		return netNode{n: &Node{}, cfg: cfg, name: "edge-01", addr: netip.MustParseAddr("127.0.0.2"), subnet: netip.MustParsePrefix("127.0.0.0/24"), podCIDR: netip.MustParsePrefix("10.244.3.0/24")}
	}
	cp := netNode{name: "cp", addr: netip.MustParseAddr("127.0.0.1"), subnet: netip.MustParsePrefix("127.0.0.1/32")}
	cpFlat := cp
	cpFlat.subnet = netip.MustParsePrefix("127.0.0.0/24")
	tunnel, native := cniValues{installed: true}, cniValues{installed: true, native: true, autoDirect: true}
	tests := []struct {
		name     string
		cni      cniValues
		from, to netNode
		ok       bool
	}{
		{"tunnel, VXLAN admitted", tunnel, cp, load(fwVXLAN), true},
		{"tunnel, VXLAN missing from the firewall", tunnel, cp, load(fwNoVXLAN), false},
		{"native across a gateway", native, cp, load(fwVXLAN), false},
		{"native on one segment", native, cpFlat, load(fwNoVXLAN), true},
		{"native without direct routes", cniValues{installed: true, native: true}, cpFlat, load(fwVXLAN), false},
		{"same node", tunnel, load(fwNoVXLAN), load(fwNoVXLAN), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := netState{cni: tt.cni}.hostToPod(tt.from, tt.to)
			if (err == nil) != tt.ok {
				t.Errorf("hostToPod = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestCrossNodeWithWireGuard: the datapath's cross-node flows with WireGuard on (the bot's
// values), as functions of the routing mode, the source (host or pod), the segments, the security
// group in front of the destination and its Talos firewall. In tunnel mode every overlay packet
// is VXLAN inside WireGuard: the group and the firewall must admit UDP 51871, and the firewall
// the decrypted VXLAN (UDP 8472) too; in native mode a pod's packet rides WireGuard without a
// route, a host's needs a route (one segment).
func TestCrossNodeWithWireGuard(t *testing.T) {
	t.Parallel()
	_, w, _ := configs(t, forms[0], "https://127.0.0.1:6443", "/dev/sda")
	node := func(docs string, addr string, sg Network) netNode {
		cfg, err := configloader.NewFromBytes(append(append([]byte{}, w...), docs...))
		if err != nil {
			t.Fatal(err)
		}
		a := netip.MustParseAddr(addr)
		return netNode{n: &Node{opts: NodeOptions{Network: sg}}, cfg: cfg, name: "node-" + addr, addr: a,
			subnet: netip.PrefixFrom(a, 32), podCIDR: netip.MustParsePrefix("10.244.3.0/24")}
	}
	open := Network(func(netip.Addr, string, int) bool { return true })
	noWG := Network(func(_ netip.Addr, proto string, port int) bool { return !(proto == "UDP" && port == 51871) })
	src := node(fwBoth, "127.0.0.1", open)
	flat := func(n netNode) netNode { n.subnet = netip.MustParsePrefix("127.0.0.0/24"); return n }
	tunnel := cniValues{installed: true, wireguard: true}
	native := cniValues{installed: true, wireguard: true, native: true, autoDirect: true}
	tests := []struct {
		name     string
		cni      cniValues
		from, to netNode
		pod, ok  bool
	}{
		{"tunnel: both ports admitted, host", tunnel, src, node(fwBoth, "127.0.0.2", open), false, true},
		{"tunnel: both ports admitted, pod", tunnel, src, node(fwBoth, "127.0.0.2", open), true, true},
		{"tunnel: the firewall lacks 8472 (the decrypted VXLAN)", tunnel, src, node(fwNoVXLAN, "127.0.0.2", open), true, false},
		{"tunnel: the firewall lacks 51871", tunnel, src, node(fwVXLAN, "127.0.0.2", open), true, false},
		{"tunnel: the security group lacks 51871", tunnel, src, node(fwBoth, "127.0.0.2", noWG), true, false},
		{"native: a pod rides WireGuard across a gateway", native, src, node(fwBoth, "127.0.0.2", open), true, true},
		{"native: a pod, the security group lacks 51871", native, src, node(fwBoth, "127.0.0.2", noWG), true, false},
		{"native: a host across a gateway has no route", native, src, node(fwBoth, "127.0.0.2", open), false, false},
		{"native: a host on one segment", native, flat(src), flat(node(fwNoVXLAN, "127.0.0.2", noWG)), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := netState{cni: tt.cni}.crossNode(tt.from, tt.to, tt.pod)
			if (err == nil) != tt.ok {
				t.Errorf("crossNode = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
