package clusterops_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/sim/loopback"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// The runner's address on the emulated world: the bot dials the nodes' 127.x.y.z addresses
// without binding, so Linux picks the loopback route's source, 127.0.0.1.
const runnerAddr = "127.0.0.1"

// outsider is a loopback address that no admin CIDR, no node and no runner holds.
const outsider = "127.0.0.77"

// upFactor is the time factor of upBehind's worlds.
const upFactor = 0.005

// upBehind starts a world and brings cluster up from runner (its source address on loopback)
// with admin_cidrs set to admin; the parts are the runner's and ctx bounds the test.
func upBehind(t *testing.T, name, runner, admin string) (context.Context, *worldtest.Parts, provision.Spec, *clusterops.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	t.Cleanup(cancel)
	w := worldtest.Start(t, world.Options{TimeFactor: upFactor, S3: "file"})
	p := worldtest.New(t, w, worldtest.Options{RunnerCIDR: runner + "/32"})
	override := func(s *provision.Spec) { s.AdminCIDRs = []string{admin} }
	spec := p.Spec
	override(&spec)
	ctx = talos.WithSourceAddr(ctx, netip.MustParseAddr(runner))
	res, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, Command: "up", Override: override})
	if err != nil {
		t.Fatalf("up from runner %s with admin_cidrs [%s]: %v", runner, admin, err)
	}
	return ctx, p, spec, res
}

// nodeAddrs is the worker's and the first control plane's address in st.
func nodeAddrs(t *testing.T, st *provision.State) (worker, cp0 string) {
	t.Helper()
	worker, cp0 = st.Outputs[cluster.OutWorkerIP], st.Resources[scaleway.NodeIP(0)].Attrs["address"]
	if worker == "" || cp0 == "" {
		t.Fatalf("no worker or control-plane address in the state: %q %q", worker, cp0)
	}
	return worker, cp0
}

// groupAdmits lists the security group's rules that admit addr.
func groupAdmits(t *testing.T, p *worldtest.Parts, st *provision.State, addr string) []string {
	t.Helper()
	return worldtest.GroupAdmits(t, p.Client, st.Resources[scaleway.NodeSecGroup], addr)
}

// flow is one connection a test expects open or refused.
type flow struct {
	name     string
	src, dst string
	open     bool
}

func at(ip string, port int) string { return net.JoinHostPort(ip, strconv.Itoa(port)) }

func checkFlows(t *testing.T, flows []flow) {
	t.Helper()
	for _, tt := range flows {
		t.Run(tt.name, func(t *testing.T) {
			err := loopback.Reach(tt.src, tt.dst)
			if tt.open && err != nil {
				t.Errorf("%s → %s refused, want open: %v", tt.src, tt.dst, err)
			}
			if !tt.open && err == nil {
				t.Errorf("%s → %s open, want refused", tt.src, tt.dst)
			}
		})
	}
}

// TestNetworkPolicyWithRestrictedAdminCIDRs: with admin_cidrs restricted to the runner, the
// emulated world enforces the control planes' security group and every node's Talos ingress
// firewall on every connection. The cluster must still come up (the worker joins through the
// control planes' 6443 and trustd 50001 from its own address, which needs the node rules of the
// group), and from an outsider's address the worker's Talos API and kubelet must be closed
// (which needs the Talos firewall: the worker has no security group).
func TestNetworkPolicyWithRestrictedAdminCIDRs(t *testing.T) {
	_, _, _, res := upBehind(t, "fw-1", runnerAddr, runnerAddr+"/32")
	worker, cp0 := nodeAddrs(t, res.State)
	checkFlows(t, []flow{
		{"outsider → worker Talos API", outsider, at(worker, 50000), false},
		{"outsider → worker kubelet", outsider, at(worker, 10250), false},
		{"outsider → control plane Talos API", outsider, at(cp0, 50000), false},
		{"outsider → control plane Kubernetes API", outsider, at(cp0, 6443), false},
		{"outsider → control plane trustd", outsider, at(cp0, 50001), false},
		{"runner → worker Talos API", runnerAddr, at(worker, 50000), true},
		{"runner → control plane Kubernetes API", runnerAddr, at(cp0, 6443), true},
		{"runner → worker kubelet", runnerAddr, at(worker, 10250), false},
		{"control plane → worker kubelet", cp0, at(worker, 10250), true},
		{"control plane → worker Talos API", cp0, at(worker, 50000), true},
		{"worker → control plane trustd", worker, at(cp0, 50001), true},
		{"worker → control plane Kubernetes API", worker, at(cp0, 6443), true},
	})
}

