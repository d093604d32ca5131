package talos

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// TestFirewallDocumentsForBothContracts: the ingress firewall documents go into both configs of
// both contracts, pass machinery's validation (Generate validates), and say exactly who may reach
// which port: on the control planes everyone the Talos and Kubernetes APIs (the security group
// gates them), on the worker the admin CIDRs and the nodes only the Talos API (a runner outside
// the admin CIDRs never), node IPs the cluster's own ports, everyone 80/443 on the worker only.
func TestFirewallDocumentsForBothContracts(t *testing.T) {
	t.Parallel()

	const admin = "203.0.113.0/24"

	worker := "51.15.0.9"
	cps := []string{"51.15.0.1", "51.15.0.2", "51.15.0.3"}

	for _, v := range []string{DefaultTalosVersion, "v1.14.1"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()

			in := baseInput(t)
			in.TalosVersion = v

			if v != DefaultTalosVersion {
				in.Secrets = testSecrets114(t)
			}

			in.Firewall = &Firewall{AdminCIDRs: []string{admin}, NodeIPs: append(slices.Clone(cps), worker), ControlPlaneIPs: cps}

			cfgs, err := Generate(t.Context(), in)
			if err != nil {
				t.Fatalf("Generate with a firewall: %v", err)
			}

			tests := []struct {
				node  string
				cfg   []byte
				proto nethelpers.Protocol
				port  int
				src   string
				open  bool
			}{
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 50000, "203.0.113.7", true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 6443, "203.0.113.7", true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 6443, worker, true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 50000, "198.51.100.1", true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 6443, "198.51.100.1", true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 50001, worker, true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 50001, "203.0.113.7", false},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 2379, cps[1], true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 2380, cps[2], true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 2379, worker, false},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 10250, cps[0], true},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 10250, "203.0.113.7", false},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolTCP, 443, "198.51.100.1", false},
				{"cp", cfgs.ControlPlane, nethelpers.ProtocolUDP, 51871, worker, true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 50000, "203.0.113.7", true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 50000, cps[0], true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 50000, "198.51.100.1", false},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 10250, cps[0], true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 10250, "203.0.113.7", false},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 4240, cps[2], true},
				{"worker", cfgs.Worker, nethelpers.ProtocolUDP, 51871, cps[1], true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 6443, "203.0.113.7", false},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 2379, cps[0], false},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 80, "198.51.100.1", true},
				{"worker", cfgs.Worker, nethelpers.ProtocolTCP, 443, "198.51.100.1", true},
			}
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s %s/%d from %s", tt.node, tt.proto, tt.port, tt.src), func(t *testing.T) {
					if got := allowedBy(t, tt.cfg, tt.proto, tt.port, tt.src); got != tt.open {
						t.Errorf("allowed = %v, want %v", got, tt.open)
					}
				})
			}
		})
	}
}

// allowedBy reads the config as a node would (machinery's loader) and tells whether its block-mode
// rules accept a new connection.
func allowedBy(t *testing.T, cfg []byte, proto nethelpers.Protocol, port int, src string) bool {
	t.Helper()

	c, err := configloader.NewFromBytes(cfg)
	if err != nil {
		t.Fatal(err)
	}

	fw := c.NetworkRules()
	if fw.DefaultAction() != nethelpers.DefaultActionBlock {
		t.Fatalf("default ingress action %s, want block", fw.DefaultAction())
	}

	a := netip.MustParseAddr(src)

	for _, r := range fw.Rules() {
		if r.Protocol() != proto {
			continue
		}

		inPort := slices.ContainsFunc(r.PortRanges(), func(p [2]uint16) bool { return port >= int(p[0]) && port <= int(p[1]) })
		if inPort && slices.ContainsFunc(r.Subnets(), func(p netip.Prefix) bool { return p.Contains(a) }) {
			return true
		}
	}

	return false
}

// TestFirewallRefusesBadAddresses: a malformed address is an error naming it, not a rule that
// silently opens or closes something.
func TestFirewallRefusesBadAddresses(t *testing.T) {
	t.Parallel()

	in := baseInput(t)
	in.Firewall = &Firewall{AdminCIDRs: []string{"203.0.113.0/33"}, NodeIPs: []string{"51.15.0.1"}}

	if _, err := Generate(t.Context(), in); err == nil || !strings.Contains(err.Error(), "203.0.113.0/33") {
		t.Errorf("Generate with a bad admin CIDR = %v, want an error naming it", err)
	}

	in.Firewall = &Firewall{AdminCIDRs: []string{"203.0.113.0/24"}}
	if _, err := Generate(t.Context(), in); err == nil || !strings.Contains(err.Error(), "nodes' addresses") {
		t.Errorf("Generate without node IPs = %v, want an error", err)
	}
}
