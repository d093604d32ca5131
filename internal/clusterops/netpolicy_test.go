package clusterops_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
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
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// The runner's address on the emulated world: the bot dials the nodes' 127.x.y.z addresses
// without binding, so Linux picks the loopback route's source, 127.0.0.1.
const runnerAddr = "127.0.0.1"

// outsider is a loopback address that no admin CIDR, no node and no runner holds.
const outsider = "127.0.0.77"

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

// TestNetworkPolicy is the network policy on the wire, in one world whose security-group rules
// PUTs fail half the time (the client's transport retries them: PUTs are idempotent). Every
// connection to a node passes the group and the node's Talos firewall. Two clusters:
//
//   - "admin_cidrs is the runner" (Talos 1.14's configs): the cluster still comes up (the worker
//     joins through the control planes' 6443 and trustd 50001 from its own address, which needs
//     the group's node rules), and an outsider reaches neither the worker (its Talos firewall: it
//     has no group) nor the control planes;
//   - "runners outside admin_cidrs" (issue 21: the runner can always reach its cluster, and only
//     for its run): admin_cidrs 203.0.113.0/24, which no runner is in; an up from 127.0.0.1, a
//     status from there, an up from 127.0.0.78, a pause (releasing the IPs) and a resume from
//     127.0.0.79. After each, no runner's address is in a group rule or a node's firewall
//     document, none reaches a node's 50000 or 6443, the state records no temporary CIDR; the
//     resume gets three new IPs and a kubeconfig naming the new endpoint;
//   - "reads and parks from outside admin_cidrs" (issue 31): see readsAndParksFromOutside.
func TestNetworkPolicy(t *testing.T) {
	e, ctx := start(t, 8*time.Minute, world.Options{
		Faults: scwsim.Faults{Seed: 7, PerEndpoint: map[string]float64{"PUT /instance/v1/zones/{zone}/security_groups/{id}/rules": 0.5}}})
	t.Run("admin_cidrs is the runner", func(t *testing.T) { restrictedAdminCIDRs(ctx, t, e) })
	t.Run("runners outside admin_cidrs", func(t *testing.T) { runnersOutsideAdminCIDRs(ctx, t, e) })
	t.Run("reads and parks from outside admin_cidrs", func(t *testing.T) { readsAndParksFromOutside(ctx, t, e) })
	puts, failed := 0, 0
	for _, c := range e.w.Scaleway.Calls() {
		if c.Method == "PUT" && strings.HasSuffix(c.Path, "/rules") {
			puts++
			if c.Status >= 500 {
				failed++
			}
		}
	}
	// Every up opens (with the runner), sets the full set once the worker is known, and closes
	// (without): at least three that land, and some injected failures retried.
	if puts-failed < 3 || failed == 0 {
		t.Errorf("%d rules PUTs, %d failed: want at least 3 that landed and some injected failures", puts, failed)
	}
}

// parts are the bot's parts of a run from runner (its source address on loopback), and the
// context its connections leave from.
func parts(ctx context.Context, t *testing.T, e *env, runner string) (context.Context, *worldtest.Parts) {
	return talos.WithSourceAddr(ctx, netip.MustParseAddr(runner)), worldtest.New(t, e.w, worldtest.Options{RunnerCIDR: runner + "/32"})
}

func restrictedAdminCIDRs(ctx context.Context, t *testing.T, e *env) {
	rctx, p := parts(ctx, t, e, runnerAddr)
	spec := p.Spec
	spec.AdminCIDRs, spec.TalosVersion = []string{runnerAddr + "/32"}, "v1.14.1"
	res, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: "fw-1", Spec: spec, TTL: time.Hour, Command: "up"})
	if err != nil {
		t.Fatalf("up with admin_cidrs [%s/32] and Talos v1.14.1: %v", runnerAddr, err)
	}
	if res.State.Spec.TalosVersion != "v1.14.1" || !strings.Contains(res.State.Spec.ImageKey, "/v1.14.1/") {
		t.Errorf("spec %s, image %s: want v1.14.1 throughout", res.State.Spec.TalosVersion, res.State.Spec.ImageKey)
	}
	kc, err := p.Ops.Kubeconfig(ctx, "fw-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := talos.Readyz(ctx, kc); err != nil {
		t.Fatalf("kubeconfig of a 1.14 cluster does not reach /readyz: %v", err)
	}
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

