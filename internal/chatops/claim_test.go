package chatops_test

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/spare"
)

// TestClaimOnTheWorld is the warm pool's claim on the wire: a spare built on the emulated world as
// `bot pool fill` builds it (a whole cluster, verified ready) is what `/poc up` hands out: its
// health re-checked against the world's nodes, every resource renamed and retagged to the
// issue's cluster (the emulator lists nothing under the spare's name any more), the reply saying
// which path and how old the spare was, with the requester's kubeconfig; a `/poc down` then finds
// and removes everything under the issue's name. Its question is the wire: the rebinding's
// calls, the real re-check; the decisions are the table's (clusterops' decide_claim_test.go) and
// the races the light harness's (claim_test.go).
func TestClaimOnTheWorld(t *testing.T) {
	t.Parallel()
	const repo = "acme/shop"
	h, ctx := scene{repo: repo, users: []string{"alice:write"}, issues: []int{4}, timeout: 4 * time.Minute}.open(t)
	pub, _ := sshUser(t)
	h.gh.AddUserKey("alice", pub)

	name := spare.NewName()
	b := sceneBounds(t, "")
	spec := h.backend.Spec // the repository's defaults, as a comment's up builds them
	spec.ServiceAccountKey = b.ServiceAccountKey
	built, err := h.backend.Ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, Repository: repo, Kind: spare.Kind,
		RequestedBy: "pool", Command: "pool fill", Bounds: &b, TTL: b.Pool.MaxAge + time.Hour})
	if err != nil {
		t.Fatalf("build spare %s: %v", name, err)
	}
	if rec, err := spare.Of(built.Header); err != nil || rec.Claimable(time.Now(), "") != "" {
		t.Fatalf("spare after its build: %+v (%v), not claimable: %s", rec, err, rec.Claimable(time.Now(), ""))
	}
	spareLive := h.live(name)
	if len(spareLive) == 0 {
		t.Fatal("the spare's build left nothing under its name")
	}

	// The bot's workflow, as bot init installs it: the claim dispatches the pool's refill to it.
	tmpl, err := os.ReadFile("../../deploy/workflow/poc.yml")
	if err != nil {
		t.Fatal(err)
	}
	h.gh.SetFile(repo, "", ".github/workflows/poc.yml", tmpl)
	cluster := commands.ClusterName("acme", "shop", 4)
	calls := h.calls()
	began := time.Now()
	h.answered(ctx, t, repo, 4, "alice", "/poc up")
	refillAfterReply(t, h, repo)
	own := ownComments(h, repo, 4)
	body := own[len(own)-2].Body // the status comment, brought to its end
	t.Logf("claim answered in %s with %d Scaleway calls", time.Since(began).Round(time.Millisecond), h.calls()-calls)
	holds(t, "the claim's reply", body, "**ready**", "| Path | warm: claimed a warm spare (age less than a minute): "+name,
		"age -d", ":6443")
	if left := h.live(name); len(left) != 0 {
		t.Errorf("resources still under the spare's name after the claim: %q", left)
	}
	got := h.live(cluster)
	if len(got) != len(spareLive) {
		t.Errorf("the issue's cluster owns %d resources, the spare had %d:\n%q\n%q", len(got), len(spareLive), got, spareLive)
	}
	for _, r := range got {
		if strings.Contains(r, name) {
			t.Errorf("resource %q still carries the spare's name", r)
		}
	}
	if !slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, "poc-"+cluster+"-cp-0") }) {
		t.Errorf("no control plane named after %s: %q", cluster, got)
	}
	if _, _, err := h.backend.Ops.Load(ctx, name); err == nil {
		t.Errorf("the claimed spare's document is still there")
	}

	// An up of the claimed cluster converges it as any cluster's: its graph finds every resource
	// under the new name, and its nodes keep the configs they run.
	calls = h.calls()
	holds(t, "the rerun's reply", h.answered(ctx, t, repo, 4, "alice", "/poc up"), "finished ✅")
	t.Logf("the rerun made %d Scaleway calls", h.calls()-calls)
	if got := h.live(cluster); len(got) != len(spareLive) {
		t.Errorf("after a rerun the cluster owns %d resources, want %d: %q", len(got), len(spareLive), got)
	}
	if ds := h.gh.WorkflowDispatches(); len(ds) != 1 {
		t.Errorf("the rerun (no claim) dispatched a refill: %+v", ds)
	}

	holds(t, "the down's reply", h.answered(ctx, t, repo, 4, "alice", "/poc down"), "resources deleted")
	if left := h.live(cluster); len(left) != 0 {
		t.Errorf("after /poc down of the claimed cluster, still live: %q", left)
	}
}

