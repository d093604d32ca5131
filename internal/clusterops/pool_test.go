package clusterops_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/spare"
)

// poolSpares lists the names of acme/shop's spares in the bucket, and how many are claimable.
func poolSpares(t *testing.T, f *fake) (names []string, claimable int) {
	t.Helper()
	headers, err := f.store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		if !spare.Is(h) {
			continue
		}
		names = append(names, h.Cluster)
		if r, err := spare.Of(h); err == nil && r.Claimable(time.Now(), "") == "" {
			claimable++
		}
	}
	slices.Sort(names)
	return names, claimable
}

// newPoolFake is a fake whose runs wait for the admission lock as a world's do: a pass builds its
// spares at once, and they take turns at the admission.
func newPoolFake(t *testing.T) *fake {
	f := newFake(t)
	f.ops.LockWait = 30 * time.Second
	return f
}

func poolRequest(size int) clusterops.PoolRequest {
	b := repoconfig.Default()
	// Spares count as clusters and cost what they cost (TestPoolBuildsAreBudgeted).
	b.Pool.Size, b.MaxClusters, b.MaxDailyNanoEUR = size, 6, 100_000_000_000
	return clusterops.PoolRequest{Repository: "acme/shop", Spec: seedSpec(), Bounds: &b, Lead: 12 * time.Minute, RequestedBy: "pool"}
}

// `bot pool fill`: spares up to the size, none more on a second pass; a claim's gap refilled; a
// stale spare replaced, the new one built before the old one goes.
func TestPoolPassKeepsTheSize(t *testing.T) {
	f := newPoolFake(t)
	ctx := t.Context()
	plan, steps, err := f.ops.PoolPass(ctx, poolRequest(2))
	if err != nil {
		t.Fatalf("first pass: %v (%+v)", err, steps)
	}
	if names, ok := poolSpares(t, f); len(names) != 2 || ok != 2 || len(steps) != 2 || steps[0].Action != spare.ActionBuild {
		t.Fatalf("after the first pass: spares %q (%d claimable), steps %+v (%s); want 2 built", names, ok, steps, plan.Why)
	}
	if _, steps, err = f.ops.PoolPass(ctx, poolRequest(2)); err != nil || len(steps) != 0 {
		t.Fatalf("second pass: steps %+v, err %v; want nothing to do", steps, err)
	}

	// A claim takes one: the next pass builds one.
	if out, err := f.ops.Up(ctx, warmIntent(3)); err != nil || !strings.HasPrefix(out.Path, "warm:") {
		t.Fatalf("claim: %v, path %q", err, out.Path)
	}
	if _, steps, err = f.ops.PoolPass(ctx, poolRequest(2)); err != nil || len(steps) != 1 || steps[0].Action != spare.ActionBuild {
		t.Fatalf("pass after a claim: steps %+v, err %v; want one build", steps, err)
	}

	// One spare goes stale: a replacement is built first, the stale one destroyed by the pass
	// that finds its replacement ready.
	names, _ := poolSpares(t, f)
	stale := names[0]
	doc, err := f.store.Get(ctx, stale)
	if err != nil {
		t.Fatal(err)
	}
	doc.Header.Expires = time.Now().Add(-time.Minute)
	if err := f.store.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	if _, steps, err = f.ops.PoolPass(ctx, poolRequest(2)); err != nil || len(steps) != 1 || steps[0].Action != spare.ActionBuild {
		t.Fatalf("pass with a stale spare: steps %+v, err %v; want its replacement built first", steps, err)
	}
	if _, steps, err = f.ops.PoolPass(ctx, poolRequest(2)); err != nil || len(steps) != 1 ||
		steps[0].Action != spare.ActionDestroy || steps[0].Spare != stale {
		t.Fatalf("pass after the replacement: steps %+v, err %v; want %s destroyed", steps, err, stale)
	}
	if names, ok := poolSpares(t, f); len(names) != 2 || ok != 2 || slices.Contains(names, stale) {
		t.Errorf("pool at the end: %q (%d claimable), want 2 fresh spares", names, ok)
	}
	// pool.size 0 empties it.
	if _, steps, err = f.ops.PoolPass(ctx, poolRequest(0)); err != nil || len(steps) != 2 {
		t.Fatalf("pass of size 0: steps %+v, err %v", steps, err)
	}
	if names, _ := poolSpares(t, f); len(names) != 0 {
		t.Errorf("spares left after a pass of size 0: %q", names)
	}
}

