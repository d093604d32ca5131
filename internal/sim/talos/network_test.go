package talos

import (
	"net/netip"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
)

const fwVXLAN = `---
apiVersion: v1alpha1
kind: NetworkDefaultActionConfig
ingress: block
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: cilium-vxlan-ingress
portSelector:
  ports: [8472]
  protocol: udp
ingress:
  - subnet: 127.0.0.1/32
`

const fwNoVXLAN = `---
apiVersion: v1alpha1
kind: NetworkDefaultActionConfig
ingress: block
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: cilium-wireguard-ingress
portSelector:
  ports: [51871]
  protocol: udp
ingress:
  - subnet: 127.0.0.1/32
`

// TestHostToRemotePod: the modeled path from a control plane's host to a pod on the worker, as a
// function of the routing mode, the segments and the worker's firewall: tunnel mode needs VXLAN
// (UDP 8472) admitted from the control plane's address (WireGuard's port is not enough: a host
// source is not encrypted); native routing needs one segment and auto direct node routes.
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
