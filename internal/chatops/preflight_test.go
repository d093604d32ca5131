package chatops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/eta"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// Under Scaleway's default quotas, with the first worker offer out of stock: the dry run shows
// the quotas' headroom, the offers' stock and prices and which one would be taken; the up takes
// the fallback offer and says so; the second cluster is refused before anything is created,
// naming the quota and how to raise it.
func TestQuotasStockAndFallbackOnGitHub(t *testing.T) {
	t.Parallel()
	const repo = "acme/quota"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1, 2}, timeout: 4 * time.Minute,
		config: "max_clusters: 5\nmax_daily_eur: 100\nworker_offers: [EM-A116X-SSD, EM-B112X-SSD]\n",
		world:  world.Options{OrgQuotas: scwsim.DocumentedQuotas(), Stock: map[string]int{"EM-A116X-SSD": 0}}}.open(t)

	out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up --dry-run"))
	if err != nil || !out.OK {
		t.Fatalf("dry run: outcome %+v, err %v", out, err)
	}
	plan := lastBody(h, repo, 1)
	for _, want := range []string{"Scaleway quotas", `| PLAY2-NANO Instances | 5 | the organization's quota instance\_servers\_play2\_nano | 0 | 3 | 2 |`,
		"EM-A116X-SSD", "skipped: out of stock", "EM-B112X-SSD", "taken",
		"**ETA:** about ", " min (cold, first image, from the latency profile)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the dry run does not show %q:\n%s", want, plan)
		}
	}

	out, err = h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up"))
	if err != nil || !out.OK {
		t.Fatalf("up: outcome %+v, err %v", out, err)
	}
	var sticky string
	for _, c := range h.botComments(repo, 1) {
		if strings.Contains(c.Body, "Worker offer") {
			sticky = c.Body
		}
	}
	if !strings.Contains(sticky, "EM-B112X-SSD") || !strings.Contains(sticky, "EM-A116X-SSD skipped: out of stock") {
		t.Errorf("the status comment does not say which offer was taken and why:\n%s", sticky)
	}

	// The up's duration is this project's history now: the ETA of its path reads it.
	if sh, err := h.backend.Ops.Store.GetShared(ctx, eta.DocName); err != nil || !strings.Contains(string(sh.Body), "cold, first image") {
		t.Errorf("the up's duration was not recorded: %v", err)
	}

	inv := len(h.w.Scaleway.Inventory())
	out, err = h.handle(ctx, h.comment(repo, 2, false, "alice", "/poc up"))
	if err != nil || out.Refused != "quota" {
		t.Fatalf("second up: outcome %+v, err %v", out, err)
	}
	reply := lastBody(h, repo, 2)
	for _, want := range []string{"Not created", `limit 5 (the organization's quota instance\_servers\_play2\_nano), in use 3, this cluster needs 3`, "Nothing was created", commands.QuotasPage} {
		if !strings.Contains(reply, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, reply)
		}
	}
	if n := len(h.w.Scaleway.Inventory()); n != inv {
		t.Errorf("the refused up changed the inventory: %d resources, %d before", n, inv)
	}
	if left := h.live(commands.ClusterName("acme", "quota", 2)); len(left) > 0 {
		t.Errorf("the refused up created %v", left)
	}
}
