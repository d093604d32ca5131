package netpolicy

import (
	"net/netip"
	"slices"
	"testing"
)

// TestEveryFlowSaysWhyAndWhere: each row names its reason and its source, once.
func TestEveryFlowSaysWhyAndWhere(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range Flows() {
		if f.Why == "" || f.Source == "" || len(f.From) == 0 || len(f.To) == 0 {
			t.Errorf("flow %q lacks its reason, source, peers or roles", f.Name)
		}
		if seen[f.Name] {
			t.Errorf("flow %q twice", f.Name)
		}
		seen[f.Name] = true
		if (f.Proto == ICMP) != (f.Ports == nil) {
			t.Errorf("flow %q: ports %v for %s", f.Name, f.Ports, f.Proto)
		}
	}
}

// TestRenderings: the pod CIDR reaches the kubelet and Cilium health in the Talos rendering and
// never in the group's; ICMP is in the group's only; the edge reaches a control plane only when
// asked; a bad address is an error naming the flow.
func TestRenderings(t *testing.T) {
	t.Parallel()
	a := Addresses{Admin: []string{"203.0.113.0/24"}, Nodes: []string{"51.15.0.1", "51.15.0.9"}, ControlPlanes: []string{"51.15.0.1"}, Pods: []string{"10.244.0.0/16"}}
	byName := func(rs []Rule) map[string]Rule {
		m := map[string]Rule{}
		for _, r := range rs {
			m[r.Name] = r
		}
		return m
	}
	cp, err := Talos(ControlPlane, a)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Talos(Worker, a)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := SecurityGroup(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kubelet-ingress", "cilium-health-ingress"} {
		for _, rs := range [][]Rule{cp, w} {
			if !slices.ContainsFunc(byName(rs)[name].From, func(p netip.Prefix) bool { return p.String() == "10.244.0.0/16" }) {
				t.Errorf("%s: the pod CIDR is not admitted", name)
			}
		}
		if slices.ContainsFunc(byName(sg)[name].From, func(p netip.Prefix) bool { return p.String() == "10.244.0.0/16" }) {
			t.Errorf("%s: the security group names the pod CIDR", name)
		}
	}
	// The decrypted VXLAN exists only behind WireGuard on the node: the Talos firewalls admit it
	// from the nodes, the group (which only ever meets the WireGuard packet) does not open it.
	for _, rs := range [][]Rule{cp, w} {
		if _, ok := byName(rs)["cilium-vxlan-ingress"]; !ok {
			t.Error("the Talos firewall does not admit the decrypted VXLAN")
		}
	}
	if _, ok := byName(sg)["cilium-vxlan-ingress"]; ok {
		t.Error("the security group opens VXLAN, which it never sees (only the WireGuard packet crosses it)")
	}
	if _, ok := byName(sg)["cilium-wireguard-ingress"]; !ok {
		t.Error("no WireGuard in the security group")
	}
	if _, ok := byName(sg)["icmp"]; !ok {
		t.Error("no ICMP in the security group")
	}
	if _, ok := byName(cp)["icmp"]; ok {
		t.Error("ICMP in the Talos rendering")
	}
	if _, ok := byName(cp)["edge-ingress"]; ok {
		t.Error("edge on a control plane without expose_edge_on_control_plane")
	}
	if _, ok := byName(w)["edge-quic-ingress"]; !ok {
		t.Error("no UDP 443 on the worker")
	}
	// The runner's gates: on the control planes the Talos and Kubernetes APIs are open to
	// everyone in the Talos firewall and the group alone decides; the worker's Talos API admits
	// the admin CIDRs and the nodes only.
	prefixes := func(r Rule) []string {
		var out []string
		for _, p := range r.From {
			out = append(out, p.String())
		}
		return out
	}
	for _, name := range []string{"apid-ingress", "kubernetes-api-ingress"} {
		if got := prefixes(byName(cp)[name]); !slices.Equal(got, []string{"0.0.0.0/0"}) {
			t.Errorf("control plane's Talos %s from %v, want everyone (the security group gates it)", name, got)
		}
		if got := prefixes(byName(sg)[name]); !slices.Equal(got, []string{"203.0.113.0/24", "51.15.0.1/32", "51.15.0.9/32"}) {
			t.Errorf("security group's %s from %v, want the admin CIDRs and the nodes", name, got)
		}
	}
	if got := prefixes(byName(w)["apid-ingress"]); !slices.Equal(got, []string{"203.0.113.0/24", "51.15.0.1/32", "51.15.0.9/32"}) {
		t.Errorf("worker's Talos API from %v, want the admin CIDRs and the nodes only", got)
	}
	a.EdgeOnControlPlane = true
	if cp, _ = Talos(ControlPlane, a); byName(cp)["edge-quic-ingress"].Name == "" {
		t.Error("no edge on a control plane with expose_edge_on_control_plane")
	}
	a.Admin = []string{"not-a-cidr"}
	if _, err := SecurityGroup(a); err == nil {
		t.Error("a bad admin CIDR rendered")
	}
}
