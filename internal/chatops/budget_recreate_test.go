package chatops_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Found by the soak (seed 945635235930351248, max_clusters: 1 went to 2): an up planned against
// an existing cluster waits for its lock; meanwhile a down deletes that cluster and another issue
// of the repository gets the one allowed cluster. When the lock comes, the up finds no state and
// creates the cluster anew — it must pass the budget under the admission lock like any new
// cluster, not skip it because it saw the cluster exist when it planned.
func TestUpRecreatingAfterADownIsBudgeted(t *testing.T) {
	const repo = "acme/recreate"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1, 2}, config: "max_clusters: 1\n", timeout: 2 * time.Minute}.open(t)
	one, two := commands.ClusterName("acme", "recreate", 1), commands.ClusterName("acme", "recreate", 2)

	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("first up: outcome %+v, err %v", out, err)
	}
	// A run holds #1's lock while the second up of #1 plans (it sees the cluster) and waits.
	held, err := h.backend.Ops.Store.Lock(ctx, one, statestore.LockInfo{Actor: "carol", Command: "down", RunID: "77"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	hd := h.handlerWaiting(repo, time.Minute)
	type result struct {
		out chatops.Outcome
		err error
	}
	done := make(chan result, 1)
	waiting := h.comment(repo, 1, false, "alice", "/poc up")
	go func() {
		out, err := hd.Handle(ctx, waiting)
		done <- result{out, err}
	}()
	// Wait until the waiting up has started (👀). It decides only under the cluster's lock
	// (issue 23), so whether it reached the lock before the deletion below or not, it must find no
	// state once the lock is free, and pass the budget as a new cluster.
	deadline := time.Now().Add(time.Minute)
	for !slices.Contains(h.reactions(repo, 1, waiting.CommentID), "eyes") {
		if time.Now().After(deadline) {
			t.Fatal("the second up of #1 never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The lock holder removes #1's state (as a down does last); then #2 gets the repository's one
	// cluster; then the lock is free for the waiting up.
	doc, err := h.backend.Ops.Store.Get(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.backend.Ops.Store.Delete(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if out, err := h.handle(ctx, h.comment(repo, 2, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("up of #2: outcome %+v, err %v", out, err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the up of #1 waiting for the lock never answered once the lock was free")
	}
	if r.err != nil || r.out.Refused != "budget" {
		t.Errorf("the up of #1 that planned against the deleted cluster: outcome %+v, err %v; want refused by the budget", r.out, r.err)
	}
	headers, err := h.backend.Ops.Store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, hd := range headers {
		if hd.Repository == repo {
			states = append(states, hd.Cluster)
		}
	}
	if len(states) != 1 || states[0] != two {
		t.Errorf("max_clusters: 1, and the repository's states are %v (want only %s)", states, two)
	}
}
