package cluster

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// TestSecurityGroupEqualsControlPlaneFirewall holds the two renderings of the network-policy
// table equal: every (protocol, port, source) the control planes' security group admits, the
// control planes' Talos firewall admits too (as machinery reads it back from the documents), and
// the reverse — but for the four documented differences: ICMP (admitted by Talos's own chain, so
// in the group only), the pod CIDR (local to a node, so in the firewall only), the flows behind
// the tunnel (netpolicy's BehindTunnel: the decrypted VXLAN, which the group never meets, so in
// the firewall only), and the flows the group gates alone (netpolicy's GroupGated: the Talos and
// Kubernetes APIs, open to everyone in the control planes' firewall so that a runner admitted by
// the group for its run gets through).
func TestSecurityGroupEqualsControlPlaneFirewall(t *testing.T) {
	t.Parallel()
	cps, worker := []string{"51.15.0.1", "51.15.0.2", "51.15.0.3"}, []string{"163.172.0.9"}
	for _, tt := range []struct {
		name string
		mod  func(*provision.Spec)
	}{
		{"default", func(*provision.Spec) {}},
		{"restricted admins", func(s *provision.Spec) { s.AdminCIDRs = []string{"203.0.113.0/24", "198.51.100.7/32"} }},
		{"edge on the control planes", func(s *provision.Spec) { s.ExposeEdgeOnControlPlane = true }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := provision.DefaultSpec()
			tt.mod(&spec)

			rules, err := scaleway.Rules(spec, cps, worker)
			if err != nil {
				t.Fatal(err)
			}
			group := map[string]bool{}
			for _, r := range rules {
				if r.Protocol == "ICMP" {
					continue
				}
				group[fmt.Sprintf("%s/%d/%s", r.Protocol, r.Port, r.From)] = true
			}

			fw := talos.Firewall{AdminCIDRs: spec.AdminCIDRs, NodeIPs: append(slices.Clone(cps), worker...), ControlPlaneIPs: cps,
				EdgeOnControlPlane: spec.ExposeEdgeOnControlPlane}
			docs, err := fw.Documents(true)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := configloader.NewFromBytes(docs)
			if err != nil {
				t.Fatalf("machinery cannot read the firewall documents: %v", err)
			}
			pods := netip.MustParsePrefix(fw.Addresses().Pods[0])
			gated, tunnelled := map[string]bool{}, map[string]bool{}
			for _, f := range netpolicy.Flows() {
				for _, pr := range f.Ports {
					for p := int(pr[0]); p <= int(pr[1]); p++ {
						k := fmt.Sprintf("%s/%d", f.Proto, p)
						gated[k] = gated[k] || f.GroupGated
						tunnelled[k] = tunnelled[k] || f.BehindTunnel
					}
				}
			}
			portOf := func(k string) string { parts := strings.SplitN(k, "/", 3); return parts[0] + "/" + parts[1] }
			firewall := map[string]bool{}
			for _, r := range cfg.NetworkRules().Rules() {
				for _, s := range r.Subnets() {
					if s == pods {
						continue
					}
					for _, pr := range r.PortRanges() {
						for p := int(pr[0]); p <= int(pr[1]); p++ {
							firewall[fmt.Sprintf("%s/%d/%s", strings.ToUpper(r.Protocol().String()), p, s)] = true
						}
					}
				}
			}
			gatedInGroup := map[string]bool{}
			for k := range group {
				if gated[portOf(k)] {
					gatedInGroup[portOf(k)] = true
					continue
				}
				if !firewall[k] {
					t.Errorf("the security group admits %s, the control planes' Talos firewall does not", k)
				}
			}
			for k := range firewall {
				if gated[portOf(k)] {
					if !strings.HasSuffix(k, "/0.0.0.0/0") {
						t.Errorf("the control planes' Talos firewall admits %s: a port the group gates is open to everyone, not to a list", k)
					}
					continue
				}
				if tunnelled[portOf(k)] {
					if group[k] {
						t.Errorf("the security group admits %s, which only exists behind WireGuard on the node", k)
					}
					continue
				}
				if !group[k] {
					t.Errorf("the control planes' Talos firewall admits %s, the security group does not", k)
				}
			}
			for p, g := range gated {
				if g && (!gatedInGroup[p] || !firewall[p+"/0.0.0.0/0"]) {
					t.Errorf("%s: the group gates it (%v) and the firewall opens it to everyone (%v), want both", p, gatedInGroup[p], firewall[p+"/0.0.0.0/0"])
				}
			}
			if len(group) == 0 {
				t.Fatal("empty rendering")
			}
		})
	}
}