// On the light harness: `/poc cost` gives the warm pool's line (its spares, per day, accrued), and
// `/poc up --cold` leaves the spare while `/poc up` claims it, the status comment saying which.
func TestPoolCostAndColdOnComments(t *testing.T) {
	const repo = "acme/shop"
	h, ctx := scene{repo: repo, users: []string{"alice:write"}, issues: []int{5, 6}, light: true}.open(t)
	pub, _ := sshUser(t)
	h.gh.AddUserKey("alice", pub)
	b := sceneBounds(t, "")
	spec := h.backend.Spec
	spec.ServiceAccountKey = b.ServiceAccountKey
	if _, err := h.fake.Ops.Up(ctx, clusterops.Intent{Cluster: "spare-lightone", Spec: spec, Repository: repo, Kind: spare.Kind,
		RequestedBy: "pool", Bounds: &b, TTL: 25 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	holds(t, "the cost reply", h.answered(ctx, t, repo, 5, "alice", "/poc cost"),
		"Warm pool of this repository: 1 spare(s), € 4.30 per day, € 0.18 accrued")

	h.answered(ctx, t, repo, 5, "alice", "/poc up --cold")
	own := ownComments(h, repo, 5)
	holds(t, "the cold up's status", own[len(own)-2].Body, "| Path | cold: cold path asked (--cold) |")
	h.answered(ctx, t, repo, 6, "alice", "/poc up")
	own = ownComments(h, repo, 6)
	holds(t, "the warm up's status", own[len(own)-2].Body, "| Path | warm: claimed a warm spare (age less than a minute): spare-lightone |")
	if got := h.fake.Rebound(); len(got) != 1 || !strings.HasSuffix(got[0], ">"+commands.ClusterName("acme", "shop", 6)) {
		t.Errorf("rebindings %q, want the spare renamed to #6's cluster", got)
	}
	if strings.Contains(h.answered(ctx, t, repo, 6, "alice", "/poc cost"), "Warm pool") {
		t.Error("/poc cost still shows a pool line once its only spare was claimed")
	}
}

// refillAfterReply checks that the claim dispatched one refill of the warm pool (the bot's
// workflow on the default branch, command pool) and only after its reply: every write of a
// comment came before the dispatch.
func refillAfterReply(t *testing.T, h *harness, repo string) {
	t.Helper()
	ds := h.gh.WorkflowDispatches()
	if len(ds) != 1 || ds[0].Workflow != "poc.yml" || ds[0].Ref != "main" || ds[0].Inputs["command"] != chatops.RefillCommand || ds[0].Repo != repo {
		t.Fatalf("workflow dispatches %+v, want one refill (poc.yml on main, command %s)", ds, chatops.RefillCommand)
	}
	reqs := h.gh.Requests()
	at := slices.IndexFunc(reqs, func(r ghsim.Request) bool { return strings.HasSuffix(r.Path, "/actions/workflows/poc.yml/dispatches") })
	last := -1
	for i, r := range reqs {
		if r.Method != http.MethodGet && (strings.Contains(r.Path, "/comments") || strings.Contains(r.Path, "/reactions")) {
			last = i
		}
	}
	if at < 0 || last > at {
		t.Errorf("the refill was dispatched (request %d) before the reply's last write (request %d)", at, last)
	}
}