// TestNetworkPolicyRunnerOutsideAdminCIDRs: admin CIDRs that do not cover the runner. The run
// reaches the control planes through the security group's temporary rule and the worker through
// a control plane's apid; at its end the security group no longer lets the runner reach the
// control planes, and the worker's Talos firewall never admitted it (before issue 21 it kept the
// runner's CIDR on 50000 for the cluster's life).
func TestNetworkPolicyRunnerOutsideAdminCIDRs(t *testing.T) {
	_, _, _, res := upBehind(t, "fw-2", runnerAddr, "198.51.100.0/24")
	worker, cp0 := nodeAddrs(t, res.State)
	checkFlows(t, []flow{
		{"runner → control plane Talos API after the run", runnerAddr, at(cp0, 50000), false},
		{"runner → control plane Kubernetes API after the run", runnerAddr, at(cp0, 6443), false},
		{"runner → worker Talos API after the run", runnerAddr, at(worker, 50000), false},
		{"runner → worker kubelet", runnerAddr, at(worker, 10250), false},
		{"outsider → worker Talos API", outsider, at(worker, 50000), false},
		{"control plane → worker Talos API (the route the bot takes)", cp0, at(worker, 50000), true},
		{"worker → control plane trustd", worker, at(cp0, 50001), true},
	})
}

// readinessWorld starts a world whose ups give the readiness checks 5 s (a modeled 1000 s at its
// factor) before they fail, with the runner's CIDR known; ctx bounds the test.
func readinessWorld(t *testing.T) (context.Context, *worldtest.Parts) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	w := worldtest.Start(t, world.Options{TimeFactor: 0.005, S3: "file"})
	return ctx, worldtest.New(t, w, worldtest.Options{ReadyTimeout: 5 * time.Second, RunnerCIDR: runnerAddr + "/32"})
}

// TestNativeRoutingAcrossSubnetsFailsTheUp: forced native routing (auto direct node routes) on the
// world's topology — every node on its own segment behind a gateway, as on Scaleway — leaves the
// API server unable to reach the worker's pods, and the up fails naming the routing check, with
// the Cilium agents' refusal of the direct route as its explanation. Before the readiness checks
// this up answered ready (/readyz was enough).
func TestNativeRoutingAcrossSubnetsFailsTheUp(t *testing.T) {
	ctx, p := readinessWorld(t)
	// admin_cidrs leave the runner out: the run opens a temporary rule for it, which the failure
	// must not leave behind.
	native := func(s *provision.Spec) { s.CiliumRouting = "native"; s.AdminCIDRs = []string{"198.51.100.0/24"} }
	spec := p.Spec
	native(&spec)
	res, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: "native-1", Spec: spec, TTL: time.Hour, Command: "up", Override: native})
	if err == nil {
		t.Fatal("up with native routing across subnets answered ready")
	}
	if res == nil || res.State == nil {
		t.Fatalf("no state after the failed up: %v", err)
	}
	if v := res.State.Outputs[scaleway.OutAdminTemporary]; v != "" {
		t.Errorf("the failed up left the runner's temporary admin CIDR %s in its state", v)
	}
	sg := res.State.Resources[scaleway.NodeSecGroup]
	rules, lerr := instance.NewAPI(p.Client).ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{
		Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages())
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, r := range rules.Rules {
		if r.IPRange.String() == runnerAddr+"/32" {
			t.Errorf("the failed up left a security-group rule for the runner: %s %v", r.Protocol, r.DestPortFrom)
		}
	}
	for _, want := range []string{"routing: API server cannot reach coredns-0", "must be directly reachable", "tunnel mode with WireGuard needs UDP 51871"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("up's error lacks %q:\n%v", want, err)
		}
	}
	t.Logf("up failed as it should: %v", err)
	if strings.Contains(err.Error(), "nodes: ") && !strings.Contains(err.Error(), "routing: ") {
		t.Errorf("the failing check is not the routing one: %v", err)
	}
}

