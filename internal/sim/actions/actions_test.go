package actions

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// The Runner runs the workflow of the default branch, for a user's /poc comment only, with the
// environment's secrets (here none: the repository's, visible in every environment), the step's inputs
// mapped by action.yml, the event and the base endpoints.
func TestRunnerRunsTheWorkflowOnAPocComment(t *testing.T) {
	gh, err := ghsim.New(ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const repo = "acme/shop"
	gh.AddRepo(repo, "main")
	n := gh.AddIssue(repo, ghsim.Issue{Title: "try", Author: "alice"})
	var runs [][]string
	var log bytes.Buffer
	r := &Runner{GitHub: gh, Base: [][2]string{{"SCW_API_URL", "http://127.0.0.1:1"}}, Dir: t.TempDir(), Log: &log,
		Handle: func(_ context.Context, env []string) ([]byte, error) { runs = append(runs, env); return nil, nil }}
	get := func(env []string, k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}

	gh.AddComment(repo, n, "alice", "/poc up")
	if got := r.Poll(t.Context()); got != 0 {
		t.Fatalf("%d runs without a workflow on the default branch", got)
	}
	gh.SetFile(repo, "pocbot-init", repoinit.WorkflowPath, repoinit.WorkflowFile("pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.0.0", true, ""))
	gh.AddComment(repo, n, "alice", "/poc up")
	if got := r.Poll(t.Context()); got != 0 {
		t.Fatalf("%d runs with the workflow on another branch only", got)
	}

	gh.SetFile(repo, "main", repoinit.WorkflowPath, repoinit.WorkflowFile("pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.0.0", true, ""))
	if !gh.SetSecret(repo, "", "SCW_ACCESS_KEY", "SCWREPO") || gh.SetSecret(repo, "poc", "POC_STATE_KEY", "k") {
		t.Fatal("SetSecret: the repository's must work, an absent environment's must not")
	}
	gh.AddComment(repo, n, "pocbot[bot]", "status /poc up")
	gh.AddComment(repo, n, "alice", "thanks")
	id := gh.AddComment(repo, n, "alice", "/poc up --ttl 2h")
	if got := r.Poll(t.Context()); got != 1 || len(runs) != 1 {
		t.Fatalf("runs after a bot's comment, a plain one and a /poc one: %d (%d handled), want 1\n%s", got, len(runs), log.String())
	}
	env := runs[0]
	if get(env, "SCW_ACCESS_KEY") != "SCWREPO" || get(env, "AWS_ACCESS_KEY_ID") != "SCWREPO" {
		t.Errorf("the repository secret did not reach the run as action.yml maps it: %v", env)
	}
	if get(env, "INPUT_COMMAND") != "handle" || get(env, "SCW_API_URL") != "http://127.0.0.1:1" || get(env, "GITHUB_EVENT_NAME") != "issue_comment" {
		t.Errorf("the run's command, base or event name: %v", env)
	}
	event, err := os.ReadFile(get(env, "GITHUB_EVENT_PATH"))
	if err != nil || !strings.Contains(string(event), "/poc up --ttl 2h") || !strings.Contains(string(event), `"id":`+strconv.FormatInt(id, 10)) {
		t.Errorf("the event file: %s, %v", event, err)
	}
	if got := r.Poll(t.Context()); got != 0 {
		t.Errorf("a comment ran twice")
	}
	// An input the step leaves out is action.yml's default: command is "handle". Failed on the
	// old Runner: INPUT_COMMAND was empty.
	wf, _ := gh.File(repo, "main", repoinit.WorkflowPath)
	var kept []string
	for _, line := range strings.Split(string(wf), "\n") {
		if !strings.Contains(line, "command: ${{") {
			kept = append(kept, line)
		}
	}
	gh.SetFile(repo, "main", repoinit.WorkflowPath, []byte(strings.Join(kept, "\n")))
	gh.AddComment(repo, n, "alice", "/poc status")
	if got := r.Poll(t.Context()); got != 1 || get(runs[len(runs)-1], "INPUT_COMMAND") != "handle" {
		t.Errorf("a step without command: %d runs, INPUT_COMMAND %q, want 1 and action.yml's default handle", got, get(runs[len(runs)-1], "INPUT_COMMAND"))
	}
	// contains() in the job's if: ignores case (github/docs "Evaluate expressions in workflows"):
	// "/POC down" starts a run as "/poc down" does; the bot, not the workflow, decides what it is.
	// Failed on the old Runner: no run.
	gh.AddComment(repo, n, "alice", "/POC down")
	if got := r.Poll(t.Context()); got != 1 {
		t.Errorf("runs for %q: %d, want 1 (GitHub's contains() ignores case)\n%s", "/POC down", got, log.String())
	}
}

// Watch leaves the Runner's settings as it was given them: the jobs that Watch and PR start read
// them from goroutines of their own, so a default written by Watch raced with a pull request's
// job reading its timeout (the race detector caught it in cmd/bot's
// TestPullRequestWorkflowGetsItsCluster under load). The defaults are read, never stored.
func TestWatchWritesNoSetting(t *testing.T) {
	gh, err := ghsim.New(ghsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{GitHub: gh, Dir: t.TempDir(), Log: &bytes.Buffer{}}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	r.Watch(ctx)
	if r.Interval != 0 || r.Timeout != 0 {
		t.Errorf("Watch wrote the settings (Interval %v, Timeout %v): a job running beside it reads them", r.Interval, r.Timeout)
	}
}

// A run is cut at its job's timeout-minutes, GitHub's 360 minutes when the workflow sets none; the
// Runner's default is the bot job's in the workflow `bot init` writes.
func TestJobTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, workflow string
		want           time.Duration
	}{
		{"set", "jobs:\n  bot:\n    timeout-minutes: 45\n", 45 * time.Minute},
		{"another job's", "jobs:\n  e2e:\n    timeout-minutes: 45\n  bot:\n    runs-on: x\n", 360 * time.Minute},
		{"none", "jobs:\n  bot:\n    runs-on: x\n", 360 * time.Minute},
		{"unreadable", "jobs: [", 360 * time.Minute},
	} {
		if got := jobTimeout(tc.workflow, "bot"); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := (&Runner{}).timeout(); got != time.Hour {
		t.Errorf("the Runner's default: %v, want deploy/workflow/poc.yml's timeout-minutes: 60", got)
	}
}
