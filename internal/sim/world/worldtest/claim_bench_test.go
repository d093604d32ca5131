package worldtest_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/repoconfig"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/spare"
)

// BenchmarkClaim measures #33's goal: from the bot's process start to the reply with a working
// kubeconfig, claiming a warm spare. Each of 20 rounds builds a spare (as `bot pool fill` does;
// not measured), then plays one `/poc up` as `bot handle` runs it: the parts opened from the
// environment (wiring.Open: the state bucket's backend check, the Scaleway client, the image
// bucket, the runner's address), a GitHub client of its own (the installation token exchange),
// the handler (the triage, the permission, .github/poc.yml, the reactions, the status comment,
// the claim: the spares read, the spare re-checked against the world's nodes, marked, renamed,
// the kubeconfig encrypted to the requester's SSH keys and presigned, the final replies), timed
// until the handler returns. The claimed cluster is then torn down (not measured).
//
// The world runs at POC_BENCH_FACTOR (default 0.01), which scales the latency profile's
// asynchronous transitions (docs/seed.md, Latencies; the hosts' figures). A claim waits for none
// of them: its Scaleway calls are synchronous updates and reads, its checks read nodes that are
// up. So its time modeled at factor 1 is the time measured (POC_BENCH_FACTOR=0.05 shows it: the
// figures do not move with the factor). What the profile does not model is each call's network
// round trip to Scaleway and GitHub (loopback here): the report counts the calls a claim makes,
// for the reader to add a round trip to each (docs/pool.md does, with the figure it assumes).
func BenchmarkClaim(b *testing.B) {
	factor := benchFactor(b)
	hosts := world.DefaultHosts()
	const claims = 20
	for i := 0; i < b.N; i++ {
		p, _ := benchParts(b, factor, hosts)
		w := p.World
		const repo = "acme/shop"
		gh := w.GitHub
		gh.AddRepo(repo, "main")
		gh.SetPermission(repo, "alice", "write")
		gh.AddUserKey("alice", userKey(b))
		bounds := repoconfig.Default()
		spec := p.Spec
		spec.ServiceAccountKey = bounds.ServiceAccountKey // the repository's defaults, as /poc up asks
		var tooks []time.Duration
		var scwCalls, ghCalls int
		for k := range claims {
			ctx := b.Context()
			name := spare.NewName()
			if _, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: spec, Repository: repo, Kind: spare.Kind,
				RequestedBy: "pool", Command: "pool fill", Bounds: &bounds, TTL: 25 * time.Hour}); err != nil {
				b.Fatalf("build spare %d: %v", k, err)
			}
			number := gh.AddIssue(repo, ghsim.Issue{Author: "alice"})
			ev := commentEvent(b, w, repo, number, "alice", "/poc up")
			s0, g0 := w.Scaleway.CallCount(), len(gh.Requests())
			took, body := claimOnce(b, ctx, w, repo, ev)
			scwCalls, ghCalls = scwCalls+w.Scaleway.CallCount()-s0, ghCalls+len(gh.Requests())-g0
			if !strings.Contains(body, "warm: claimed a warm spare") || !strings.Contains(body, name) {
				b.Fatalf("claim %d did not claim %s:\n%s", k, name, body)
			}
			tooks = append(tooks, took)
			cluster := commands.ClusterName("acme", "shop", number)
			if _, err := p.Ops.Down(ctx, clusterops.Intent{Cluster: cluster, RequestedBy: "bench", Command: "down"}); err != nil {
				b.Fatalf("down %s: %v", cluster, err)
			}
		}
		med, p90 := percentile(tooks, 50), percentile(tooks, 90)
		fmt.Printf("claim, process start to the reply with the kubeconfig, %d claims at factor %.3g (modeled at factor 1: the same; no transition of the profile on the path):\n", claims, factor)
		fmt.Printf("  median %v, p90 %v, max %v (goals: median ≤ 20 s, p90 ≤ 30 s)\n", med.Round(time.Millisecond), p90.Round(time.Millisecond), slices.Max(tooks).Round(time.Millisecond))
		fmt.Printf("  per claim: %.1f Scaleway calls, %.1f GitHub requests (loopback here; add a round trip for each)\n", float64(scwCalls)/claims, float64(ghCalls)/claims)
		b.ReportMetric(med.Seconds(), "median-s")
		b.ReportMetric(p90.Seconds(), "p90-s")
		b.ReportMetric(float64(scwCalls)/claims, "scw-calls/claim")
		b.ReportMetric(float64(ghCalls)/claims, "gh-requests/claim")
	}
}

