package chatops_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

// `/poc pause` answers with what was kept, what the paused cluster costs per day and how to
// resume; `/poc cost` and `/poc status` price it paused; `/poc resume` brings it back ready;
// a read-only user may do neither, and a resume of a running cluster is refused.
func TestPauseAndResumeVerbs(t *testing.T) {
	t.Parallel()
	const repo = "acme/freeze"
	h, ctx := scene{repo: repo, users: []string{"alice:admin", "bob:read"}, issues: []int{7}, timeout: 4 * time.Minute}.open(t)
	name := commands.ClusterName("acme", "freeze", 7)

	alicePub, aliceID := sshUser(t)
	h.gh.AddUserKey("alice", alicePub)
	if out, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("up: %+v %v", out, err)
	}
	// alice writes a ConfigMap with the kubeconfig the up's reply gave her; it is there after the
	// resume.
	kube := func() *simtalos.KubeClient {
		t.Helper()
		var link string
		for _, c := range h.botComments(repo, 7) {
			if m := curlRE.FindStringSubmatch(c.Body); m != nil {
				link = m[1]
			}
		}
		if link == "" {
			t.Fatal("no kubeconfig link in the bot's comments")
		}
		k, err := simtalos.NewKubeClient(fetchAndDecrypt(t, link, aliceID))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	if err := kube().Create(ctx, "configmaps", "default", "before-the-pause", map[string]string{"v": "42"}); err != nil {
		t.Fatalf("write a ConfigMap before the pause: %v", err)
	}
	if out, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc resume")); err != nil || out.OK || !strings.Contains(lastBody(h, repo, 7), "is not paused") {
		t.Fatalf("resume of a running cluster: %+v %v\n%s", out, err, lastBody(h, repo, 7))
	}
	if out, _ := h.handle(ctx, h.comment(repo, 7, false, "bob", "/poc pause")); out.OK {
		t.Fatal("a read-only user paused the cluster")
	}
	out, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc pause"))
	if err != nil || !out.OK {
		t.Fatalf("pause: %+v %v", out, err)
	}
	doc, err := h.backend.Ops.Store.Get(ctx, name)
	if err != nil || doc.Header.Phase != string(lifecycle.PhasePaused) {
		t.Fatalf("header after pause: %+v %v", doc, err)
	}
	var sticky string
	for _, c := range h.botComments(repo, 7) {
		if strings.Contains(c.Body, "`/poc pause`") && strings.Contains(c.Body, "Paused.") {
			sticky = c.Body
		}
	}
	for _, want := range []string{"3 reserved IPv4", "per day** while paused", "running)", "`/poc resume`", "verified"} {
		if !strings.Contains(sticky, want) {
			t.Errorf("the status comment after the pause lacks %q:\n%s", want, sticky)
		}
	}
	if left := h.live(name); len(left) == 0 {
		t.Error("the pause removed everything: the IPs and the security group must stay")
	}
	for _, l := range h.live(name) {
		if strings.HasPrefix(l, "instance_server") || strings.HasPrefix(l, "baremetal_server") {
			t.Errorf("billed machine left while paused: %s", l)
		}
	}

	if _, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc cost")); err != nil {
		t.Fatal(err)
	}
	if c := lastBody(h, repo, 7); !strings.Contains(c, "is paused") || strings.Contains(c, "PLAY2-NANO") {
		t.Errorf("cost of the paused cluster:\n%s", c)
	}
	if _, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc status")); err != nil {
		t.Fatal(err)
	}
	if c := lastBody(h, repo, 7); !strings.Contains(c, "paused") {
		t.Errorf("status of the paused cluster:\n%s", c)
	}

	if out, err := h.handle(ctx, h.comment(repo, 7, false, "alice", "/poc resume")); err != nil || !out.OK {
		t.Fatalf("resume: %+v %v", out, err)
	}
	doc, err = h.backend.Ops.Store.Get(ctx, name)
	if err != nil || doc.Header.Phase != string(lifecycle.PhaseReady) {
		t.Fatalf("header after resume: %+v %v", doc, err)
	}
	if m, _ := clusterops.MetaOf(doc.Header); m.DailyCostNanos < 4_000_000_000 {
		t.Errorf("daily cost after the resume = %d nano-euros, want the running cost", m.DailyCostNanos)
	}
	if d, err := kube().Data(ctx, "configmaps", "default", "before-the-pause"); err != nil || d["v"] != "42" {
		t.Errorf("the ConfigMap written before the pause, after the resume: %v %v", d, err)
	}
	scanSecrets(t, h)
}

