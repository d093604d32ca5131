package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/actions"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// workflowEnv is what a run of the merged workflow gives `bot handle` (the Actions stand-in's
// reading of the workflow and action.yml).
func workflowEnv(t *testing.T, gh *ghsim.Server, repo string) map[string]string {
	t.Helper()
	env, ok, err := actions.WorkflowEnv(gh, repo)
	if !ok || err != nil {
		t.Fatalf("the workflow of %s: on the default branch %v, %v", repo, ok, err)
	}
	return env
}

// The issue's "done when": in the emulated world, `bot init --iam` (which makes the bot's Scaleway
// identity and the buckets) then merging its pull request, and the first `/poc up` works with no
// other step; a second `bot init` changes nothing: no write to GitHub, to Scaleway or to Object
// Storage.
func TestInitThenFirstUp(t *testing.T) {
	t.Parallel()
	objstoretest.Require(t) // the buckets' versioning and lifecycle need the real S3 server
	ctx, w := startWorld(t, 4*time.Minute, world.Options{S3: "versitygw"})
	s3writes := objstoretest.Writes(w.S3)
	const repo = "acme/shop"
	laptop := adminLaptop(w, repo)
	w.GitHub.SetPermission(repo, "alice", "maintain")
	delete(laptop, "POC_STATE_KEY") // init generates it
	initCmd := func() (string, error) {
		return runBotOut(ctx, laptop, "init", "--repo", repo, "--iam", "--action", testActionRef)
	}

	// 1. bot init
	out, err := initCmd()
	if err != nil {
		t.Fatalf("bot init: %v\n%s", err, out)
	}
	prs := w.GitHub.PullRequests(repo)
	if len(prs) != 1 {
		t.Fatalf("open pull requests after init: %v\n%s", prs, out)
	}
	for _, v := range []string{laptop["SCW_SECRET_KEY"]} {
		if strings.Contains(out, v) {
			t.Fatalf("init printed a secret:\n%s", out)
		}
	}
	// 2. the maintainer merges it
	for n := range prs {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}
	if ws := s3writes(); len(ws) != 4 { // each bucket: versioning and lifecycle (the world made them)
		t.Errorf("the first init's writes to Object Storage: %v, want versioning and lifecycle of both buckets", ws)
	}
	// A second init changes nothing.
	before := len(w.GitHub.Requests())
	w.Scaleway.ResetCalls()
	if out, err := initCmd(); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	githubReadOnly(t, w, before, "the second init")
	for _, c := range w.Scaleway.Calls() {
		if c.Method != "GET" {
			t.Errorf("the second init made %s %s on Scaleway", c.Method, c.Path)
		}
	}
	if ws := s3writes(); len(ws) != 0 {
		t.Errorf("the second init wrote to Object Storage: %v", ws)
	}

	// 3. /poc up, run as the merged workflow runs it: with the key init made (--iam), not the laptop's.
	// Its keys reach Object Storage as the world's IAM says (nothing registered by hand).
	env := workflowEnv(t, w.GitHub, repo)
	if env["SCW_ACCESS_KEY"] == laptop["SCW_ACCESS_KEY"] || env["SCW_SECRET_KEY"] == laptop["SCW_SECRET_KEY"] {
		t.Fatal("init --iam wrote the administrator's key as the bot's")
	}
	for _, k := range []string{"POC_STATE_KEY", "SCW_SECRET_KEY", "POC_APP_PRIVATE_KEY", "POC_STATE_URL"} {
		if env[k] == "" {
			t.Fatalf("the workflow gives the bot no %s", k)
		}
	}
	// Where the real services would be: the world's endpoints (not secrets; defaults in production).
	for _, k := range []string{"SCW_API_URL", "GITHUB_API_URL", "POC_IMAGE_FACTORY_URL", "POC_CILIUM_CHART", "POC_RESCUE_SSH_PORT", "POC_POLL_INTERVAL", "POC_RUNNER_CIDR", "SCW_DEFAULT_ZONE", "SCW_DEFAULT_REGION"} {
		env[k] = laptop[k]
	}
	number := w.GitHub.AddIssue(repo, ghsim.Issue{Number: 7, Title: "try it", Author: "alice"})
	id := w.GitHub.AddComment(repo, number, "alice", "/poc up")
	dir := t.TempDir()
	event := writeEvent(t, dir, "event", ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc up", w.GitHub.InstallationID(repo)))
	env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"], env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = "issue_comment", event, repo, "1"
	env["POC_STICKY_INTERVAL"], env["POC_REAP_ON_EVENTS"] = "1s", "false"
	_, log, err := runBot(ctx, only(env), "handle")
	if err != nil {
		t.Fatalf("bot handle /poc up: %v\n%s", err, log)
	}
	var status string
	for _, c := range w.GitHub.Comments(repo, number) {
		if c.Author != "alice" {
			status += c.Body + "\n"
		}
	}
	t.Logf("status comment:\n%s", status)
	if !strings.Contains(status, "Kubernetes API") {
		t.Fatalf("no endpoint in the bot's comments:\n%s\nlog:\n%s", status, log)
	}

	// A set-up fault: the reply says what is wrong (the fast part of bot doctor).
	env["POC_STATE_KEY"] = ""
	id = w.GitHub.AddComment(repo, number, "alice", "/poc status")
	writeEvent(t, dir, "event", ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc status", w.GitHub.InstallationID(repo)))
	_, _, _ = runBot(ctx, only(env), "handle")
	var reply string
	for _, c := range w.GitHub.Comments(repo, number) {
		if c.Author != "alice" && strings.Contains(c.Body, "Failed") {
			reply = c.Body
		}
	}
	if !strings.Contains(reply, "set-up checks") || !strings.Contains(reply, "POC_STATE_KEY is empty in this run") || !strings.Contains(reply, "bot init --repo acme/shop") {
		t.Fatalf("the failure reply does not say what is wrong:\n%s", reply)
	}
}

// initRepo runs `bot init` (without --iam) on repo in-process with env.
func initRepo(ctx context.Context, env map[string]string, repo string) (string, error) {
	return runBotOut(ctx, env, "init", "--repo", repo, "--action", testActionRef)
}