// Spares are clusters to the budget: a build that max_clusters leaves no room for is refused,
// naming the limit, and nothing is built.
func TestPoolBuildsAreBudgeted(t *testing.T) {
	f := newPoolFake(t)
	req := poolRequest(3)
	req.Bounds.MaxClusters = 2
	_, steps, err := f.ops.PoolPass(t.Context(), req)
	if err == nil || !strings.Contains(err.Error(), "max_clusters") || len(steps) != 3 {
		t.Fatalf("steps %+v, err %v: want the third build refused by max_clusters", steps, err)
	}
	if names, _ := poolSpares(t, f); len(names) != 2 {
		t.Errorf("spares %q, want the two the budget allows", names)
	}
}

// A claim killed between the first write and the rebinding leaves the spare's document
// marked claimed by a cluster that holds its resources under the spare's names: the pass neither
// forgets it (the orphan pass would then take them) nor destroys it (they are the cluster's); once
// the rebinding is recorded, the pass forgets the leftover document.
func TestPoolPassLeavesAKilledClaimToItsCluster(t *testing.T) {
	f := newPoolFake(t)
	ctx := t.Context()
	buildSpare(t, f, "spare-kkkk")
	old := time.Now().Add(-2 * time.Hour)
	doc, err := f.store.Get(ctx, "spare-kkkk")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := spare.Of(doc.Header)
	if err != nil {
		t.Fatal(err)
	}
	rec.ClaimedBy, rec.ClaimedAt = "acme-shop-8", old
	rec.Into(&doc.Header)
	if err := f.store.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	in := warmIntent(8)
	f.put(t, in, "provisioning")
	claimed, err := f.store.Get(ctx, in.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	claimed.Header.Labels[spare.LabelClaimedFrom] = "spare-kkkk"
	if err := f.store.Put(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	req := poolRequest(0) // nothing to build: only the claimed spare's fate is asked
	if _, steps, err := f.ops.PoolPass(ctx, req); err != nil || len(steps) != 0 {
		t.Fatalf("steps %+v, err %v: want the unbound claim left to its cluster", steps, err)
	}
	claimed.Header.Labels["claim_rebound"] = "true"
	if err := f.store.Put(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	_, steps, err := f.ops.PoolPass(ctx, req)
	if err != nil || len(steps) != 1 || steps[0].Action != spare.ActionForget {
		t.Fatalf("steps %+v, err %v: want the rebound claim's spare document forgotten", steps, err)
	}
	if names, _ := poolSpares(t, f); len(names) != 0 {
		t.Errorf("spares left: %q", names)
	}
}

// Two pool passes at once (the schedule's, and an operator's `bot pool fill`; the bot's workflow
// has no concurrency group) build one pool, not one each: the second finds the pool's lock held
// and leaves the work to the first, saying so. Found by the soak (two async fills of acme/c:
// "acme/c holds 2 spares building or fresh and unclaimed, pool.size is 1").
func TestConcurrentPoolPassesBuildOnePool(t *testing.T) {
	f := newPoolFake(t)
	ctx := t.Context()
	type result struct {
		plan  spare.Plan
		steps []clusterops.PoolStep
		err   error
	}
	results := make([]result, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			req := poolRequest(1)
			req.RunID = fmt.Sprint(i)
			results[i].plan, results[i].steps, results[i].err = f.ops.PoolPass(ctx, req)
		})
	}
	wg.Wait()
	builds := 0
	for _, r := range results {
		if r.err != nil {
			t.Fatalf("a pass failed: %v", r.err)
		}
		builds += len(r.steps)
	}
	if names, _ := poolSpares(t, f); len(names) != 1 || builds != 1 {
		t.Fatalf("spares %q after two passes at once (%d builds; plans %q and %q), want one", names, builds, results[0].plan.Why, results[1].plan.Why)
	}
	for _, r := range results {
		if len(r.steps) == 0 && !strings.Contains(r.plan.Why, "another pool pass") {
			t.Errorf("the pass that built nothing says %q, want why", r.plan.Why)
		}
	}
}
