package scaleway

import (
	"reflect"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// What a rebinding renames and retags, node by node: exactly the name and tags an up of the new
// cluster would have given each resource; the shared snapshot keeps its own; DNS records refuse.
func TestRebindPlan(t *testing.T) {
	t.Parallel()
	spec := testSpec("")
	spec.SSHPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ person"
	st, err := provision.NewState("spare-abcdefgh", spec)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(kind string) *provision.Record {
		return &provision.Record{Kind: kind, ID: "id-" + kind, Zone: "fr-par-1"}
	}
	st.Resources = map[string]*provision.Record{
		NodeIP(0): rec(KindIP), NodeSecGroup: rec(KindSG), NodeServer(0): rec(KindServer), NodeVolume(0): rec(KindVolume),
		NodeWorker: rec(KindBaremetal), NodeSSHKey: rec(KindSSHKey), NodePersonKey: rec(KindSSHKey), NodeSnapshot: rec(KindSnapshot),
	}
	got, err := RebindPlan(st, "acme-shop-12")
	if err != nil {
		t.Fatal(err)
	}
	tags := func(node string) []string {
		return []string{"pocbot", "pocbot-cluster=acme-shop-12", "pocbot-res=" + node}
	}
	want := map[string]Retag{
		NodeIP(0):     {Tags: tags(NodeIP(0))},
		NodeSecGroup:  {Name: "poc-acme-shop-12-cp", Tags: tags(NodeSecGroup)},
		NodeServer(0): {Name: "poc-acme-shop-12-cp-0", Tags: tags(NodeServer(0))},
		NodeVolume(0): {Name: "poc-acme-shop-12-cp-0-root", Tags: tags(NodeVolume(0))},
		NodeWorker:    {Name: "poc-acme-shop-12-edge-01", Tags: tags(NodeWorker)},
		NodeSSHKey:    {Name: "poc-acme-shop-12-bot"},
		NodePersonKey: {Name: "poc-acme-shop-12-person"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d retags, want %d (the snapshot is shared): %+v", len(got), len(want), got)
	}
	for _, rt := range got {
		w, ok := want[rt.Node]
		if !ok {
			t.Errorf("node %s retagged", rt.Node)
			continue
		}
		if rt.Name != w.Name || !reflect.DeepEqual(rt.Tags, w.Tags) || rt.ID != "id-"+rt.Kind || rt.Cluster != "acme-shop-12" {
			t.Errorf("node %s: %+v, want name %q tags %v", rt.Node, rt, w.Name, w.Tags)
		}
	}
	st.Resources[NodeDNS] = rec(KindDNS)
	if _, err := RebindPlan(st, "acme-shop-12"); err == nil || !strings.Contains(err.Error(), "DNS records") {
		t.Errorf("a cluster with DNS records: %v", err)
	}
	delete(st.Resources, NodeDNS)
	if _, err := RebindPlan(st, "Acme"); err == nil {
		t.Error("an invalid cluster id is refused")
	}
}

// A rebinding on the emulator: every resource of the spare is then the new cluster's by name and
// tag (its down and sweep find them all, the old name owns nothing), and a second run changes
// nothing.
func TestRebindOnTheEmulator(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{})
	st, _ := w.upCluster(t, ctx, "spare-abcdefgh")
	before := kinds(w.owned("spare-abcdefgh"))
	plan, err := RebindPlan(st, "acme-shop-12")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent
		if err := w.drv.Rebind(ctx, plan); err != nil {
			t.Fatal(err)
		}
	}
	if left := w.owned("spare-abcdefgh"); len(left) > 0 {
		t.Errorf("the spare's name still owns %v", left)
	}
	if after := kinds(w.owned("acme-shop-12")); !reflect.DeepEqual(after, before) {
		t.Errorf("the new cluster owns %v, the spare owned %v", after, before)
	}
	for _, r := range w.emu.Inventory() {
		if strings.Contains(r.Name, "spare-abcdefgh") {
			t.Errorf("%s %s still named %q", r.Kind, r.ID, r.Name)
		}
	}
	st.ClusterID = "acme-shop-12"
	if _, err := w.eng.Down(ctx, w.graph(t, st.Spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	for _, r := range w.emu.Inventory() {
		if r.Kind != "block_snapshot" {
			t.Errorf("left after the down of the rebound cluster: %s %s %q %v", r.Kind, r.ID, r.Name, r.Tags)
		}
	}
}
