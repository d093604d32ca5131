package github

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	simgh "github.com/pocbot/pocbot/internal/sim/github"
)

// An installation that predates the deployments, checks and actions permissions (its grant is
// the old manifest's) still gets a token, of the old set; the new calls answer ErrNotGranted
// without a request. Failed on the old code: the token was always narrowed to the old set, so no
// deployment call could ever work; with the new set alone, NewClient failed with GitHub's 422.
func TestAnInstallationWithoutTheNewPermissionsStillWorks(t *testing.T) {
	t.Parallel()
	sim, url := startSim(t, simgh.Options{Grant: map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read"}})
	sim.AddRepo(testRepo, "trunk")
	w := &world{sim: sim, url: url}
	c := w.mustApp(t, nil)
	if got := c.Lacking(); !slices.Equal(got, []string{PermDeployments, PermChecks, PermActions, PermDispatch}) {
		t.Fatalf("Lacking() = %v", got)
	}
	before := len(sim.Requests())
	_, err := c.CreateDeployment(testCtx(t), strings.Repeat("a", 40), "poc-x", "d")
	if !errors.Is(err, ErrNotGranted) || !strings.Contains(err.Error(), "accept the App's new permissions") {
		t.Errorf("CreateDeployment = %v, want ErrNotGranted saying what to do", err)
	}
	if _, err := c.WorkflowRun(testCtx(t), 1); !errors.Is(err, ErrNotGranted) {
		t.Errorf("WorkflowRun = %v, want ErrNotGranted", err)
	}
	if n := len(sim.Requests()) - before; n != 0 {
		t.Errorf("%d requests made for calls the token cannot make", n)
	}
	if _, err := c.Permission(testCtx(t), "alice"); err != nil {
		t.Errorf("the old calls stopped working: %v", err)
	}
}

// An installation that predates the refill dispatch (actions: read, the pull requests' clusters'
// grant) keeps its deployments and checks: its token is the pull requests' set, and only the
// dispatch answers ErrNotGranted, without a request. Failed on the old code's fallback, which
// went straight to the base set and lost deployments and checks.
func TestAnInstallationWithoutActionsWriteKeepsThePullRequestsPermissions(t *testing.T) {
	t.Parallel()
	sim, url := startSim(t, simgh.Options{Grant: map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read",
		"deployments": "write", "checks": "write", "actions": "read"}})
	sim.AddRepo(testRepo, "trunk")
	w := &world{sim: sim, url: url}
	c := w.mustApp(t, nil)
	if got := c.Lacking(); !slices.Equal(got, []string{PermDispatch}) {
		t.Fatalf("Lacking() = %v, want only %s", got, PermDispatch)
	}
	toks := sim.Tokens()
	if last := toks[len(toks)-1]; last.Permissions["deployments"] != "write" || last.Permissions["actions"] != "read" {
		t.Fatalf("token permissions %v, want the pull requests' set", last.Permissions)
	}
	before := len(sim.Requests())
	if err := c.DispatchWorkflow(testCtx(t), "poc.yml", "trunk", map[string]any{"command": "pool"}); !errors.Is(err, ErrNotGranted) {
		t.Errorf("DispatchWorkflow = %v, want ErrNotGranted", err)
	}
	if n := len(sim.Requests()) - before; n != 0 {
		t.Errorf("%d requests made for a call the token cannot make", n)
	}
}

// Deployments, their statuses (newest read as the latest whatever the order GitHub lists them
// in) and check runs round-trip through the stand-in as go-github v88 calls them.
func TestDeploymentsAndCheckRuns(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	sha := strings.Repeat("b", 40)
	id, err := c.CreateDeployment(ctx, sha, "poc-acme-web-7", "pocbot cluster")
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []DeploymentStatus{{State: "in_progress"}, {State: "success", EnvironmentURL: "http://192.0.2.9", Description: strings.Repeat("x", 200)}} {
		if err := c.CreateDeploymentStatus(ctx, id, st); err != nil {
			t.Fatalf("status %s: %v", st.State, err)
		}
	}
	ds, err := c.Deployments(ctx, "poc-acme-web-7")
	if err != nil || len(ds) != 1 || ds[0].State != "success" || ds[0].URL != "http://192.0.2.9" || ds[0].SHA != sha {
		t.Fatalf("Deployments = %+v, %v", ds, err)
	}
	if got := w.sim.Deployments(testRepo)[0]; !got.Transient || got.Production || len([]rune(got.Descriptions[1])) != MaxDeploymentDescription {
		t.Errorf("recorded deployment %+v: want transient, not production, the description cut to 140", got)
	}
	if other, _ := c.Deployments(ctx, "poc-acme-web-8"); len(other) != 0 {
		t.Errorf("another environment lists %v", other)
	}

	cid, err := c.CreateCheckRun(ctx, CheckRun{Name: "pocbot kubeconfig", HeadSHA: sha, ExternalID: "n1", Status: "in_progress", Title: "t", Summary: "s", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateCheckRun(ctx, CheckRun{Name: "pocbot kubeconfig", HeadSHA: sha, ExternalID: "n2", Status: "completed", Conclusion: "neutral", Title: "t", Summary: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := c.UpdateCheckRun(ctx, cid, CheckRun{Name: "pocbot kubeconfig", Status: "completed", Conclusion: "success", Title: "done", Summary: "s", Text: "answer"}); err != nil {
		t.Fatal(err)
	}
	runs, err := c.CheckRuns(ctx, sha, "pocbot kubeconfig")
	if err != nil || len(runs) != 2 {
		t.Fatalf("CheckRuns = %+v, %v (filter=all must list both)", runs, err)
	}
	for _, r := range runs {
		if r.ExternalID == "n1" && (r.Conclusion != "success" || r.Text != "answer" || r.Updated.IsZero()) {
			t.Errorf("updated check run reads %+v", r)
		}
	}
	// A job token (GITHUB_TOKEN) reads the answers but cannot write them.
	w.sim.AddJobToken("job-token", testRepo, map[string]string{"checks": "read", "contents": "write"})
	owner, repo, _ := strings.Cut(testRepo, "/")
	job, err := NewClient(ctx, Auth{Token: "job-token", Owner: owner, Repo: repo, BaseURL: w.url, JobToken: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := job.CheckRuns(ctx, sha, "pocbot kubeconfig"); err != nil || len(runs) != 2 {
		t.Errorf("the job's token reads %d answers, %v", len(runs), err)
	}
	var ae *APIError
	if _, err := job.CreateCheckRun(ctx, CheckRun{Name: "x", HeadSHA: sha, Status: "queued"}); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Errorf("a job's token created a check run: %v", err)
	}
	if err := job.Dispatch(ctx, KubeconfigRequest, map[string]any{"v": 1}); err != nil {
		t.Errorf("Dispatch with contents: write: %v", err)
	}
	if d := w.sim.Dispatches(); len(d) != 1 || d[0].EventType != KubeconfigRequest || d[0].Sender != "github-actions[bot]" {
		t.Errorf("dispatches %+v", d)
	}
	w.sim.AddJobToken("fork-token", testRepo, map[string]string{"contents": "read", "checks": "read"})
	fork, _ := NewClient(ctx, Auth{Token: "fork-token", Owner: owner, Repo: repo, BaseURL: w.url, JobToken: true, Logger: slog.New(slog.DiscardHandler)})
	if err := fork.Dispatch(ctx, KubeconfigRequest, map[string]any{"v": 1}); err == nil || !strings.Contains(err.Error(), "contents: write") {
		t.Errorf("a read-only token's dispatch: %v", err)
	}
	too := map[string]any{}
	for i := range 11 {
		too[strings.Repeat("k", i+1)] = i
	}
	if err := job.Dispatch(ctx, KubeconfigRequest, too); !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
		t.Errorf("a payload of 11 properties: %v", err)
	}
}

// A job's OIDC token verifies against the stand-in issuer for its audience only, with its run's
// claims; expired, of another audience, or signed by another key, it does not.
func TestOIDCRoundTrip(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	ctx := testCtx(t)
	runID := w.sim.AddRun(testRepo, simgh.Run{Workflow: "poc-pr", Event: "pull_request", HeadSHA: strings.Repeat("c", 40), Actor: "walt", PR: 7})
	reqURL, reqTok := w.sim.JobIDToken(w.url, simgh.JobClaims{Repo: testRepo, RunID: runID, RunAttempt: 1, EventName: "pull_request", Ref: "refs/pull/7/merge", Actor: "walt"})
	env := map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": reqURL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": reqTok}
	tok, err := RequestIDToken(ctx, http.DefaultClient, func(k string) string { return env[k] }, "pocbot:aud-1")
	if err != nil {
		t.Fatal(err)
	}
	v := &OIDCVerifier{Issuer: simgh.OIDCIssuer(w.url)}
	c, err := v.Verify(ctx, tok, "pocbot:aud-1")
	if err != nil || c.Repository != testRepo || c.RunID != runID || c.RunAttempt != 1 || c.EventName != "pull_request" || c.Ref != "refs/pull/7/merge" || c.Actor != "walt" {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	if _, err := v.Verify(ctx, tok, "pocbot:aud-2"); err == nil {
		t.Error("a token verified for another audience")
	}
	late := &OIDCVerifier{Issuer: v.Issuer, Now: func() time.Time { return time.Now().Add(7 * time.Hour) }}
	if _, err := late.Verify(ctx, tok, "pocbot:aud-1"); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired token: %v", err)
	}
	parts := strings.Split(tok, ".")
	forged := parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2]))
	if _, err := v.Verify(ctx, forged, "pocbot:aud-1"); err == nil {
		t.Error("a token with a forged signature verified")
	}
	other := &OIDCVerifier{Issuer: "https://token.actions.githubusercontent.com"}
	ctxShort, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := other.Verify(ctxShort, tok, "pocbot:aud-1"); err == nil {
		t.Error("a token verified against another issuer")
	}
	if _, err := RequestIDToken(ctx, http.DefaultClient, func(string) string { return "" }, "x"); !errors.Is(err, ErrNoIDToken) {
		t.Errorf("without ACTIONS_ID_TOKEN_REQUEST_URL: %v", err)
	}
	env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = "wrong"
	if _, err := RequestIDToken(ctx, http.DefaultClient, func(k string) string { return env[k] }, "x"); err == nil {
		t.Error("a wrong request token got an OIDC token")
	}
	if OIDCIssuer("https://github.com") != DefaultOIDCIssuer || OIDCIssuer("https://ghe.acme.test/") != "https://ghe.acme.test/_services/token" {
		t.Error("OIDCIssuer of GitHub.com or an Enterprise Server")
	}
}

func TestWorkflowRunAndPullRequest(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	n := w.sim.AddPR(testRepo, simgh.PR{Title: "t", Author: "walt", HeadSHA: strings.Repeat("d", 40), Labels: []string{"poc"}})
	pr, err := c.PullRequest(ctx, n)
	if err != nil || !pr.Open || pr.FromFork || pr.HeadSHA != strings.Repeat("d", 40) || pr.HeadRepo != testRepo || !slices.Equal(pr.Labels, []string{"poc"}) {
		t.Fatalf("PullRequest = %+v, %v", pr, err)
	}
	id := w.sim.AddRun(testRepo, simgh.Run{Workflow: "poc-pr", Event: "pull_request", HeadSHA: pr.HeadSHA, Actor: "walt", PR: n})
	run, err := c.WorkflowRun(ctx, id)
	if err != nil || run.Event != "pull_request" || run.Status != "in_progress" || run.Attempt != 1 || run.HeadRepo != testRepo || run.TriggeringActor != "walt" {
		t.Fatalf("WorkflowRun = %+v, %v", run, err)
	}
	w.sim.RerunRun(testRepo, id, "mia")
	w.sim.SetRunStatus(testRepo, id, "completed", "success")
	if run, _ = c.WorkflowRun(ctx, id); run.Attempt != 2 || run.Status != "completed" || run.TriggeringActor != "mia" {
		t.Errorf("after a re-run and its end: %+v", run)
	}
	if _, err := c.WorkflowRun(ctx, id+1000); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run: %v", err)
	}
}

