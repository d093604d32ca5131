package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/prdeploy"
	"github.com/pocbot/pocbot/internal/prkube"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/sim/actions"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/syncio"
	"github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// envOf reads a KEY=VALUE list as a process environment.
func envOf(env []string) func(string) string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return only(m)
}

// prRunner is the Actions stand-in on w, its runs this package's bot in-process: `handle` for the
// bot's workflow, `request-kubeconfig` for the pull request's job. jobStart models GitHub's time
// to start a job.
func prRunner(t *testing.T, w *world.World, log *syncio.Buffer, jobStart time.Duration) *actions.Runner {
	t.Helper()
	base := append(w.Endpoints(), [2]string{"POC_REAP_ON_EVENTS", "false"}, [2]string{"POC_STICKY_INTERVAL", "1s"},
		[2]string{"POC_REQUEST_WAIT", "3m"}, [2]string{"POC_LOCK_WAIT", "2m"})
	run := func(args ...string) func(ctx context.Context, env []string) ([]byte, error) {
		return func(ctx context.Context, env []string) ([]byte, error) {
			var out syncio.Buffer
			err := newApp(&out, &out, envOf(env)).dispatch(ctx, args)
			return []byte(out.String()), err
		}
	}
	return &actions.Runner{GitHub: w.GitHub, Base: base, Dir: t.TempDir(), Log: log, Interval: 20 * time.Millisecond, JobStart: jobStart,
		Handle: run("handle"), Request: run("request-kubeconfig")}
}

// initWithPRWorkflow runs `bot init --pr-workflow` on repo and merges its pull request: the
// default branch then has the bot's workflow, the end-to-end one and the secrets in poc.
func initWithPRWorkflow(ctx context.Context, t *testing.T, w *world.World, repo string) {
	t.Helper()
	out, err := runBotOut(ctx, laptop(w, repo), "init", "--repo", repo, "--pr-workflow", "--action", testActionRef)
	if err != nil {
		t.Fatalf("bot init --pr-workflow: %v\n%s", err, out)
	}
	for n := range w.GitHub.PullRequests(repo) {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := w.GitHub.File(repo, "", repoinit.PRWorkflowPath); !ok {
		t.Fatalf("no %s on the default branch after init's pull request", repoinit.PRWorkflowPath)
	}
}

// waitJobs waits for the runner's jobs, failing t when ctx ends first.
func waitJobs(ctx context.Context, t *testing.T, r *actions.Runner, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		var b strings.Builder
		for _, j := range r.Results() {
			fmt.Fprintf(&b, "--- %s %s #%d run %d (ended %v, err %v, skipped %q)\n%s\n", j.Event, j.Workflow, j.PR, j.RunID, !j.Ended.IsZero(), j.Err, j.Skipped, j.Output)
		}
		t.Fatalf("%s: the workflow runs did not end: %v\n%s", what, ctx.Err(), b.String())
	}
}

// jobOf is the one job of event for pull request pr among results.
func jobOf(t *testing.T, results []*actions.JobResult, event string, pr int) *actions.JobResult {
	t.Helper()
	var found *actions.JobResult
	for _, r := range results {
		if r.Event == event && r.PR == pr {
			found = r
		}
	}
	if found == nil {
		t.Fatalf("no %s job for #%d among %d", event, pr, len(results))
	}
	return found
}