// With a pause_schedule, `/poc cost` shows what it saves a week. Inside a pause window, a read
// verb (status, cost, help) leaves a paused cluster paused and hands out no kubeconfig, whoever
// asks (issue 36: a read user's `/poc status` woke it and got the admin kubeconfig); a verb
// that uses the cluster, from a user who may resume it, resumes it, keeps it awake until the
// window ends, and the status comment says when the next scheduled pause is. The wake reads the
// document once and takes the lock once (before, chatops read it, then set awake_until under
// one lock, then resumed under a second: three reads, two locks). The question is the bot's
// decision and its replies: no world (the light harness).
func TestCommandInsidePauseWindowResumes(t *testing.T) {
	const repo = "acme/night"
	h, ctx := scene{repo: repo, users: []string{"alice:admin", "rita:read", "tim:triage"}, issues: []int{3}, light: true}.open(t)
	alicePub, _ := sshUser(t)
	h.gh.AddUserKey("alice", alicePub)
	gh := h.gh
	name := commands.ClusterName("acme", "night", 3)
	now := time.Now().UTC()
	window := fmt.Sprintf("daily %s-%s UTC", now.Add(-time.Hour).Format("15:04"), now.Add(2*time.Hour).Format("15:04"))
	gh.SetFile(repo, "", ".github/poc.yml", []byte("pause_schedule: "+window+"\n"))

	if out, err := h.handle(ctx, h.comment(repo, 3, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("up: %+v %v", out, err)
	}
	// The up's reply shows the schedule: the window it is in, and what the schedule saves a week.
	upReply := ""
	for _, c := range h.botComments(repo, 3) {
		if strings.Contains(c.Body, "Kubeconfig") {
			upReply = c.Body
		}
	}
	for _, want := range []string{"pause window of `pause_schedule`", "pauses the cluster", "saving"} {
		if !strings.Contains(upReply, want) {
			t.Errorf("the up's reply lacks %q:\n%s", want, upReply)
		}
	}
	if _, err := h.handle(ctx, h.comment(repo, 3, false, "alice", "/poc cost")); err != nil {
		t.Fatal(err)
	}
	if c := lastBody(h, repo, 3); !strings.Contains(c, "pauses the cluster") || !strings.Contains(c, "saving") {
		t.Errorf("cost does not show the schedule's saving:\n%s", c)
	}
	if out, err := h.handle(ctx, h.comment(repo, 3, false, "alice", "/poc pause")); err != nil || !out.OK {
		t.Fatalf("pause: %+v %v", out, err)
	}
	links := func() map[string]bool {
		m := map[string]bool{}
		for _, c := range h.gh.Comments(repo, 3) {
			for _, l := range curlRE.FindAllString(c.Body, -1) {
				m[l] = true
			}
		}
		return m
	}
	before := links()
	for _, c := range []struct{ who, cmd string }{
		{"rita", "/poc status"}, {"rita", "/poc cost"}, {"rita", "/poc help"}, {"rita", "/poc kubeconfig"},
		{"rita", "/poc up"}, {"tim", "/poc status"}, {"tim", "/poc extend 1h"}, {"alice", "/poc status"}, {"alice", "/poc cost"},
	} {
		if _, err := h.handle(ctx, h.comment(repo, 3, false, c.who, c.cmd)); err != nil {
			t.Fatalf("%s's %s inside the window: %v", c.who, c.cmd, err)
		}
		if doc, err := h.backend.Ops.Store.Get(ctx, name); err != nil || doc.Header.Phase != string(lifecycle.PhasePaused) {
			t.Fatalf("%s's %s inside the window woke the cluster: %+v %v", c.who, c.cmd, doc, err)
		}
	}
	for l := range links() {
		if !before[l] {
			t.Fatalf("a read verb or a refused user got a kubeconfig link: %s", l)
		}
	}
	h.fake.Count.Reset()
	if out, err := h.handle(ctx, h.comment(repo, 3, false, "alice", "/poc kubeconfig")); err != nil || !out.OK {
		t.Fatalf("kubeconfig inside the window: %+v %v", out, err)
	}
	if r, l := h.fake.Count.Reads(name), h.fake.Count.Locks(statestore.ClusterLock(name)); r != 1 || l != 1 {
		t.Errorf("the wake read the document %d times and took the cluster's lock %d times, want once each", r, l)
	}
	doc, err := h.backend.Ops.Store.Get(ctx, name)
	if err != nil || doc.Header.Phase != string(lifecycle.PhaseReady) {
		t.Fatalf("a command inside the window did not resume the cluster: %+v %v", doc, err)
	}
	if m, _ := clusterops.MetaOf(doc.Header); !m.AwakeUntil.After(now.Add(time.Hour)) {
		t.Errorf("awake until %s, want the window's end", m.AwakeUntil)
	}
	found := false
	for _, c := range h.botComments(repo, 3) {
		found = found || strings.Contains(c.Body, "Resumed inside a pause window") && strings.Contains(c.Body, "the next scheduled pause is")
	}
	if !found {
		t.Error("no status comment says the cluster was resumed inside the window and when the next pause is")
	}
	scanSecrets(t, h)
}

// A resume passes the budget: a paused cluster costs its floor, and bringing it back while other
// clusters took the room is refused, the cluster staying paused.
func TestResumeIsBudgeted(t *testing.T) {
	const repo = "acme/budget"
	// One seed cluster costs ≈ 4.30 € a day: one running and one paused fit in 5 €, two running do not.
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1, 2}, config: "max_daily_eur: 5\n", light: true}.open(t)
	for _, step := range []struct {
		n    int
		body string
	}{{1, "/poc up"}, {1, "/poc pause"}, {2, "/poc up"}} {
		if out, err := h.handle(ctx, h.comment(repo, step.n, false, "alice", step.body)); err != nil || !out.OK {
			t.Fatalf("#%d %s: %+v %v\n%s", step.n, step.body, out, err, lastBody(h, repo, step.n))
		}
	}
	out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc resume"))
	if err != nil || out.OK || !strings.Contains(lastBody(h, repo, 1), "max_daily_eur") {
		t.Fatalf("resume over the budget: %+v %v\n%s", out, err, lastBody(h, repo, 1))
	}
	doc, err := h.backend.Ops.Store.Get(ctx, commands.ClusterName("acme", "budget", 1))
	if err != nil || doc.Header.Phase != string(lifecycle.PhasePaused) {
		t.Fatalf("after a refused resume: %+v %v", doc, err)
	}
}