// A refill's dispatch reaches the installed workflow: the template bot init writes
// (deploy/workflow/poc.yml) accepts command pool; a workflow of an older template, whose choice
// does not list it, is refused (422) with a message that says to rerun bot init.
func TestDispatchWorkflowReachesTheInstalledWorkflow(t *testing.T) {
	t.Parallel()
	sim, url := startSim(t, simgh.Options{})
	sim.AddRepo(testRepo, "trunk")
	tmpl, err := os.ReadFile("../../deploy/workflow/poc.yml")
	if err != nil {
		t.Fatal(err)
	}
	sim.SetFile(testRepo, "", ".github/workflows/poc.yml", tmpl)
	w := &world{sim: sim, url: url}
	c := w.mustApp(t, nil)
	if err := c.DispatchWorkflow(testCtx(t), "poc.yml", "trunk", map[string]any{"command": "pool"}); err != nil {
		t.Fatalf("dispatch to the template's workflow: %v", err)
	}
	if ds := sim.WorkflowDispatches(); len(ds) != 1 || ds[0].Ref != "trunk" || ds[0].Inputs["command"] != "pool" || ds[0].Workflow != "poc.yml" {
		t.Fatalf("dispatches %+v, want one of command pool on trunk", ds)
	}
	old := strings.Replace(string(tmpl), "options: [reap, pool, status, cost, down]", "options: [reap, status, cost, down]", 1)
	if old == string(tmpl) {
		t.Fatal("the template's command choice changed: update this test")
	}
	sim.SetFile(testRepo, "", ".github/workflows/poc.yml", []byte(old))
	err = c.DispatchWorkflow(testCtx(t), "poc.yml", "trunk", map[string]any{"command": "pool"})
	if err == nil || !strings.Contains(err.Error(), "422") || !strings.Contains(err.Error(), "bot init") {
		t.Errorf("dispatch to an older workflow: %v, want a 422 saying to rerun bot init", err)
	}
	if err := c.DispatchWorkflow(testCtx(t), "nope.yml", "trunk", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("dispatch to a missing workflow: %v, want a 404", err)
	}
	if len(sim.WorkflowDispatches()) != 1 {
		t.Errorf("refused dispatches were recorded: %+v", sim.WorkflowDispatches())
	}
}
