package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
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

// The issue's "done when": in the emulated world, `bot init` then merging its pull request, and
// the first `/poc up` works with no other step; a second `bot init` changes nothing.
func TestInitThenFirstUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "ada", "admin")
	w.GitHub.SetPermission(repo, "alice", "maintain")
	token := w.GitHub.AddUserToken("ada")
	laptop := map[string]string{"GH_TOKEN": token}
	for _, kv := range w.Env() {
		laptop[kv[0]] = kv[1]
	}
	delete(laptop, "POC_STATE_KEY") // init generates it
	initCmd := func() (string, error) {
		var so, se bytes.Buffer
		a := newApp(&so, &se, func(k string) string { return laptop[k] })
		err := a.dispatch(ctx, []string{"init", "--repo", repo, "--action", "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"})
		return so.String() + se.String(), err
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
	for _, r := range w.GitHub.Requests()[before:] {
		if r.Method != "GET" {
			t.Errorf("the second init made %s %s", r.Method, r.Path)
		}
	}

	// 3. /poc up, run as the merged workflow runs it.
	env := workflowEnv(t, w.GitHub, repo)
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
	event := filepath.Join(dir, "event.json")
	if err := os.WriteFile(event, ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc up", w.GitHub.InstallationID(repo)), 0o600); err != nil {
		t.Fatal(err)
	}
	env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"], env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = "issue_comment", event, repo, "1"
	env["POC_STICKY_INTERVAL"], env["POC_REAP_ON_EVENTS"] = "1s", "false"
	var so, se bytes.Buffer
	a := newApp(&so, &se, func(k string) string { return env[k] })
	if err := a.dispatch(ctx, []string{"handle"}); err != nil {
		t.Fatalf("bot handle /poc up: %v\n%s", err, se.String())
	}
	var status string
	for _, c := range w.GitHub.Comments(repo, number) {
		if c.Author != "alice" {
			status += c.Body + "\n"
		}
	}
	t.Logf("status comment:\n%s", status)
	if !strings.Contains(status, "Kubernetes API") {
		t.Fatalf("no endpoint in the bot's comments:\n%s\nlog:\n%s", status, se.String())
	}
}
