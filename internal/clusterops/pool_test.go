package clusterops_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
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

// The down a plan's teardown runs: a park keeps the worker until the step's Until, the
// repository's own (shared only as share_parked_workers says); a destroy, or a park whose end
// has passed, parks nothing.
func TestPoolDown(t *testing.T) {
	now := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	req := poolRequest(1)
	shared := poolRequest(1)
	shared.Bounds.ShareParkedWorkers = true
	for _, tc := range []struct {
		name  string
		req   clusterops.PoolRequest
		step  spare.Step
		park  time.Duration
		share bool
	}{
		{name: "destroy", req: req, step: spare.Step{Action: spare.ActionDestroy, Spare: "spare-a", Why: "stale"}},
		{name: "park until the window", req: req, step: spare.Step{Action: spare.ActionPark, Spare: "spare-a", Until: now.Add(12 * time.Hour)}, park: 12 * time.Hour},
		{name: "park, shared as the repository shares", req: shared, step: spare.Step{Action: spare.ActionPark, Spare: "spare-a", Until: now.Add(time.Hour)},
			park: time.Hour, share: true},
		{name: "park whose end passed: destroyed", req: req, step: spare.Step{Action: spare.ActionPark, Spare: "spare-a", Until: now.Add(-time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := clusterops.PoolDown(tc.req, tc.step, now)
			if in.Cluster != "spare-a" || in.Repository != "acme/shop" || in.ParkFor != tc.park || in.ShareParked != tc.share || !in.NoCancel {
				t.Errorf("down %+v: want park %s, share %v, of acme/shop's spare-a", in, tc.park, tc.share)
			}
		})
	}
}

// The pass carries out its whole plan: a ready spare due for its check is checked as a claim
// re-checks; a failed check is recorded under the spare's lock (no claim takes it) and the next
// pass builds its replacement.
func TestPoolPassChecksTheSpares(t *testing.T) {
	f := newPoolFake(t)
	ctx := t.Context()
	buildSpare(t, f, "spare-cccc")
	req := poolRequest(1)
	req.CheckEvery = time.Nanosecond // every pass checks
	_, steps, err := f.ops.PoolPass(ctx, req)
	if err != nil || len(steps) != 1 || steps[0].Action != spare.ActionCheck {
		t.Fatalf("healthy spare: steps %+v, err %v; want one check that passes", steps, err)
	}
	f.SetUnhealthy("spare-cccc", "readyz: connection refused")
	_, steps, err = f.ops.PoolPass(ctx, req)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || len(steps) != 1 || steps[0].Action != spare.ActionCheck {
		t.Fatalf("unhealthy spare: steps %+v, err %v; want its check failing, saying why", steps, err)
	}
	doc, err := f.store.Get(ctx, "spare-cccc")
	if err != nil {
		t.Fatal(err)
	}
	if rec, _ := spare.Of(doc.Header); !strings.Contains(rec.Unhealthy, "connection refused") || rec.Claimable(time.Now(), "") == "" {
		t.Fatalf("record after the failed check: %+v; want it unhealthy and not claimable", rec)
	}
	if _, steps, err = f.ops.PoolPass(ctx, req); err != nil || len(steps) != 1 || steps[0].Action != spare.ActionBuild {
		t.Fatalf("pass after the failed check: steps %+v, err %v; want its replacement built", steps, err)
	}
}

// Outside pool.hours, with pool.off_hours long enough for an up adopting a parked worker and no
// cheaper option, the pass parks the spare's worker (the timing from the project's ETA book).
func TestPoolPassParksOffHours(t *testing.T) {
	f := newPoolFake(t)
	ctx := t.Context()
	book := &eta.Book{Store: f.store}
	for range eta.MinSamples {
		for p, d := range map[eta.Path]time.Duration{{Parked: true}: 4 * time.Minute, {}: 12 * time.Minute} {
			if err := book.Record(ctx, p, d, "", 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.ops.ETA = book
	buildSpare(t, f, "spare-pppp")
	now := time.Now().UTC()
	hours, err := settings.ParseHours(now.Add(3*time.Hour).Format("daily 15:04-") + now.Add(4*time.Hour).Format("15:04 UTC"))
	if err != nil {
		t.Fatal(err)
	}
	req := poolRequest(1)
	req.Bounds.Pool.Hours, req.Bounds.Pool.OffHours, req.Lead = hours, 5*time.Minute, 0
	plan, steps, err := f.ops.PoolPass(ctx, req)
	if err != nil || plan.Keep != spare.KeepParked || len(steps) != 1 || steps[0].Action != spare.ActionPark || steps[0].Spare != "spare-pppp" {
		t.Fatalf("plan %q (%s), steps %+v, err %v; want spare-pppp parked", plan.Keep, plan.Why, steps, err)
	}
	if names, _ := poolSpares(t, f); len(names) != 0 {
		t.Errorf("spares after the park: %q, want none", names)
	}
}

// pool.size the quotas cannot hold with a requester's cluster is refused naming the quota, and
// what fits is built.
func TestPoolPassRefusesASizeTheQuotasCannotHold(t *testing.T) {
	f := newPoolFake(t)
	// 8 PLAY2-NANO leave room for two clusters of three: one spare, and one for a requester.
	f.ops.Preflight = func(context.Context, provision.Spec, *provision.State, preflight.Ask) (preflight.Result, error) {
		return preflight.Decide(preflight.Input{Needs: []preflight.Need{{Key: "PLAY2-NANO", What: "PLAY2-NANO Instances", Count: 3}},
			Overrides: map[string]int{"PLAY2-NANO": 8}}), nil
	}
	_, steps, err := f.ops.PoolPass(t.Context(), poolRequest(3))
	var fit *clusterops.PoolFitError
	if !errors.As(err, &fit) || !strings.Contains(err.Error(), "PLAY2-NANO Instances: limit 8") || !strings.Contains(err.Error(), "pool.size to 1 at most") {
		t.Fatalf("err %v: want the size refused naming the quota and the size that fits", err)
	}
	if len(steps) != 1 || steps[0].Action != spare.ActionBuild || steps[0].Err != nil {
		t.Errorf("steps %+v: want the one spare that fits built", steps)
	}
}

// A plan whose builds need the room its teardowns free (the quotas leave none for both) runs the
// teardowns first; any other runs every step at once.
func TestPoolWaves(t *testing.T) {
	build, destroy, check := spare.Step{Action: spare.ActionBuild}, spare.Step{Action: spare.ActionDestroy, Spare: "s"}, spare.Step{Action: spare.ActionCheck, Spare: "c"}
	for _, tc := range []struct {
		name  string
		steps []spare.Step
		room  int
		want  [][]int
	}{
		{name: "not bounded", steps: []spare.Step{destroy, build}, room: -1, want: [][]int{{0, 1}}},
		{name: "room for the build", steps: []spare.Step{destroy, build}, room: 1, want: [][]int{{0, 1}}},
		{name: "the build needs the stale spare's room", steps: []spare.Step{destroy, build, check}, room: 0, want: [][]int{{0}, {1, 2}}},
		{name: "a park frees room too", steps: []spare.Step{build, {Action: spare.ActionPark, Spare: "p"}}, room: 0, want: [][]int{{1}, {0}}},
		{name: "nothing to tear down", steps: []spare.Step{build, build}, room: 1, want: [][]int{{0, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clusterops.PoolWaves(tc.steps, tc.room); !slices.EqualFunc(got, tc.want, slices.Equal[[]int]) {
				t.Errorf("waves %v, want %v", got, tc.want)
			}
		})
	}
}
