package chatops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// TestRollbackRefused is hole 4 of issue 11 on rollback: someone who can write to the state bucket
// puts back an older version of a cluster's state. A new process (which has seen no serial yet)
// must not work from it: the status comment on GitHub, which a bucket writer cannot change,
// recorded a newer serial. The command is refused with what happened and what to do, and nothing
// is called on Scaleway.
func TestRollbackRefused(t *testing.T) {
	t.Parallel()
	const repo = "acme/rb"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1}, timeout: 3 * time.Minute}.open(t)
	name := commands.ClusterName("acme", "rb", 1)
	key := "clusters/" + name + ".state"
	b := worldtest.Bucket(t, h.w, world.StateBucket)

	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("first up: %+v %v", out, err)
	}
	old, err := b.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("second up: %+v %v", out, err)
	}
	if err := b.WriteAll(ctx, key, old, nil); err != nil { // the rollback
		t.Fatal(err)
	}

	// A new process: a store that has seen no serial.
	p := worldtest.New(t, h.w, worldtest.Options{Log: h.log})
	h.backend = &chatops.Backend{Ops: p.Ops, Spec: p.Spec}
	calls := h.calls()
	for _, verb := range []string{"/poc up", "/poc down"} {
		out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", verb))
		if err != nil || out.Refused != "rollback" {
			t.Fatalf("%s on a rolled-back state: outcome %+v, err %v; want refused as a rollback", verb, out, err)
		}
		last := lastBody(h, repo, 1)
		for _, want := range []string{"older", "serial", key, "version"} {
			if !strings.Contains(last, want) {
				t.Errorf("%s: the refusal does not say %q:\n%s", verb, want, last)
			}
		}
	}
	if n := h.calls() - calls; n != 0 {
		t.Errorf("commands on a rolled-back state made %d Scaleway calls", n)
	}
	if len(h.live(name)) == 0 {
		t.Error("the cluster is gone: the down ran on the rolled-back state")
	}
}

// TestNewLifeAboveStaleWitness: a status comment that still records the serial of an earlier life
// of the cluster (its down could not edit it) must not make the next life look rolled back: the
// new document's serials continue above it.
func TestNewLifeAboveStaleWitness(t *testing.T) {
	const repo = "acme/life"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1}, light: true}.open(t)
	name := commands.ClusterName("acme", "life", 1)
	for _, verb := range []string{"/poc up", "/poc down"} {
		if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", verb)); err != nil || !out.OK {
			t.Fatalf("%s: %+v %v", verb, out, err)
		}
	}
	c, ok, err := h.client(repo).FindComment(ctx, 1, commands.StickyMarker(name))
	if err != nil || !ok {
		t.Fatalf("status comment: %v %v", ok, err)
	}
	if _, ok := commands.StickyStateSerial(c.Body); ok {
		t.Errorf("the status comment of a destroyed cluster still records a state serial:\n%s", c.Body)
	}
	stale := strings.Replace(c.Body, "\n", "\n<!-- pocbot:state-serial=999 -->\n", 1)
	if _, err := h.client(repo).EditComment(ctx, c.ID, stale); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"/poc up", "/poc status"} {
		if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", verb)); err != nil || !out.OK {
			t.Fatalf("%s after a stale witness: %+v %v\n%s", verb, out, err, lastBody(h, repo, 1))
		}
	}
	doc, err := h.backend.Ops.Store.Get(ctx, name)
	if err != nil || doc.Header.Serial <= 999 {
		t.Fatalf("the new life's serial: %v %v; want above 999", doc, err)
	}
	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc down")); err != nil || !out.OK {
		t.Fatalf("down: %+v %v", out, err)
	}
}