// TestMissingWireGuardRuleFailsTheUp: the control planes' security group loses its WireGuard rule
// (UDP 51871 from the nodes) while the up runs. The API server still reaches the worker's pods
// (the worker has no security group, and its Talos firewall admits the control planes), but a pod
// on the worker cannot reach a pod on a control plane: the up fails naming the pod-network check
// and the pairs that fail. Before the pod-network probe this up answered ready.
func TestMissingWireGuardRuleFailsTheUp(t *testing.T) {
	ctx, p := readinessWorld(t)
	api := instance.NewAPI(p.Client)
	// The rule goes as soon as it exists (the group's rules set again without it, as an operator
	// editing the group would), and again if a step puts it back.
	dropped := make(chan struct{}, 1)
	go func() {
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			sgs, err := api.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: scw.Zone(p.Spec.Zone)}, scw.WithAllPages(), scw.WithContext(ctx))
			if err != nil {
				continue
			}
			for _, sg := range sgs.SecurityGroups {
				rules, err := api.ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{Zone: sg.Zone, SecurityGroupID: sg.ID}, scw.WithAllPages(), scw.WithContext(ctx))
				if err != nil {
					continue
				}
				var keep []*instance.SetSecurityGroupRulesRequestRule
				for _, r := range rules.Rules {
					if r.Protocol == instance.SecurityGroupRuleProtocolUDP && r.DestPortFrom != nil && *r.DestPortFrom == 51871 {
						continue
					}
					keep = append(keep, &instance.SetSecurityGroupRulesRequestRule{ID: &r.ID, Action: r.Action, Protocol: r.Protocol, Direction: r.Direction,
						IPRange: r.IPRange, DestPortFrom: r.DestPortFrom, DestPortTo: r.DestPortTo, Position: r.Position, Editable: &r.Editable, Zone: &r.Zone})
				}
				if len(keep) == len(rules.Rules) {
					continue
				}
				if _, err := api.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: sg.Zone, SecurityGroupID: sg.ID, Rules: keep}, scw.WithContext(ctx)); err == nil {
					select {
					case dropped <- struct{}{}:
					default:
					}
				}
			}
		}
	}()
	_, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: "nowg-1", Spec: p.Spec, TTL: time.Hour, Command: "up"})
	select {
	case <-dropped:
	default:
		t.Fatalf("the WireGuard rule was never seen in a security group: nothing was tested (up: %v)", err)
	}
	if err == nil {
		t.Fatal("up without the WireGuard rule answered ready")
	}
	for _, want := range []string{"pod-network: pod → pod across nodes fails", "edge-01 → ", "UDP 51871"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("up's error lacks %q:\n%v", want, err)
		}
	}
	for _, other := range []string{"nodes: ", "routing: "} {
		if strings.Contains(err.Error(), other) {
			t.Errorf("a check other than pod-network failed (%s): %v", other, err)
		}
	}
	t.Logf("up failed as it should: %v", err)
}