// `/poc pause` of a cluster that is not ready is refused with its own reply, saying what phase it
// is in and what to do: the run stays green, nothing is written. Before, it was a failure (the
// reply "Failed", the run red).
func TestPauseOfANotReadyClusterIsRefused(t *testing.T) {
	const repo = "acme/early"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{5}, light: true}.open(t)
	name := commands.ClusterName("acme", "early", 5)
	st, err := provision.NewState(name, h.backend.Spec)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.backend.Ops.Store.Put(ctx, &statestore.Document{Header: statestore.Header{Cluster: name, Repository: repo, Number: 5,
		Kind: "issue", RequestedBy: "alice", Phase: string(lifecycle.PhaseProvisioning)}, Body: body}); err != nil {
		t.Fatal(err)
	}
	before, _ := h.backend.Ops.Store.Get(ctx, name)
	out, err := h.handle(ctx, h.comment(repo, 5, false, "alice", "/poc pause"))
	if err != nil || out.OK || out.Refused != string(lifecycle.RefuseNotReady) {
		t.Fatalf("pause of a provisioning cluster: %+v, err %v; want refused %q, no error", out, err, lifecycle.RefuseNotReady)
	}
	if b := lastBody(h, repo, 5); !strings.Contains(b, "Not paused") || !strings.Contains(b, "provisioning") || strings.Contains(b, "Failed") {
		t.Errorf("reply:\n%s", b)
	}
	if after, _ := h.backend.Ops.Store.Get(ctx, name); after.Header.Serial != before.Header.Serial {
		t.Errorf("the refused pause wrote the document (serial %d → %d)", before.Header.Serial, after.Header.Serial)
	}
}
