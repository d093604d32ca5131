package reaper_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/settings"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

func (e *env) bmTags(id string) ([]string, bool) {
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" && r.ID == id {
			return r.Tags, true
		}
	}
	return nil, false
}

// A reaper teardown with park_for parks the worker, and so does the schedule's pause, from a
// runner outside admin_cidrs (203.0.113.0/24; the runner is 127.0.0.1: before issue 31 the park's
// Talos reset dialled the worker, whose firewall admits the admin CIDRs and the nodes only, and
// the worker was deleted after the reset's whole timeout); no security group admits the runner
// after the run. A later run past parked-until deletes the worker and empties the pool; a server
// tagged parked that no pool entry lists is deleted as an orphan (past the grace), one still
// listed is not.
func TestReapParksThenExpires(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, 3*time.Minute)
	spec := e.spec
	spec.AdminCIDRs = []string{"203.0.113.0/24"}
	ups := map[string]*clusterops.Outcome{}
	// An up of a new issue; its worker's server id.
	upWorker := func(name string, ttl time.Duration) string {
		t.Helper()
		n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"})
		res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, TTL: ttl,
			Repository: repo, Number: n, Kind: "issue", RequestedBy: "alice", Command: "up"})
		if err != nil {
			t.Fatal(err)
		}
		ups[name] = res
		return res.State.Resources[scaleway.NodeWorker].ID
	}
	worker, lost, night := upWorker("acme-shop-park", time.Hour), upWorker("acme-shop-park2", time.Hour), upWorker("acme-shop-night", 24*time.Hour)
	pl := &poolstore.Pool{Store: e.store}

	at := time.Now().Add(2 * time.Hour)
	cfg := e.config(at)
	cfg.ParkFor = 3 * time.Hour // parked-until is on the real clock; this run's is 2 h ahead
	cfg.Pool, cfg.Parked = pl, e.driver
	// The night cluster is inside its pause window: the schedule pauses it, parking its worker.
	sched, err := settings.ParsePauseSchedule(fmt.Sprintf("daily %s-%s UTC", at.Add(-time.Hour).UTC().Format("15:04"), at.Add(time.Hour).UTC().Format("15:04")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.PauseSchedule = sched
	rep, err := reaper.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first run:\n%s", table(t, rep))
	if d, _ := decisionOf(rep, "acme-shop-park"); d.Action != reaper.ActionDestroyed {
		t.Fatalf("expired cluster: %+v", d)
	}
	if d, _ := decisionOf(rep, "acme-shop-night"); d.Action != reaper.ActionPaused {
		t.Fatalf("cluster in its pause window: %+v", d)
	}
	for _, id := range []string{worker, lost, night} {
		if tags, ok := e.bmTags(id); !ok || !slices.Equal(tags, []string{scaleway.ParkedTag}) {
			t.Fatalf("worker %s after the reaper's teardown or pause: present %v, tags %v", id, ok, tags)
		}
	}
	if admits := worldtest.GroupAdmits(t, e.client, ups["acme-shop-night"].State.Resources[scaleway.NodeSecGroup], "127.0.0.1"); len(admits) > 0 {
		t.Fatalf("after the scheduled pause the security group admits the runner: %v", admits)
	}
	doc, err := pl.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entry, ok := doc.Find(worker)
	if _, ok2 := doc.Find(lost); !ok || !ok2 {
		t.Fatal("the reaped clusters' workers are not in the pool")
	}
	// The second one's entry is lost: its server, still tagged parked, is an orphan.
	if err := pl.Remove(ctx, lost); err != nil {
		t.Fatal(err)
	}

	// Before parked-until: kept.
	cfg = e.config(entry.ParkedUntil.Add(-time.Minute))
	cfg.Pool, cfg.Parked = pl, e.driver
	if rep, err = reaper.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.bmTags(worker); !ok {
		t.Fatalf("a parked worker was deleted before its parked-until:\n%s", table(t, rep))
	}
	// ... while the server whose entry was lost, past the grace, is swept as an orphan.
	if d, _ := decisionOf(rep, "parked/"+lost); d.Action != reaper.ActionSwept || d.Reason != reaper.ReasonParkOrphan {
		t.Fatalf("parked server without a pool entry: %+v\n%s", d, table(t, rep))
	}
	// Past it: deleted, and the pool forgets it.
	cfg = e.config(entry.ParkedUntil.Add(time.Minute))
	cfg.Pool, cfg.Parked = pl, e.driver
	if rep, err = reaper.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("past parked-until:\n%s", table(t, rep))
	d, _ := decisionOf(rep, "parked/"+worker)
	if d.Action != reaper.ActionSwept || d.Reason != reaper.ReasonParkExpired {
		t.Fatalf("expired parked worker: %+v", d)
	}
	for _, id := range []string{worker, lost, night} {
		if err := waitGone(ctx, e, id); err != nil {
			t.Fatalf("server %s: %v", id, err)
		}
	}
	if doc, _ := pl.List(ctx); len(doc.Workers) != 0 {
		t.Fatalf("pool after expiry = %+v", doc.Workers)
	}
}

func waitGone(ctx context.Context, e *env, id string) error {
	for {
		if _, ok := e.bmTags(id); !ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