// The issue's "done when", on one emulated world: init --pr-workflow merged; a write user's pull
// request labeled poc gets its cluster from the bot's pull_request_target run while its own
// end-to-end job (pull_request) asks for a kubeconfig, which a later step uses on the Kubernetes
// API and whose certificate expires within the asked 20 minutes; the pull request has a
// deployment of its head commit with the edge's URL, and a push gets its own; a fork's pull
// request and a pull_request_target run get no cluster and no kubeconfig; the close tears the
// cluster down and leaves every deployment inactive; no credential in any log, comment, summary,
// output, check run or deployment status; then, with a spare in the pool, the next labeled pull
// request claims it (warmPullRequest). Failed on the old code: the Action had no command
// kubeconfig, the bot's workflow no repository_dispatch, and nothing recorded a deployment.
func TestPullRequestWorkflowGetsItsCluster(t *testing.T) {
	t.Parallel()
	ctx, w := startWorld(t, 150*time.Second, world.Options{})
	const repo = "acme/shop"
	initWithPRWorkflow(ctx, t, w, repo)
	gh := w.GitHub
	gh.SetPermission(repo, "walt", "write")
	var log syncio.Buffer
	runner := prRunner(t, w, &log, 0)
	go runner.Watch(ctx)

	// The pull request's branch asks for 20 minutes (its workflow is the branch's).
	pr := gh.AddPR(repo, ghsim.PR{Title: "feature", Author: "walt", HeadSHA: strings.Repeat("a", 40)})
	e2e, _ := gh.File(repo, "", repoinit.PRWorkflowPath)
	gh.SetFile(repo, "feature", repoinit.PRWorkflowPath, bytes.Replace(e2e, []byte("expires: 1h"), []byte("expires: 20m"), 1))
	runner.PR(ctx, repo, pr, "opened", "", "walt")
	waitJobs(ctx, t, runner, "opened")
	if j := jobOf(t, runner.Results(), "pull_request", pr); j.Skipped == "" {
		t.Fatalf("the end-to-end job ran on a pull request without the poc label")
	}
	gh.LabelIssue(repo, pr, "walt", "poc")
	labeled := time.Now()
	runner.PR(ctx, repo, pr, "labeled", "poc", "walt")
	waitJobs(ctx, t, runner, "labeled")
	job := jobOf(t, runner.Results(), "pull_request", pr)
	if job.Err != nil || job.Skipped != "" || job.FirstKube.IsZero() {
		t.Fatalf("the end-to-end job: skipped %q, %v\n%s\n--- actions log ---\n%s", job.Skipped, job.Err, job.Output, log.String())
	}
	// The figures of the path, on this machine; the report's factor-1 model is built from them
	// (docs/architecture.md, "A pull request's own workflow").
	up := jobOf(t, runner.Results(), "pull_request_target", pr)
	t.Logf("pull request labeled → first Kubernetes call of a later step: %s at factor %g; the bot's up run ended after %s, the relay's answer and the step took %s more",
		job.FirstKube.Sub(labeled).Round(time.Millisecond), testTimeFactor, up.Ended.Sub(labeled).Round(time.Millisecond), job.FirstKube.Sub(up.Ended).Round(time.Millisecond))
	cert := clientCert(t, job.Kubeconfig)
	if d := time.Until(cert.NotAfter); d > 20*time.Minute || d < 15*time.Minute {
		t.Errorf("the job's certificate expires in %s, asked 20m", d)
	}
	if !strings.HasPrefix(cert.Subject.CommonName, fmt.Sprintf("pocbot:pr-%d:run-%d.1", pr, job.RunID)) {
		t.Errorf("the certificate names %q, not the pull request and its run", cert.Subject.CommonName)
	}
	cluster := commands.ClusterName("acme", "shop", pr)
	operator := operatorKubeconfig(ctx, t, w, repo, cluster, pr)
	deps := gh.Deployments(repo)
	if len(deps) != 1 || deps[0].SHA != strings.Repeat("a", 40) || deps[0].Environment != prdeploy.Environment(cluster) {
		t.Fatalf("deployments %+v", deps)
	}
	if st := deps[0].States; len(st) < 2 || st[0] != prdeploy.InProgress || st[len(st)-1] != prdeploy.Success || !strings.HasPrefix(deps[0].URLs[len(st)-1], "http://") {
		t.Errorf("the deployment's statuses %v, URLs %v", st, deps[0].URLs)
	}

	// A push: the new commit's run gets its kubeconfig at once, and its own deployment.
	gh.SetPRHead(repo, pr, strings.Repeat("b", 40))
	runner.PR(ctx, repo, pr, "synchronize", "", "walt")
	waitJobs(ctx, t, runner, "synchronize")
	if job := jobOf(t, runner.Results(), "pull_request", pr); job.Err != nil || job.FirstKube.IsZero() {
		t.Fatalf("the job after a push: %v\n%s", job.Err, job.Output)
	} else {
		t.Logf("push on a ready cluster → first Kubernetes call: %s (the relay alone: a dispatch, the bot's run, a check run)", job.FirstKube.Sub(job.Queued).Round(time.Millisecond))
	}
	if deps := gh.Deployments(repo); len(deps) != 2 || deps[1].SHA != strings.Repeat("b", 40) || deps[1].States[len(deps[1].States)-1] != prdeploy.Success ||
		deps[0].States[len(deps[0].States)-1] != prdeploy.Inactive {
		t.Errorf("after a push, deployments %+v: want the push's live and the first commit's superseded", deps)
	}

	refusedRequests(ctx, t, w, runner, repo, pr)
	pausedRefusesAndRetires(ctx, t, w, repo, pr, cluster)

	// A fork's pull request: no cluster (the bot), no job (the workflow's if:), and its code, run
	// by hand, is refused by the Action itself.
	fork := gh.AddPR(repo, ghsim.PR{Title: "from a fork", Author: "mallory", Fork: true, HeadSHA: strings.Repeat("f", 40), Labels: []string{"poc"}})
	runner.PR(ctx, repo, fork, "labeled", "poc", "walt")
	waitJobs(ctx, t, runner, "fork")
	if j := jobOf(t, runner.Results(), "pull_request", fork); !strings.Contains(j.Skipped, "fork") {
		t.Errorf("a fork's job: skipped %q, err %v", j.Skipped, j.Err)
	}
	if out, err := runBotOut(ctx, map[string]string{"GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": repo, "GITHUB_RUN_ID": "9",
		"GITHUB_TOKEN": "t", "RUNNER_TEMP": t.TempDir(), "GITHUB_API_URL": w.GitHubURL,
		"GITHUB_EVENT_PATH": writeEvent(t, t.TempDir(), "fork", gh.PRPayload(repo, fork, "labeled", "poc", "mallory"))}, "request-kubeconfig"); err == nil || !strings.Contains(out+err.Error(), "fork") {
		t.Errorf("request-kubeconfig in a fork's job: %v\n%s", err, out)
	}

	// The close: the bot tears the cluster down; every deployment is inactive.
	gh.SetIssueState(repo, pr, false, false)
	runner.PR(ctx, repo, pr, "closed", "", "walt")
	waitJobs(ctx, t, runner, "closed")
	for _, d := range gh.Deployments(repo) {
		if d.States[len(d.States)-1] != prdeploy.Inactive {
			t.Errorf("deployment %d of %s is %s after the close", d.ID, d.SHA, d.States[len(d.States)-1])
		}
	}
	if states := stateNames(ctx, t, w); len(states) != 0 {
		t.Errorf("clusters left after the close: %v", states)
	}
	// Kubernetes cannot revoke a certificate: what ends it is the cluster's going.
	for who, kc := range map[string]string{"the job's": job.Kubeconfig, "the operator's": operator} {
		if _, err := kubeData(ctx, kc, pr); err == nil {
			t.Errorf("%s kubeconfig still reaches a Kubernetes API after the close", who)
		}
	}
	scanPRSecrets(t, w, runner, log.String(), repo)
	warmPullRequest(ctx, t, w, runner, repo)
}