func runnersOutsideAdminCIDRs(ctx context.Context, t *testing.T, e *env) {
	const name, admin = "runners-1", "203.0.113.0/24"
	runners := []string{runnerAddr, "127.0.0.78", "127.0.0.79"}
	var st *provision.State
	for i, runner := range runners[:2] {
		rctx, p := parts(ctx, t, e, runner)
		spec := p.Spec
		spec.AdminCIDRs = []string{admin}
		res, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, Command: "up"})
		if err != nil {
			t.Fatalf("up %d from runner %s, admin_cidrs %s: %v", i+1, runner, admin, err)
		}
		st = res.State
		noRunnerLeft(t, e, p, st, fmt.Sprintf("up %d", i+1), runners[:i+1])
		if i > 0 {
			continue
		}
		worker, cp0 := nodeAddrs(t, st)
		checkFlows(t, []flow{
			{"runner → worker kubelet", runnerAddr, at(worker, 10250), false},
			{"outsider → worker Talos API", outsider, at(worker, 50000), false},
			{"control plane → worker Talos API (the route the bot takes)", cp0, at(worker, 50000), true},
			{"worker → control plane trustd", worker, at(cp0, 50001), true},
		})
		if n := adminRules(t, p, st, admin); n != 3 {
			t.Errorf("%d rules for the admin CIDR, want 3 (6443, 50000, ICMP)", n)
		}
	}

	rctx, p := parts(ctx, t, e, runners[2])
	kube := newKube(t, must(p.Ops.Kubeconfig(ctx, name))).server
	paused, err := p.Ops.Pause(rctx, clusterops.Intent{Cluster: name, Command: "pause", ReleaseIPs: true})
	if err != nil {
		t.Fatalf("pause --release-ips from runner %s outside admin_cidrs: %v", runners[2], err)
	}
	noRunnerLeft(t, e, p, paused.State, "the pause", runners)
	if left := e.inventoryOf("instance_ip", name); len(left) != 0 {
		t.Fatalf("reserved IPs left after --release-ips: %v", left)
	}
	resumed, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: name, Spec: p.Spec, Command: "resume"})
	if err != nil {
		t.Fatalf("resume from runner %s outside admin_cidrs: %v", runners[2], err)
	}
	noRunnerLeft(t, e, p, resumed.State, "the resume", runners)
	if ips := e.inventoryOf("instance_ip", name); len(ips) != 3 {
		t.Errorf("IPs after the resume: %v, want three new ones", ips)
	}
	if now := newKube(t, must(p.Ops.Kubeconfig(ctx, name))).server; now == kube {
		t.Errorf("the kubeconfig after a resume on new IPs names the old endpoint %s", kube)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// noRunnerLeft: after what, no runner's address is in the state, a group rule, a node's Talos
// firewall document, or reaches a node's Talos or Kubernetes API.
func noRunnerLeft(t *testing.T, e *env, p *worldtest.Parts, st *provision.State, what string, runners []string) {
	t.Helper()
	if v := st.Outputs[scaleway.OutAdminTemporary]; v != "" {
		t.Errorf("after %s the state still records the runner's temporary CIDR %s", what, v)
	}
	var nodes []string
	if w := st.Outputs[cluster.OutWorkerIP]; w != "" {
		nodes = append(nodes, w)
	}
	for j := range st.Spec.CPCount {
		if rec := st.Resources[scaleway.NodeIP(j)]; rec != nil && rec.Attrs["address"] != "" {
			nodes = append(nodes, rec.Attrs["address"])
		}
	}
	for _, r := range runners {
		ra := netip.MustParseAddr(r)
		if admits := groupAdmits(t, p, st, r); len(admits) > 0 {
			t.Errorf("after %s the security group admits runner %s: %v", what, r, admits)
		}
		for _, ip := range nodes {
			n := e.w.Node(ip)
			if n == nil {
				continue // paused: no machine
			}
			cfg, err := configloader.NewFromBytes(n.Config())
			if err != nil {
				t.Fatalf("node %s's applied config: %v", ip, err)
			}
			for _, fr := range cfg.NetworkRules().Rules() {
				for _, s := range fr.Subnets() {
					if s.Bits() > 0 && s.Contains(ra) {
						t.Errorf("after %s node %s's Talos firewall names runner %s (%s in its %v rule)", what, ip, r, s, fr.PortRanges())
					}
				}
			}
			for _, port := range []int{50000, 6443} {
				if err := loopback.Reach(r, net.JoinHostPort(ip, strconv.Itoa(port))); err == nil {
					t.Errorf("after %s runner %s still reaches %s:%d", what, r, ip, port)
				}
			}
		}
	}
}

// adminRules counts the security group's rules for cidr.
func adminRules(t *testing.T, p *worldtest.Parts, st *provision.State, cidr string) int {
	sg := st.Resources[scaleway.NodeSecGroup]
	rules, err := instance.NewAPI(p.Client).ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{
		Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rules.Rules {
		if r.IPRange.String() == cidr {
			n++
		}
	}
	return n
}

// readsAndParksFromOutside: reads and runs from a runner outside admin_cidrs. The status's checks
// and the machine configs admit the runner to the control planes for their read only (before
// issue 31 they failed, the machine configs after a dozen retries each), or, with
// POC_READ_RUNNER_ACCESS=false, fail at once naming admin_cidrs. The pause parks the worker
// (park_for), the resume adopts it back, and `down --park-for` parks it again, all from that
// runner (issue 31: the park's Talos reset dialled the worker, whose firewall admits the admin
// CIDRs and the nodes only; it gave up after thousands of attempts, the delete started with no
// time left and the down ended incomplete). After each run, no security-group rule and no node's
// firewall names the runner. The modeled park is logged beside its wall time.
func readsAndParksFromOutside(ctx context.Context, t *testing.T, e *env) {
	const name, runner = "pause-runner-1", "127.0.0.79"
	rctx, p := parts(ctx, t, e, runner)
	spec := p.Spec
	spec.AdminCIDRs = []string{"203.0.113.0/24"}
	up, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, Command: "up"})
	if err != nil {
		t.Fatalf("up from runner %s outside admin_cidrs: %v", runner, err)
	}
	worker := up.State.Resources[scaleway.NodeWorker].ID
	st, err := p.Ops.Status(rctx, name, true)
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
	cfgs, err := p.Ops.MachineConfigs(rctx, name, false)
	if err != nil {
		t.Fatalf("machine configs from runner %s outside admin_cidrs: %v", runner, err)
	}
	for _, c := range cfgs {
		if c.Err != nil || len(c.Config) == 0 {
			t.Errorf("machine config of %s from runner %s outside admin_cidrs: %v", c.Node, runner, c.Err)
		}
	}
	_, after, err := p.Ops.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	noRunnerLeft(t, e, p, after, "the reads", []string{runner})
	// Asked not to open the group, the reads fail at once, naming admin_cidrs.
	closed := *p.Ops
	closed.NoReadRunnerAccess = true
	began := time.Now()
	st, err = closed.Status(rctx, name, true)
	if err != nil || len(st.Health) == 0 || st.Health[0].OK || !strings.Contains(st.Unreachable, "admin_cidrs") {
		t.Fatalf("status with POC_READ_RUNNER_ACCESS=false from outside admin_cidrs = %+v, %v; want a failed check and a note naming admin_cidrs", st, err)
	}
	if _, err := closed.MachineConfigs(rctx, name, false); !errors.Is(err, clusterops.ErrRunnerOutside) || !strings.Contains(err.Error(), "admin_cidrs") {
		t.Fatalf("machine configs with POC_READ_RUNNER_ACCESS=false from outside admin_cidrs: %v", err)
	}
	t.Logf("refused reads answered in %s", time.Since(began).Round(time.Millisecond))
	parked := func(when string) {
		t.Helper()
		if n := bmNameIn(e.w, worker); !strings.HasPrefix(n, "poc-parked-") {
			t.Fatalf("%s the worker %s is named %q, not parked (poc-parked-…)", when, worker, n)
		}
	}
	began = time.Now()
	paused, err := p.Ops.Pause(rctx, clusterops.Intent{Cluster: name, Command: "pause", ParkFor: time.Hour})
	if err != nil {
		t.Fatalf("pause from runner %s outside admin_cidrs: %v", runner, err)
	}
	t.Logf("parking pause from outside admin_cidrs: %s (modeled bound %s)", time.Since(began).Round(time.Millisecond), cluster.DefaultWaits().Pause(true))
	parked("after the pause")
	// A parked worker answers its Talos API to everyone, under its park CA only (SECURITY.md):
	// after the pause, what must not name the runner is the state, the group and the configs.
	if v := paused.State.Outputs[scaleway.OutAdminTemporary]; v != "" {
		t.Errorf("after the pause the state still records the runner's temporary CIDR %s", v)
	}
	if admits := groupAdmits(t, p, paused.State, runner); len(admits) > 0 {
		t.Errorf("after the pause the security group admits runner %s: %v", runner, admits)
	}
	for _, ip := range e.w.Nodes() {
		if n := e.w.Node(ip); n != nil && strings.Contains(string(n.Config()), runner) {
			t.Errorf("after the pause node %s's configuration names runner %s", ip, runner)
		}
	}
	resumed, err := p.Ops.Up(rctx, clusterops.Intent{Cluster: name, Spec: p.Spec, Command: "resume"})
	if err != nil {
		t.Fatalf("resume from runner %s outside admin_cidrs: %v", runner, err)
	}
	if got := resumed.State.Resources[scaleway.NodeWorker].ID; got != worker {
		t.Fatalf("the resume's worker is %s, not the parked %s", got, worker)
	}
	noRunnerLeft(t, e, p, resumed.State, "the resume", []string{runner})
	began = time.Now()
	if _, err := p.Ops.Down(rctx, clusterops.Intent{Cluster: name, Command: "down", ParkFor: time.Hour}); err != nil {
		t.Fatalf("down --park-for from runner %s outside admin_cidrs: %v", runner, err)
	}
	t.Logf("parking down from outside admin_cidrs: %s (modeled bound %s)", time.Since(began).Round(time.Millisecond), cluster.DefaultWaits().Down(true))
	parked("after the down")
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

// TestReadinessChecksFailTheUp: the readiness checks on the wire, in one world whose ups give
// them 5 s (a modeled 1000 s at its factor) before they fail:
//
//   - forced native routing (auto direct node routes) on the world's topology — every node on its
//     own segment behind a gateway, as on Scaleway — leaves the API server unable to reach the
//     worker's pods: the up fails naming the routing check, with the Cilium agents' refusal of
//     the direct route as its explanation, and leaves no runner rule behind;
//   - the control planes' security group loses its WireGuard rule (UDP 51871 from the nodes)
//     while the up runs: a pod on the worker cannot reach a pod on a control plane, and the up
//     fails naming the pod-network check and the pairs that fail;
//   - register row node-egress=blocked: the nodes cannot pull the Cilium agent's image; the up
//     fails naming the pods waiting on it and the row, and a down leaves nothing of the cluster.
//
// Before the readiness checks both ups answered ready (/readyz was enough).
func TestReadinessChecksFailTheUp(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{})
	p := worldtest.New(t, e.w, worldtest.Options{ReadyTimeout: 5 * time.Second, RunnerCIDR: runnerAddr + "/32"})
	t.Run("native routing across subnets", func(t *testing.T) { nativeRoutingFails(ctx, t, p) })
	t.Run("no WireGuard rule", func(t *testing.T) { missingWireGuardFails(ctx, t, p) })
	t.Run("nodes cannot pull images", func(t *testing.T) { egressBlockedFails(ctx, t, e, p) })
}