// claimOnce is one run of `bot handle` for ev, from the process's start: the parts opened, a
// GitHub client made, the event handled. It returns the time taken and the status comment's body.
func claimOnce(b *testing.B, ctx context.Context, w *world.World, repo string, ev github.Event) (time.Duration, string) {
	b.Helper()
	t0 := time.Now()
	parts := worldtest.New(b, w, worldtest.Options{})
	owner, name, _ := strings.Cut(repo, "/")
	client, err := github.NewClient(ctx, github.Auth{AppID: w.GitHub.AppID(), PrivateKeyPEM: w.GitHub.AppPrivateKeyPEM(),
		Owner: owner, Repo: name, BaseURL: w.GitHubURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	env := github.ActionsEnv{Repository: repo, Owner: owner, Repo: name, APIURL: w.GitHubURL, ServerURL: "https://github.com", RunID: "1", InActions: true}
	h := &chatops.Handler{GitHub: client, Env: env, Actions: &github.Actions{Stdout: io.Discard, Output: io.Discard, Summary: io.Discard},
		Open: func(context.Context) (*chatops.Backend, error) {
			return &chatops.Backend{Ops: parts.Ops, Spec: parts.Spec}, nil
		},
		AppSlug: w.GitHub.AppSlug(), Log: slog.New(slog.DiscardHandler), Started: t0}
	out, err := h.Handle(ctx, ev)
	took := time.Since(t0)
	if err != nil || !out.OK {
		b.Fatalf("/poc up: outcome %+v, err %v", out, err)
	}
	var status string
	for _, c := range w.GitHub.Comments(repo, ev.Number) {
		if c.Author == w.GitHub.BotLogin() && strings.Contains(c.Body, "| Path |") {
			status = c.Body
		}
	}
	return took, status
}

// userKey is an SSH public key in authorized_keys form, for the kubeconfig's encryption.
func userKey(b *testing.B) string {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k)))
}

// commentEvent seeds login's comment body on repo#number and returns the issue_comment event
// GitHub would send, decoded from a payload of the real shape.
func commentEvent(b *testing.B, w *world.World, repo string, number int, login, body string) github.Event {
	b.Helper()
	gh := w.GitHub
	id := gh.AddComment(repo, number, login, body)
	owner, name, _ := strings.Cut(repo, "/")
	user := map[string]any{"login": login, "id": gh.UserID(login), "type": "User"}
	payload := map[string]any{
		"action": "created",
		"issue": map[string]any{"number": number, "state": "open", "labels": []any{}, "user": user, "title": "POC",
			"html_url": "https://github.com/" + repo + "/issues/" + strconv.Itoa(number)},
		"comment":      map[string]any{"id": id, "body": body, "user": user, "author_association": "MEMBER"},
		"repository":   map[string]any{"id": 7, "name": name, "full_name": repo, "owner": map[string]any{"login": owner}, "default_branch": "main"},
		"sender":       user,
		"installation": map[string]any{"id": gh.InstallationID(repo)},
	}
	data, err := json.Marshal(payload)
	if err != nil {
		b.Fatal(err)
	}
	ev, err := github.DecodeEvent("issue_comment", data)
	if err != nil {
		b.Fatal(err)
	}
	return ev
}

// percentile is the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}