// warmPullRequest: with a spare in the pool (`bot pool fill`, as the schedule builds it), a
// labeled pull request's cluster is that spare (its status comment's Path row says warm), its
// end-to-end job's kubeconfig relay works on it, and its close tears it down, spare and all.
func warmPullRequest(ctx context.Context, t *testing.T, w *world.World, runner *actions.Runner, repo string) {
	t.Helper()
	began := time.Now()
	defer func() { t.Logf("the warm pool's pull request: %s", time.Since(began).Round(time.Millisecond)) }()
	gh := w.GitHub
	env := laptop(w, repo)
	env["GITHUB_REPOSITORY"] = repo
	if out, err := runBotOut(ctx, env, "pool", "fill", "--size", "1"); err != nil || !strings.Contains(out, "build spare-") {
		t.Fatalf("bot pool fill --size 1: %v\n%s", err, out)
	}
	pr := gh.AddPR(repo, ghsim.PR{Title: "warm", Author: "walt", HeadSHA: strings.Repeat("c", 40), Labels: []string{"poc"}})
	runner.PR(ctx, repo, pr, "labeled", "poc", "walt")
	waitJobs(ctx, t, runner, "labeled with a spare in the pool")
	if job := jobOf(t, runner.Results(), "pull_request", pr); job.Err != nil || job.FirstKube.IsZero() {
		var b strings.Builder
		for _, j := range runner.Results() {
			if j.PR == pr {
				fmt.Fprintf(&b, "--- %s %s run %d (err %v, skipped %q)\n%s\n", j.Event, j.Workflow, j.RunID, j.Err, j.Skipped, j.Output)
			}
		}
		t.Fatalf("the end-to-end job on a claimed spare: %v\n%s", job.Err, b.String())
	}
	var status string
	for _, c := range gh.AllComments() {
		if c.Repo == repo && c.Number == pr && c.AuthorType == "Bot" && strings.Contains(c.Body, "| Path |") {
			status = c.Body
		}
	}
	if !strings.Contains(status, "| Path | warm: claimed a warm spare") {
		t.Errorf("the pull request's status comment does not say it claimed the spare:\n%s", status)
	}
	gh.SetIssueState(repo, pr, false, false)
	runner.PR(ctx, repo, pr, "closed", "", "walt")
	waitJobs(ctx, t, runner, "closed after a claim")
	if out, err := runBotOut(ctx, envMap(w), "state", "ls"); err != nil || strings.Contains(out, "spare-") || strings.Contains(out, fmt.Sprintf("acme-shop-%d", pr)) {
		t.Errorf("after the close of the pull request that claimed the spare: %v\n%s", err, out)
	}
}