func egressBlockedFails(ctx context.Context, t *testing.T, e *env, p *worldtest.Parts) {
	e.w.SetImagePullBlocked(true)
	defer e.w.SetImagePullBlocked(false)
	const name = "egress-1"
	if _, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: p.Spec, TTL: time.Hour, Command: "up"}); err == nil {
		t.Fatal("an up whose nodes cannot pull the Cilium image answered ready")
	} else {
		for _, want := range []string{"cilium: ", "ImagePullBackOff", "quay.io/cilium/cilium", "register row node-egress"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("up's error lacks %q:\n%v", want, err)
			}
		}
	}
	if _, err := p.Ops.Down(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "down"}); err != nil {
		t.Fatalf("down after the failed up: %v", err)
	}
	for _, r := range e.w.Scaleway.Inventory() {
		if slices.Contains(r.Tags, provision.ClusterTag(name)) {
			t.Errorf("the down left %s %s %s", r.Kind, r.ID, r.Name)
		}
	}
}

func nativeRoutingFails(ctx context.Context, t *testing.T, p *worldtest.Parts) {
	// admin_cidrs leave the runner out: the run opens a temporary rule for it, which the failure
	// must not leave behind.
	spec := p.Spec
	spec.CiliumRouting, spec.AdminCIDRs = "native", []string{"198.51.100.0/24"}
	res, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: "native-1", Spec: spec, TTL: time.Hour, Command: "up"})
	if err == nil {
		t.Fatal("up with native routing across subnets answered ready")
	}
	if res == nil || res.State == nil {
		t.Fatalf("no state after the failed up: %v", err)
	}
	if v := res.State.Outputs[scaleway.OutAdminTemporary]; v != "" {
		t.Errorf("the failed up left the runner's temporary admin CIDR %s in its state", v)
	}
	if n := adminRules(t, p, res.State, runnerAddr+"/32"); n > 0 {
		t.Errorf("the failed up left %d security-group rules for the runner", n)
	}
	for _, want := range []string{"routing: API server cannot reach coredns-0", "must be directly reachable", "tunnel mode with WireGuard needs UDP 51871"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("up's error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "nodes: ") && !strings.Contains(err.Error(), "routing: ") {
		t.Errorf("the failing check is not the routing one: %v", err)
	}
}

func missingWireGuardFails(ctx context.Context, t *testing.T, p *worldtest.Parts) {
	api := instance.NewAPI(p.Client)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	// The rule goes as soon as it exists (the group's rules set again without it, as an operator
	// editing the group would), and again if a step puts it back.
	dropped := make(chan struct{}, 1)
	go func() {
		for wctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			sgs, err := api.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: scw.Zone(p.Spec.Zone)}, scw.WithAllPages(), scw.WithContext(wctx))
			if err != nil {
				continue
			}
			for _, sg := range sgs.SecurityGroups {
				rules, err := api.ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{Zone: sg.Zone, SecurityGroupID: sg.ID}, scw.WithAllPages(), scw.WithContext(wctx))
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
				if _, err := api.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: sg.Zone, SecurityGroupID: sg.ID, Rules: keep}, scw.WithContext(wctx)); err == nil {
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
}