// TestTwoRunnersLeaveNoAddress is issue 21's "the runner can always reach its cluster, and only
// for its run": admin_cidrs = 203.0.113.0/24, which neither runner is in; two ups of one cluster,
// the first from 127.0.0.1, the second from another runner address (the bot's connections bound
// to it, as a second hosted runner's would come from its own egress). Both ups succeed, and after
// each neither runner's address is admitted anywhere: no security-group rule names it, no node's
// Talos firewall document names it (the worker keeps no earlier runner's address), and from
// either address no node's Talos or Kubernetes API accepts a connection.
func TestTwoRunnersLeaveNoAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	w := worldtest.Start(t, world.Options{TimeFactor: 0.005, S3: "file"})
	const second = "127.0.0.78"
	runners := []string{runnerAddr, second}
	admin := func(s *provision.Spec) { s.AdminCIDRs = []string{"203.0.113.0/24"} }
	for i, runner := range runners {
		p := worldtest.New(t, w, worldtest.Options{RunnerCIDR: runner + "/32"})
		spec := p.Spec
		admin(&spec)
		rctx := talos.WithSourceAddr(ctx, netip.MustParseAddr(runner))
		res, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: "runners-1", Spec: spec, TTL: time.Hour, Command: "up", Override: admin})
		if err != nil {
			t.Fatalf("up %d from runner %s, admin_cidrs 203.0.113.0/24: %v", i+1, runner, err)
		}
		if v := res.State.Outputs[scaleway.OutAdminTemporary]; v != "" {
			t.Errorf("after up %d the state still records the runner's temporary CIDR %s", i+1, v)
		}
		nodes := []string{res.State.Outputs[cluster.OutWorkerIP]}
		for j := range spec.CPCount {
			nodes = append(nodes, res.State.Resources[scaleway.NodeIP(j)].Attrs["address"])
		}
		for _, r := range runners[:i+1] {
			ra := netip.MustParseAddr(r)
			if admits := groupAdmits(t, p, res.State, r); len(admits) > 0 {
				t.Errorf("after up %d the security group admits runner %s: %v", i+1, r, admits)
			}
			for _, ip := range nodes {
				n := w.Node(ip)
				if n == nil {
					t.Fatalf("no Talos node on %s", ip)
				}
				cfg, err := configloader.NewFromBytes(n.Config())
				if err != nil {
					t.Fatalf("node %s's applied config: %v", ip, err)
				}
				for _, fr := range cfg.NetworkRules().Rules() {
					for _, s := range fr.Subnets() {
						if s.Bits() > 0 && s.Contains(ra) {
							t.Errorf("after up %d node %s's Talos firewall names runner %s (%s in its %v rule)", i+1, ip, r, s, fr.PortRanges())
						}
					}
				}
				for _, port := range []int{50000, 6443} {
					if err := loopback.Reach(r, net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
						t.Errorf("after up %d runner %s still reaches %s:%d", i+1, r, ip, port)
					}
				}
			}
		}
	}
}

