package chatops_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestBudgetRace replays hole 2 of issue 11: five `/poc up` on five issues of one repository at
// once, with room for one cluster. Exactly one cluster may be created; the four others are refused
// with a reply naming the limit, and create nothing. Once by max_clusters, once by max_daily_eur.
func TestBudgetRace(t *testing.T) {
	h, ctx := scene{light: true}.open(t)
	gh := h.gh
	q, err := clusterops.Quote(ctx, h.backend.Ops.Quoter, h.backend.Spec, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	// Room for one cluster and a half, by money only.
	eur := fmt.Sprintf("%.2f", float64(q.Daily.Nanos)*1.5/1e9)
	for _, tc := range []struct {
		repo, config, limit string
	}{
		{"race/count", "max_clusters: 1\n", "max_clusters"},
		{"race/money", "max_clusters: 10\nmax_daily_eur: " + eur + "\n", "max_daily_eur"},
	} {
		t.Run(tc.limit, func(t *testing.T) {
			h.repo(tc.repo)
			gh.SetPermission(tc.repo, "alice", "admin")
			gh.SetFile(tc.repo, "", ".github/poc.yml", []byte(tc.config))
			var evs []github.Event
			for n := 1; n <= 5; n++ {
				gh.AddIssue(tc.repo, ghsim.Issue{Number: n, Author: "alice"})
				evs = append(evs, h.comment(tc.repo, n, false, "alice", "/poc up"))
			}
			outs := make([]chatops.Outcome, len(evs))
			errs := make([]error, len(evs))
			var wg sync.WaitGroup
			for i, ev := range evs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[i], errs[i] = h.raceHandler(tc.repo, i).Handle(ctx, ev)
				}()
			}
			wg.Wait()
			owner, name, _ := strings.Cut(tc.repo, "/")
			var ok, refused int
			for i := range evs {
				cl := commands.ClusterName(owner, name, i+1)
				switch {
				case errs[i] == nil && outs[i].OK:
					ok++
				case errs[i] == nil && outs[i].Refused == "budget":
					refused++
					if left := h.live(cl); len(left) > 0 {
						t.Errorf("refused up of %s created %v", cl, left)
					}
					if last := lastBody(h, tc.repo, i+1); !strings.Contains(last, tc.limit) || !strings.Contains(last, "Nothing was created") {
						t.Errorf("refusal of %s does not name %s:\n%s", cl, tc.limit, last)
					}
				default:
					t.Errorf("up of %s: outcome %+v, err %v", cl, outs[i], errs[i])
				}
			}
			headers, err := h.backend.Ops.Store.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			docs := 0
			for _, hd := range headers {
				if hd.Repository == tc.repo {
					docs++
				}
			}
			if ok != 1 || refused != 4 || docs != 1 {
				t.Fatalf("%d clusters created, %d refused, %d state documents: want 1, 4, 1", ok, refused, docs)
			}
		})
	}
}

// raceHandler is h.handler for runs that share the harness at the same time: its own run id and
// Actions files.
func (h *harness) raceHandler(full string, i int) *chatops.Handler {
	env := github.ActionsEnv{Repository: full, APIURL: h.ghURL, ServerURL: "https://github.com", RunID: strconv.Itoa(5000 + i), InActions: true}
	env.Owner, env.Repo, _ = strings.Cut(full, "/")
	return &chatops.Handler{
		GitHub:  h.client(full),
		Env:     env,
		Actions: &github.Actions{Stdout: &bytes.Buffer{}, Output: &bytes.Buffer{}, Summary: &bytes.Buffer{}},
		Open: func(context.Context) (*chatops.Backend, error) {
			return h.backend, nil
		},
		AppSlug:        h.gh.AppSlug(),
		Log:            h.log,
		Started:        time.Now(),
		StickyInterval: 100 * time.Millisecond,
	}
}