// operatorKubeconfig runs `bot kubeconfig --expires` as an operator would: a kubeconfig of a key
// made there, its certificate valid for the asked 10 minutes, that reads what the pull request's
// job wrote; a lifetime under a minute is refused. It returns the kubeconfig's path.
func operatorKubeconfig(ctx context.Context, t *testing.T, w *world.World, repo, cluster string, pr int) string {
	t.Helper()
	env := laptop(w, repo)
	env["USER"] = "ada"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	out, err := runBotOut(ctx, env, "kubeconfig", "--cluster", cluster, "--expires", "10m", "-o", path)
	if err != nil {
		t.Fatalf("bot kubeconfig --expires 10m: %v\n%s", err, out)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("bot kubeconfig -o: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	cert := clientCert(t, path)
	if d := time.Until(cert.NotAfter); d > 10*time.Minute || d < 9*time.Minute {
		t.Errorf("the operator's certificate expires in %s, asked 10m", d)
	}
	if cert.Subject.CommonName != "pocbot:operator:ada" || !strings.Contains(out, "valid until") {
		t.Errorf("the operator's certificate names %q; bot said %q", cert.Subject.CommonName, out)
	}
	if data, err := kubeData(ctx, path, pr); err != nil || data["step"] == "" {
		t.Errorf("the operator's kubeconfig does not read what the job wrote: %v %v", data, err)
	}
	if out, err := runBotOut(ctx, env, "kubeconfig", "--cluster", cluster, "--expires", "30s"); err == nil || !strings.Contains(out+err.Error(), "too short") {
		t.Errorf("bot kubeconfig --expires 30s: %v\n%s", err, out)
	}
	return path
}

// kubeData reads, with the kubeconfig at path, the ConfigMap the end-to-end job of pull request
// pr wrote (actions.PlayKube).
func kubeData(ctx context.Context, path string, pr int) (map[string]string, error) {
	kc, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := talos.NewKubeClient(kc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.Data(ctx, "configmaps", "default", fmt.Sprintf("pocbot-e2e-pr-%d", pr))
}

// askAs makes a request for pull request pr's kubeconfig as a job of a run of event whose code
// is headRepo's would, with the stand-in's real OIDC tokens; it returns the Ask's error.
func askAs(ctx context.Context, w *world.World, repo string, pr int, event, headRepo string, lifetime time.Duration) error {
	gh := w.GitHub
	sha, _ := gh.PRHead(repo, pr)
	owner, name, _ := strings.Cut(repo, "/")
	runID := gh.AddRun(repo, ghsim.Run{Workflow: "poc-pr", Event: event, HeadSHA: sha, HeadRepo: headRepo, Actor: "walt", PR: pr})
	tok := fmt.Sprintf("ghs_asked%d", runID)
	gh.AddJobToken(tok, repo, map[string]string{"contents": "write", "checks": "read"})
	url, rt := gh.JobIDToken(w.GitHubURL, ghsim.JobClaims{Repo: repo, RunID: runID, RunAttempt: 1, EventName: event, Ref: fmt.Sprintf("refs/pull/%d/merge", pr), SHA: sha, Actor: "walt"})
	env := map[string]string{"ACTIONS_ID_TOKEN_REQUEST_URL": url, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": rt}
	c, err := github.NewClient(ctx, github.Auth{Token: tok, Owner: owner, Repo: name, BaseURL: w.GitHubURL, JobToken: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	a := &prkube.Ask{API: c, PR: pr, RunID: runID, RunAttempt: 1, HeadSHA: sha, Lifetime: lifetime, Poll: 20 * time.Millisecond, Redispatch: time.Minute,
		IDToken: func(ctx context.Context, aud string) (string, error) {
			return github.RequestIDToken(ctx, http.DefaultClient, only(env), aud)
		}}
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = a.Run(actx)
	return err
}

// refusedRequests: requests the bot must refuse, made with real OIDC tokens of the stand-in.
func refusedRequests(ctx context.Context, t *testing.T, w *world.World, runner *actions.Runner, repo string, pr int) {
	t.Helper()
	gh := w.GitHub
	before := len(gh.CheckRuns(repo))
	if err := askAs(ctx, w, repo, pr, "pull_request_target", repo, 0); !errors.Is(err, prkube.ErrRefused) || !strings.Contains(err.Error(), "pull_request_target") {
		t.Errorf("a pull_request_target run's request: %v", err)
	}
	if err := askAs(ctx, w, repo, pr, "pull_request", "mallory/shop", 0); !errors.Is(err, prkube.ErrRefused) || !strings.Contains(err.Error(), "fork") {
		t.Errorf("a request of a run of a fork's code: %v", err)
	}
	if err := askAs(ctx, w, repo, pr, "pull_request", repo, 7*time.Hour); !errors.Is(err, prkube.ErrRefused) || !strings.Contains(err.Error(), "more than the 6h0m0s allowed") {
		t.Errorf("a request for a 7h certificate: %v", err)
	}
	for _, cr := range gh.CheckRuns(repo)[before:] {
		if cr.Conclusion == "success" || strings.Contains(cr.Text, `"certificate"`) {
			t.Errorf("a refused request was issued a certificate: %+v", cr)
		}
		if cr.Status == "completed" && cr.Conclusion != "neutral" { // a refusal is not the pull request's failure
			t.Errorf("a refused request's check run concluded %q: %s", cr.Conclusion, cr.Summary)
		}
	}
	waitJobs(ctx, t, runner, "refused requests")
}

// pausedRefusesAndRetires: `/poc pause` on the pull request marks its deployments inactive, and an
// authentic request of the pull request's own run is then refused, saying how to resume.
func pausedRefusesAndRetires(ctx context.Context, t *testing.T, w *world.World, repo string, pr int, cluster string) {
	t.Helper()
	w.GitHub.AddComment(repo, pr, "walt", "/poc pause")
	// The pause's run ends with the deployments (after the state's phase): wait for them.
	for live := true; live; {
		live = false
		for _, d := range w.GitHub.Deployments(repo) {
			live = live || d.States[len(d.States)-1] != prdeploy.Inactive
		}
		select {
		case <-ctx.Done():
			t.Fatalf("a deployment is still live after /poc pause: %+v", w.GitHub.Deployments(repo))
		case <-time.After(50 * time.Millisecond):
		}
	}
	var paused int // the push's, live until the pause (the first was superseded before)
	for _, d := range w.GitHub.Deployments(repo) {
		if strings.Contains(d.Descriptions[len(d.Descriptions)-1], "paused") {
			paused++
		}
	}
	if out, err := runBotOut(ctx, envMap(w), "state", "show", "--cluster", cluster); err != nil || !strings.Contains(out, `"phase": "paused"`) || paused != 1 {
		t.Fatalf("after /poc pause: %d deployments say paused, want 1; bot state show: %v\n%.300s", paused, err, out)
	}
	if err := askAs(ctx, w, repo, pr, "pull_request", repo, 0); !errors.Is(err, prkube.ErrRefused) || !strings.Contains(err.Error(), "/poc resume") {
		t.Errorf("a request on the paused cluster: %v", err)
	}
}

// kubeconfigUser is the client-certificate-data and client-key-data of the kubeconfig at path's
// one user.
func kubeconfigUser(t *testing.T, path string) (cert, key string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Users []struct {
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}
	if err := yaml.Unmarshal(b, &kc); err != nil || len(kc.Users) != 1 || kc.Users[0].User.Cert == "" || kc.Users[0].User.Key == "" {
		t.Fatalf("the kubeconfig %s has not one user with a certificate and a key: %v", path, err)
	}
	return kc.Users[0].User.Cert, kc.Users[0].User.Key
}

// clientCert is the client certificate of the kubeconfig at path.
func clientCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	cert, _ := kubeconfigUser(t, path)
	raw, _ := base64.StdEncoding.DecodeString(cert)
	blk, _ := pem.Decode(raw)
	if blk == nil {
		t.Fatal("the kubeconfig's certificate is not PEM")
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// privateKeyValues are what would show of the kubeconfig at path's private key if any of it
// leaked: its client-key-data whole, and every 16-character run (96 random bits) of the base64
// characters that encode the private scalar alone, as a PEM body or a base64 dump shows it. Runs
// that also cover the key's other bytes would match public text: its algorithm identifiers and
// its public point are in every certificate.
func privateKeyValues(t *testing.T, path string) []string {
	t.Helper()
	const run = 16
	_, keyData := kubeconfigUser(t, path)
	pemKey, err := base64.StdEncoding.DecodeString(keyData)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(pemKey)
	if blk == nil {
		t.Fatalf("the kubeconfig %s's client key is not PEM", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	ec, ok := k.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		t.Fatalf("the kubeconfig %s's client key: %T %v", path, k, err)
	}
	scalar, err := ec.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	off := bytes.Index(blk.Bytes, scalar)
	if off < 0 {
		t.Fatalf("the kubeconfig %s's key does not hold its scalar", path)
	}
	// Character i of the base64 covers bits [6i, 6i+6): those inside the scalar's bytes only.
	body := base64.StdEncoding.EncodeToString(blk.Bytes)
	first, last := (off*8+5)/6, ((off+len(scalar))*8-6)/6
	inside := body[first : last+1]
	out := []string{keyData}
	for i := 0; i+run <= len(inside); i++ {
		out = append(out, inside[i:i+run])
	}
	return out
}

// stateNames lists the clusters the world's state bucket holds.
func stateNames(ctx context.Context, t *testing.T, w *world.World) []string {
	t.Helper()
	out, err := runBotOut(ctx, envMap(w), "state", "ls")
	if err != nil {
		t.Fatalf("bot state ls: %v\n%s", err, out)
	}
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(f[0], "acme-shop-") {
			names = append(names, f[0])
		}
	}
	return names
}

// scanPRSecrets: nothing any job printed (but its ::add-mask:: lines, which the runner hides),
// wrote to its summary or outputs, nothing the runner logged, and nothing on GitHub (comments,
// check runs, deployment statuses) holds a credential — as the soak's checker reads them, and,
// exactly, none of the values of the kubeconfigs the jobs wrote (their keys and certificates).
func scanPRSecrets(t *testing.T, w *world.World, r *actions.Runner, log, repo string) {
	t.Helper()
	var issued []string // the private keys of every kubeconfig a job wrote
	for _, j := range r.Results() {
		if j.Kubeconfig != "" {
			issued = append(issued, privateKeyValues(t, j.Kubeconfig)...)
		}
	}
	if len(issued) == 0 {
		t.Error("no job wrote a kubeconfig: the exact scan has nothing to look for")
	}
	n := 0
	check := func(what, text string) {
		n++
		if commands.ContainsSecret(text) {
			t.Errorf("%s holds a secret: %s", what, commands.Redact(text))
		}
		for _, v := range issued {
			if strings.Contains(text, v) {
				t.Errorf("%s holds (part of) the private key of an issued kubeconfig", what)
				break
			}
		}
	}
	for _, j := range r.Results() {
		for _, text := range []string{j.Output, j.Summary, j.Outputs} {
			for _, line := range strings.Split(text, "\n") {
				if !strings.HasPrefix(line, "::add-mask::") {
					check(fmt.Sprintf("a line of the %s job of #%d", j.Event, j.PR), line)
				}
			}
		}
	}
	for _, line := range strings.Split(log, "\n") {
		check("a line of the runner's log", line)
	}
	for _, c := range w.GitHub.AllComments() {
		check(fmt.Sprintf("comment %d", c.ID), c.Body)
	}
	for _, cr := range w.GitHub.CheckRuns(repo) {
		check(fmt.Sprintf("check run %d", cr.ID), cr.Title+"\n"+cr.Summary+"\n"+cr.Text)
	}
	for _, d := range w.GitHub.Deployments(repo) {
		check(fmt.Sprintf("deployment %d's statuses", d.ID), strings.Join(d.Descriptions, "\n")+strings.Join(d.URLs, "\n"))
	}
	if n < 50 {
		t.Errorf("the scan read %d lines and bodies: too few to mean anything", n)
	}
}