// Reads and runs from a runner outside admin_cidrs. The status's checks and the machine configs
// admit the runner to the control planes for their read only (before issue 31 they failed, the
// machine configs after a dozen retries each), or, with POC_READ_RUNNER_ACCESS=false, fail at
// once naming admin_cidrs. A pause and a resume are runs like an up: the pause's etcd
// snapshot must reach a control plane through the security group's rule for that run only, and
// the rule must be gone once the pause is over. The pause parks the worker (park_for), the resume
// adopts it back, and `down --park-for` parks it again, all from that runner (issue 31: the
// park's Talos reset dialled the worker, whose firewall admits the admin CIDRs and the nodes
// only; it gave up after thousands of attempts, the delete started with no time left and the
// down ended incomplete). After each run, no security-group rule and no node's firewall names the
// runner. The modeled park is logged beside its wall time.
func TestPauseAndResumeFromARunnerOutsideTheAdminCIDRs(t *testing.T) {
	const runner = "127.0.0.79"
	ctx, p, spec, up := upBehind(t, "pause-runner-1", runner, "203.0.113.0/24")
	worker := up.State.Resources[scaleway.NodeWorker].ID
	nowhere := func(when string, st *provision.State) {
		t.Helper()
		if v := st.Outputs[scaleway.OutAdminTemporary]; v != "" {
			t.Errorf("%s the state still records the runner's temporary CIDR %s", when, v)
		}
		if _, ok := st.Resources[scaleway.NodeSecGroup]; ok {
			if admits := groupAdmits(t, p, st, runner); len(admits) > 0 {
				t.Errorf("%s the security group admits runner %s: %v", when, runner, admits)
			}
		}
		for _, ip := range p.World.Nodes() {
			if n := p.World.Node(ip); n != nil && len(n.Config()) > 0 && strings.Contains(string(n.Config()), runner) {
				t.Errorf("%s node %s's configuration names runner %s", when, ip, runner)
			}
		}
	}
	// Reads: the status's checks and the machine configs, with the group opened for them only.
	st, err := p.Ops.Status(ctx, "pause-runner-1", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Health {
		if !h.OK {
			t.Errorf("status from runner %s outside admin_cidrs: %s failed: %s", runner, h.Name, h.Detail)
		}
	}
	if st.Unreachable != "" {
		t.Errorf("status says the runner cannot reach the cluster: %s", st.Unreachable)
	}
	cfgs, err := p.Ops.MachineConfigs(ctx, "pause-runner-1", false)
	if err != nil {
		t.Fatalf("machine configs from runner %s outside admin_cidrs: %v", runner, err)
	}
	for _, c := range cfgs {
		if c.Err != nil || len(c.Config) == 0 {
			t.Errorf("machine config of %s from runner %s outside admin_cidrs: %v", c.Node, runner, c.Err)
		}
	}
	_, after, err := p.Ops.Load(ctx, "pause-runner-1")
	if err != nil {
		t.Fatal(err)
	}
	nowhere("after the reads", after)
	// Asked not to open the group, the reads fail at once, naming admin_cidrs.
	closed := *p.Ops
	closed.NoReadRunnerAccess = true
	start := time.Now()
	st, err = closed.Status(ctx, "pause-runner-1", true)
	if err != nil || len(st.Health) == 0 || st.Health[0].OK || !strings.Contains(st.Unreachable, "admin_cidrs") {
		t.Fatalf("status with POC_READ_RUNNER_ACCESS=false from outside admin_cidrs = %+v, %v; want a failed check and a note naming admin_cidrs", st, err)
	}
	if _, err := closed.MachineConfigs(ctx, "pause-runner-1", false); !errors.Is(err, clusterops.ErrRunnerOutside) || !strings.Contains(err.Error(), "admin_cidrs") {
		t.Fatalf("machine configs with POC_READ_RUNNER_ACCESS=false from outside admin_cidrs: %v", err)
	}
	t.Logf("refused reads answered in %s", time.Since(start).Round(time.Millisecond))
	parked := func(when string) {
		t.Helper()
		if name := bmNameIn(p.World, worker); !strings.HasPrefix(name, "poc-parked-") {
			t.Fatalf("%s the worker %s is named %q, not parked (poc-parked-…)", when, worker, name)
		}
	}
	start = time.Now()
	paused, err := p.Ops.Pause(ctx, clusterops.Intent{Cluster: "pause-runner-1", Command: "pause", ParkFor: time.Hour})
	if err != nil {
		t.Fatalf("pause from runner %s outside admin_cidrs: %v", runner, err)
	}
	t.Logf("parking pause from outside admin_cidrs: %s (modeled bound %s at factor %g)", time.Since(start).Round(time.Millisecond),
		cluster.DefaultWaits().Pause(true), upFactor)
	parked("after the pause")
	nowhere("after the pause", paused.State)
	admin := func(s *provision.Spec) { s.AdminCIDRs = spec.AdminCIDRs }
	resumed, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: "pause-runner-1", Spec: spec, Command: "resume", Override: admin})
	if err != nil {
		t.Fatalf("resume from runner %s outside admin_cidrs: %v", runner, err)
	}
	if got := resumed.State.Resources[scaleway.NodeWorker].ID; got != worker {
		t.Fatalf("the resume's worker is %s, not the parked %s", got, worker)
	}
	nowhere("after the resume", resumed.State)
	start = time.Now()
	if _, err := p.Ops.Down(ctx, clusterops.Intent{Cluster: "pause-runner-1", Command: "down", ParkFor: time.Hour}); err != nil {
		t.Fatalf("down --park-for from runner %s outside admin_cidrs: %v", runner, err)
	}
	t.Logf("parking down from outside admin_cidrs: %s (modeled bound %s at factor %g)", time.Since(start).Round(time.Millisecond),
		cluster.DefaultWaits().Down(true), upFactor)
	parked("after the down")
	nowhere("after the down", &provision.State{})
}

// bmNameIn is the name of Elastic Metal server id in w's emulator ("" when it is gone).
func bmNameIn(w *world.World, id string) string {
	for _, r := range w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" && r.ID == id {
			return r.Name
		}
	}
	return ""
}