// TestEditedHeaderDoesNotDefeatBudget is hole 4 of issue 11 on the budget's side: someone who can
// write to the state bucket sets a running cluster's recorded daily cost to 1 nano-euro (same
// length, integrity trailer recomputed). The budget must not take the edited header at its word:
// the object counts at worst case, and the refusal names it.
func TestEditedHeaderDoesNotDefeatBudget(t *testing.T) {
	const repo = "edit/money"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{2}, timeout: 2 * time.Minute}.open(t)
	gh := h.gh
	q, err := clusterops.Quote(ctx, h.backend.Ops.Quoter, h.backend.Spec, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	gh.SetFile(repo, "", ".github/poc.yml", []byte(fmt.Sprintf("max_clusters: 10\nmax_daily_eur: %.2f\n", float64(q.Daily.Nanos)*1.5/1e9)))
	cost := strconv.FormatInt(q.Daily.Nanos, 10)
	running := commands.ClusterName("edit", "money", 1)
	doc := &statestore.Document{Header: statestore.Header{Cluster: running, Repository: repo, Number: 1, Created: time.Now()}, Body: []byte(`{"version":1}`)}
	clusterops.Meta{DailyCostNanos: q.Daily.Nanos}.Into(&doc.Header)
	if err := h.backend.Ops.Store.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	b := worldtest.Bucket(t, h.w, world.StateBucket)
	key := "clusters/" + running + ".state"
	obj, err := b.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	const wire = "daily_cost_nanos" // the label as it lies in the bucket
	label := []byte(`"` + wire + `":"` + cost + `"`)
	if !bytes.Contains(obj, label) {
		t.Fatalf("the header does not hold %s", label)
	}
	edited := bytes.Replace(obj, label, []byte(`"`+wire+`":"`+fmt.Sprintf("%0*d", len(cost), 1)+`"`), 1)
	sum := sha256.Sum256(edited[:len(edited)-sha256.Size])
	copy(edited[len(edited)-sha256.Size:], sum[:])
	if err := b.WriteAll(ctx, key, edited, nil); err != nil {
		t.Fatal(err)
	}
	defer b.Delete(t.Context(), key)

	out, err := h.handle(ctx, h.comment(repo, 2, false, "alice", "/poc up"))
	if err != nil || out.Refused != "budget" {
		t.Fatalf("outcome %+v, err %v: an edited header must not make room in the budget", out, err)
	}
	last := lastBody(h, repo, 2)
	if !strings.Contains(last, "Nothing was created") || !strings.Contains(last, key) {
		t.Errorf("refusal does not name the unverifiable object %s:\n%s", key, last)
	}
	if left := h.live(commands.ClusterName("edit", "money", 2)); len(left) > 0 {
		t.Errorf("the refused up created %v", left)
	}
}

// Found by the soak (seed 945635235930351248, max_clusters: 1 went to 2): an up planned against
// an existing cluster waits for its lock; meanwhile a down deletes that cluster and another issue
// of the repository gets the one allowed cluster. When the lock comes, the up finds no state and
// creates the cluster anew — it must pass the budget under the admission lock like any new
// cluster, not skip it because it saw the cluster exist when it planned.
func TestUpRecreatingAfterADownIsBudgeted(t *testing.T) {
	const repo = "acme/recreate"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1, 2}, config: "max_clusters: 1\n", light: true}.open(t)
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

// Parked workers are billed: /poc cost says what parking costs per hour and what is parked now,
// and the budget counts a parked worker's price (a cluster that fits alone is refused beside it).
func TestParkedWorkersAreBilled(t *testing.T) {
	const repo = "acme/park"
	// One seed cluster costs ≈ 4.30 € a day: it fits 5 € alone, not beside a parked worker.
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1}, config: "park_for: 2h\nmax_daily_eur: 5\n", light: true}.open(t)

	holds(t, "cost reply (what parking costs)", h.answered(ctx, t, repo, 1, "alice", "/poc cost"), "Parking is on (park\\_for 2h)", "per hour")

	spec := h.backend.Spec
	pl := &poolstore.Pool{Store: h.backend.Ops.Store}
	if err := pl.Park(ctx, pool.Worker{ServerID: "parked-1", IP: "127.0.0.9", Zone: spec.Zone, Offer: spec.BaremetalOffer,
		TalosVersion: "v0.0.0", Schematic: "none", ParkedUntil: time.Now().Add(time.Hour), Repository: repo}); err != nil {
		t.Fatal(err)
	}
	holds(t, "cost reply (the parked worker)", h.answered(ctx, t, repo, 1, "alice", "/poc cost"), "1 parked worker(s) in this state bucket are billed now")
	out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up"))
	if err != nil || out.Refused != "budget" {
		t.Fatalf("up beside a parked worker over max_daily_eur: outcome %+v, err %v", out, err)
	}
	if last := lastBody(h, repo, 1); !strings.Contains(last, "max_daily_eur") {
		t.Errorf("budget refusal:\n%s", last)
	}
	if left := h.live(commands.ClusterName("acme", "park", 1)); len(left) > 0 {
		t.Errorf("a refused up created %v", left)
	}
}
