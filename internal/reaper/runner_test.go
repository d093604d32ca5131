package reaper_test

import (
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/sim/loopback"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// TestReaperClosesTheRunnerAccessOfAKilledRun: a run killed between admin-access-open and
// admin-access-close (the process gone: neither the close step nor the close after a failure
// runs) leaves the runner's temporary CIDR in the state and its rule in the control planes'
// security group. The reaper, sparing the cluster (not expired), removes both: the runner can no
// longer reach a control plane's Kubernetes API. Failed on the old reaper, which left the rule
// until the next up or the down.
func TestReaperClosesTheRunnerAccessOfAKilledRun(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, 3*time.Minute)
	spec := e.spec
	spec.AdminCIDRs = []string{"198.51.100.0/24"}
	const name = "acme-shop-killed"
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: 24 * time.Hour, Repository: repo,
		RequestedBy: "alice", Command: "up"})
	if err != nil {
		t.Fatalf("up with a runner outside admin_cidrs: %v", err)
	}
	cp0 := res.State.Resources[scaleway.NodeIP(0)].Attrs["address"]
	kube := net.JoinHostPort(cp0, "6443")
	runner := strings.TrimSuffix(world.RunnerCIDR, "/32")
	if loopback.Reach(runner, kube) == nil {
		t.Fatalf("the runner reaches %s after a completed up: the group kept its temporary rule", kube)
	}

	// What the killed run left: the output recorded by admin-access-open, and the group's rule.
	doc, st, err := e.ops.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	st.Outputs[scaleway.OutAdminTemporary] = world.RunnerCIDR
	// The group's record holds the fingerprint of the rules the killed run put (with the runner's
	// rule): any value but the fingerprint of the spec's rules without it.
	rec := st.Resources[scaleway.NodeSecGroup]
	rec.Attrs["rules"] = "rules put by the killed run"
	st.Resources[scaleway.NodeSecGroup] = rec
	if doc.Body, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	sg := res.State.Resources[scaleway.NodeSecGroup]
	api := instance.NewAPI(e.client)
	_, ipn, err := net.ParseCIDR(world.RunnerCIDR)
	if err != nil {
		t.Fatal(err)
	}
	before, err := api.ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	var set []*instance.SetSecurityGroupRulesRequestRule
	for _, r := range before.Rules {
		if r.Editable {
			set = append(set, &instance.SetSecurityGroupRulesRequestRule{Protocol: r.Protocol, Direction: r.Direction, Action: r.Action,
				IPRange: r.IPRange, DestPortFrom: r.DestPortFrom, DestPortTo: r.DestPortTo, Position: r.Position, Editable: scw.BoolPtr(true)})
		}
	}
	set = append(set, &instance.SetSecurityGroupRulesRequestRule{Protocol: instance.SecurityGroupRuleProtocolTCP,
		Direction: instance.SecurityGroupRuleDirectionInbound, Action: instance.SecurityGroupRuleActionAccept,
		IPRange: scw.IPNet{IPNet: *ipn}, DestPortFrom: scw.Uint32Ptr(6443), Position: uint32(len(set) + 1), Editable: scw.BoolPtr(true)})
	if _, err := api.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID, Rules: set}, scw.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	if err := loopback.Reach(runner, kube); err != nil {
		t.Fatalf("the planted leftover does not admit the runner to %s: %v", kube, err)
	}

	rep, err := reaper.Run(ctx, e.config(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := decisionOf(rep, name)
	if !ok || d.Err != nil || !strings.Contains(d.Detail, "closed the runner access "+world.RunnerCIDR) {
		t.Errorf("the reaper's decision for %s does not say it closed the runner access: %+v", name, d)
	}
	rules, err := api.ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rules.Rules {
		if r.IPRange.String() == world.RunnerCIDR {
			t.Errorf("after the reaper the group still admits the runner: %s %v", r.Protocol, r.DestPortFrom)
		}
	}
	if loopback.Reach(runner, kube) == nil {
		t.Errorf("after the reaper the runner still reaches %s", kube)
	}
	if _, st, err = e.ops.Load(ctx, name); err != nil || st.Outputs[scaleway.OutAdminTemporary] != "" {
		t.Errorf("after the reaper the state still records the runner's CIDR %q (err %v)", st.Outputs[scaleway.OutAdminTemporary], err)
	}
	if h, ok := e.header(t, name); !ok || h.Phase != string(lifecycle.PhaseReady) {
		t.Errorf("the reaper changed the spared cluster: %+v", h)
	}
}
