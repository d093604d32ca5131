package chatops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
)

// Parked workers are billed: /poc cost says what parking costs per hour and what is parked now,
// and the budget counts a parked worker's price (a cluster that fits alone is refused beside it).
func TestParkedWorkersAreBilled(t *testing.T) {
	const repo = "acme/park"
	// One seed cluster costs ≈ 4.30 € a day: it fits 5 € alone, not beside a parked worker.
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1}, config: "park_for: 2h\nmax_daily_eur: 5\n", timeout: 2 * time.Minute}.open(t)

	holds(t, "cost reply (what parking costs)", h.answered(ctx, t, repo, 1, "alice", "/poc cost"), "Parking is on (park\\_for 2h)", "per hour")

	spec := h.backend.Spec
	pl := &poolstore.Pool{Store: h.backend.Ops.Store}
	if err := pl.Park(ctx, pool.Worker{ServerID: "parked-1", IP: "127.0.0.9", Zone: spec.Zone, Offer: spec.BaremetalOffer,
		TalosVersion: "v0.0.0", Schematic: "none", ParkedUntil: time.Now().Add(time.Hour)}); err != nil {
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
