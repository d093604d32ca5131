package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// workflowEnv is what a run of the merged workflow gives `bot handle`: the pocbot step's with:
// values (secrets resolved as GitHub does, from the environment the job names or the repository),
// mapped to variables by action.yml's run step.
func workflowEnv(t *testing.T, gh *ghsim.Server, repo string) map[string]string {
	t.Helper()
	wfText, ok := gh.File(repo, "", repoinit.WorkflowPath)
	if !ok {
		t.Fatalf("%s is not on the default branch", repoinit.WorkflowPath)
	}
	var wf struct {
		Jobs map[string]struct {
			Environment string `yaml:"environment"`
			Steps       []struct {
				Uses string            `yaml:"uses"`
				With map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(wfText, &wf); err != nil {
		t.Fatal(err)
	}
	actionText, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Runs struct {
			Steps []struct {
				ID  string            `yaml:"id"`
				Env map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(actionText, &action); err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`^\$\{\{\s*(secrets|vars|inputs)\.([A-Za-z0-9_-]+)(?:\s*\|\|\s*'([^']*)')?\s*\}\}$`)
	job := wf.Jobs["bot"]
	inputs := map[string]string{}
	for _, st := range job.Steps {
		if !strings.HasPrefix(st.Uses, "pocbot/pocbot@") {
			continue
		}
		for k, v := range st.With {
			m := ref.FindStringSubmatch(v)
			switch {
			case m == nil:
				inputs[k] = v
			case m[1] == "secrets":
				s, ok := gh.Secret(repo, job.Environment, m[2])
				if !ok && job.Environment != "" {
					s, ok = gh.Secret(repo, "", m[2]) // a repository secret is visible in every environment
				}
				if !ok {
					s = ""
				}
				inputs[k] = s
			case m[1] == "inputs":
				inputs[k] = m[3] // not dispatched: the default
			default:
				t.Fatalf("the workflow reads %s.%s, which init does not write", m[1], m[2])
			}
		}
	}
	env := map[string]string{}
	for _, st := range action.Runs.Steps {
		if st.ID != "run" {
			continue
		}
		for k, v := range st.Env {
			if m := ref.FindStringSubmatch(v); m != nil && m[1] == "inputs" {
				env[k] = inputs[m[2]]
			}
		}
	}
	return env
}

// The issue's "done when": in the emulated world, `bot init --iam` (which makes the bot's Scaleway
// identity) then merging its pull request, and the first `/poc up` works with no other step; a
// second `bot init` changes nothing.
func TestInitThenFirstUp(t *testing.T) {
	ctx, w := startWorld(t, 4*time.Minute, world.Options{})
	const repo = "acme/shop"
	laptop := laptop(w, repo)
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
	// A second init changes nothing.
	before := len(w.GitHub.Requests())
	if out, err := initCmd(); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	githubReadOnly(t, w, before, "the second init")

	// 3. /poc up, run as the merged workflow runs it: with the key init made (--iam), not the laptop's.
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
	for _, k := range []string{"SCW_API_URL", "GITHUB_API_URL", "POC_IMAGE_FACTORY_URL", "POC_RESCUE_SSH_PORT", "POC_POLL_INTERVAL", "POC_RUNNER_CIDR", "SCW_DEFAULT_ZONE", "SCW_DEFAULT_REGION"} {
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

// doctorRun runs `bot doctor` in-process with env and extra arguments.
func doctorRun(ctx context.Context, env map[string]string, args ...string) (string, error) {
	return runBotOut(ctx, env, append([]string{"doctor"}, args...)...)
}

// `bot doctor` passes on what `bot init` set up, and fails naming the cause on a missing secret, a
// key without a permission set the bot needs, and a bucket without conditional writes.
func TestDoctor(t *testing.T) {
	objstoretest.Require(t)
	// Object Storage is the versitygw stand-in: init turns the buckets' versioning on and adds the
	// lifecycle rule, which doctor checks.
	ctx, w := startWorld(t, 4*time.Minute, world.Options{S3: "versitygw"})
	s3writes := objstoretest.Writes(w.S3)
	const repo = "acme/shop"
	laptop := laptop(w, repo)
	initOut, err := initRepo(ctx, laptop, repo)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, initOut)
	}
	for n := range w.GitHub.PullRequests(repo) {
		if err := w.GitHub.MergePR(repo, n); err != nil {
			t.Fatal(err)
		}
	}

	if ws := s3writes(); len(ws) != 4 { // each bucket existed: versioning and lifecycle, twice
		t.Errorf("init's writes to Object Storage: %v, want versioning and lifecycle of both buckets\n%s", ws, initOut)
	}
	if out, err := initRepo(ctx, laptop, repo); err != nil || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if ws := s3writes(); len(ws) != 0 {
		t.Errorf("the second init wrote to Object Storage: %v", ws)
	}

	out, err := doctorRun(ctx, laptop, "--repo", repo)
	if err != nil {
		t.Fatalf("doctor on a fresh installation: %v\n%s", err, out)
	}
	for _, want := range []string{"✓ App installation", "secrets                  8 required secrets in the environment poc", "✓ workflow pin", "✓ IAM permissions", "✓ state store", "✓ versioning, lifecycle", "✓ quota, stock headroom    one default cluster fits"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's checklist lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, laptop["SCW_SECRET_KEY"]) || strings.Contains(out, laptop["POC_STATE_KEY"]) {
		t.Errorf("doctor printed a secret:\n%s", out)
	}

	t.Run("missing secret", func(t *testing.T) {
		w.GitHub.DeleteSecret(repo, "poc", "SCW_SECRET_KEY")
		defer func() {
			if _, err := initRepo(ctx, laptop, repo); err != nil {
				t.Fatal(err)
			}
		}()
		out, err := doctorRun(ctx, laptop, "--repo", repo)
		if err == nil || !regexp.MustCompile(`✗ secrets +missing in the environment poc: SCW_SECRET_KEY`).MatchString(out) || !strings.Contains(out, "bot init --repo acme/shop") {
			t.Fatalf("doctor with SCW_SECRET_KEY deleted: %v\n%s", err, out)
		}
	})

	t.Run("key without a needed permission", func(t *testing.T) {
		w.Scaleway.AddAPIKey("SCWLIMITEDKEY0000000", "limited-secret", "pocbot-limited", world.ProjectID, "InstancesFullAccess", "BlockStorageFullAccess", "SSHKeysFullAccess", "DomainsDNSFullAccess", "ObjectStorageFullAccess")
		out, err := doctorRun(ctx, laptop, "--repo", repo, "--key", "SCWLIMITEDKEY0000000")
		if err == nil || !regexp.MustCompile(`✗ IAM permissions .*lacks on project \S+: ElasticMetalFullAccess`).MatchString(out) {
			t.Fatalf("doctor on a key without ElasticMetalFullAccess: %v\n%s", err, out)
		}
	})

	t.Run("bucket without conditional writes", func(t *testing.T) {
		s3, err := objstore.StartVersity(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer s3.Close()
		if err := s3.CreateBucket(ctx, "state"); err != nil {
			t.Fatal(err)
		}
		// An S3 clone that ignores conditions, as its client sees it: a write refused for its
		// precondition is answered as done (the headers themselves are signed, so they stay).
		target, _ := url.Parse(s3.Endpoint)
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ModifyResponse = func(resp *http.Response) error {
			if resp.StatusCode == http.StatusPreconditionFailed && resp.Request.Method != http.MethodGet {
				resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
				resp.Header.Set("ETag", `"00000000000000000000000000000001"`)
				resp.Body = io.NopCloser(strings.NewReader(""))
				resp.ContentLength = 0
				resp.Header.Del("Content-Length")
			}
			return nil
		}
		strip := httptest.NewServer(proxy)
		defer strip.Close()
		env := map[string]string{}
		for k, v := range laptop {
			env[k] = v
		}
		env["POC_STATE_URL"] = "s3://state?endpoint=" + url.QueryEscape(strip.URL) + "&region=fr-par&use_path_style=true"
		env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"] = s3.AccessKey, s3.SecretKey
		// The same bucket straight: passes (the check sees the server, not the proxy's absence).
		direct := map[string]string{}
		for k, v := range env {
			direct[k] = v
		}
		direct["POC_STATE_URL"] = s3.BucketURL("state")
		if out, err := doctorRun(ctx, direct, "--repo", repo); err != nil || !strings.Contains(out, "✓ presigned link") || !strings.Contains(out, "✓ versioning, lifecycle") {
			t.Fatalf("doctor on versitygw directly: %v\n%s", err, out)
		}
		out, err := doctorRun(ctx, env, "--repo", repo)
		if err == nil || !strings.Contains(out, "✗ state store") || !strings.Contains(out, "does not honour conditional writes") {
			t.Fatalf("doctor on a bucket without conditional writes: %v\n%s", err, out)
		}
	})
}

// initRepo runs `bot init` (without --iam) on repo in-process with env.
func initRepo(ctx context.Context, env map[string]string, repo string) (string, error) {
	return runBotOut(ctx, env, "init", "--repo", repo, "--action", testActionRef)
}
