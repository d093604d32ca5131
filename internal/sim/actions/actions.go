package actions

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/deploy"
	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// ref reads a ${{ secrets.X }}, ${{ vars.X }} or ${{ inputs.X || 'default' }} value.
var ref = regexp.MustCompile(`^\$\{\{\s*(secrets|vars|inputs)\.([A-Za-z0-9_-]+)(?:\s*\|\|\s*'([^']*)')?\s*\}\}$`)

// WorkflowEnv is what a run of repo's workflow (on its default branch) gives `bot handle`: the
// pocbot step's with: values, resolved as GitHub resolves them for an issue comment, mapped to
// variables by action.yml's run step. ok is false when the default branch holds no workflow.
func WorkflowEnv(gh *ghsim.Server, repo string) (env map[string]string, ok bool, err error) {
	text, ok := gh.File(repo, "", repoinit.WorkflowPath)
	if !ok {
		return nil, false, nil
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
	if err := yaml.Unmarshal(text, &wf); err != nil {
		return nil, true, fmt.Errorf("read %s of %s: %w", repoinit.WorkflowPath, repo, err)
	}
	job, found := wf.Jobs["bot"]
	if !found {
		return nil, true, fmt.Errorf("%s of %s has no job bot", repoinit.WorkflowPath, repo)
	}
	action := actionSpec
	// An input the step does not give is action.yml's default.
	inputs := map[string]string{}
	for k, in := range action.Inputs {
		inputs[k] = in.Default
	}
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
					s, _ = gh.Secret(repo, "", m[2]) // a repository secret is visible in every environment
				}
				inputs[k] = s
			case m[1] == "vars":
				inputs[k] = gh.EnvironmentVariable(repo, job.Environment, m[2])
			case m[1] == "inputs":
				inputs[k] = m[3] // not dispatched: the default
			}
		}
	}
	env = map[string]string{}
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
	if len(env) == 0 {
		return nil, true, fmt.Errorf("action.yml has no run step mapping inputs to variables")
	}
	return env, true, nil
}

// Runner runs the workflow on the comments users post.
type Runner struct {
	GitHub *ghsim.Server
	// Base is what every run has beside the workflow's values: where the services are (the world's
	// Endpoints), as a runner reaches the real ones by default.
	Base [][2]string
	// Handle runs `bot handle` with env (KEY=VALUE) and returns its combined output.
	Handle func(ctx context.Context, env []string) ([]byte, error)
	// Request runs `bot request-kubeconfig` (the Action's command: kubeconfig) in a pull request's
	// job; nil: that step fails.
	Request func(ctx context.Context, env []string) ([]byte, error)
	// Kube plays a step that uses the kubeconfig (PlayKube when nil).
	Kube func(ctx context.Context, st KubeStep) error
	// JobStart is how long GitHub takes to start a job once its event happened (modeled; 0: none).
	JobStart time.Duration
	// Dir holds the event files.
	Dir string
	// Log receives one line per run and, for a failed run, its output.
	Log io.Writer
	// Interval is how often the comments are looked at (default 300ms); Timeout bounds a run
	// (default the workflow's 60 minutes).
	Interval, Timeout time.Duration

	seen map[int64]bool
	runs int
	jobs jobs // pull requests' and dispatches' jobs (prs.go)
}

// Watch runs the workflow for every comment posted after it starts, until ctx ends.
// It writes none of the Runner's settings: the jobs it and PR start read them from goroutines of
// their own (a default written here raced with a pull request's job reading the timeout).
func (r *Runner) Watch(ctx context.Context) {
	r.seen = map[int64]bool{}
	for _, c := range r.GitHub.AllComments() {
		r.seen[c.ID] = true
	}
	t := time.NewTicker(r.interval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.Poll(ctx)
		r.pollDispatches(ctx)
	}
}

// interval is Interval or its default.
func (r *Runner) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return 300 * time.Millisecond
}

// timeout is Timeout or its default, the bot job's timeout-minutes in the workflow `bot init`
// writes.
func (r *Runner) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return botJobTimeout()
}

// botJobTimeout is the bot job's timeout-minutes in deploy/workflow/poc.yml.
var botJobTimeout = sync.OnceValue(func() time.Duration { return jobTimeout(deploy.Workflow, "bot") })

// githubJobTimeout is how long GitHub lets a job run when its workflow sets no timeout-minutes.
const githubJobTimeout = 360 * time.Minute

// jobTimeout is job's timeout-minutes in workflow, or GitHub's default when it sets none (or
// cannot be read: the stand-in then cuts a run where GitHub would).
func jobTimeout(workflow, job string) time.Duration {
	var wf struct {
		Jobs map[string]struct {
			TimeoutMinutes int `yaml:"timeout-minutes"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal([]byte(workflow), &wf); err != nil || wf.Jobs[job].TimeoutMinutes <= 0 {
		return githubJobTimeout
	}
	return time.Duration(wf.Jobs[job].TimeoutMinutes) * time.Minute
}

// Poll runs the workflow for each comment not seen yet (in the order they were made) and returns
// how many runs it made.
func (r *Runner) Poll(ctx context.Context) int {
	if r.seen == nil {
		r.seen = map[int64]bool{}
	}
	comments := r.GitHub.AllComments()
	sort.Slice(comments, func(i, j int) bool { return comments[i].ID < comments[j].ID })
	n := 0
	for _, c := range comments {
		if r.seen[c.ID] || ctx.Err() != nil {
			continue
		}
		r.seen[c.ID] = true
		// The job's if: (deploy/workflow/poc.yml); contains() and != ignore case.
		if strings.EqualFold(c.AuthorType, "Bot") || !strings.Contains(strings.ToLower(c.Body), "/poc") {
			continue
		}
		if r.run(ctx, c) {
			n++
		}
	}
	return n
}

// run runs the workflow for one comment; false when the repository has no workflow.
func (r *Runner) run(ctx context.Context, c ghsim.Comment) bool {
	env, ok, err := WorkflowEnv(r.GitHub, c.Repo)
	if !ok {
		return false
	}
	r.runs++
	id := r.runs
	if err != nil {
		fmt.Fprintf(r.Log, "actions: run %d of %s on %s#%d not started: %v\n", id, repoinit.WorkflowPath, c.Repo, c.Number, err)
		return true
	}
	event := filepath.Join(r.Dir, fmt.Sprintf("event-%d.json", id))
	payload := r.GitHub.IssueCommentPayload(c.Repo, c.Number, c.ID, c.Author, c.Body)
	if err := os.WriteFile(event, payload, 0o600); err != nil {
		fmt.Fprintf(r.Log, "actions: run %d: write the event: %v\n", id, err)
		return true
	}
	for _, kv := range r.Base {
		env[kv[0]] = kv[1]
	}
	env["GITHUB_ACTIONS"], env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"] = "true", "issue_comment", event
	env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"], env["GITHUB_ACTOR"] = c.Repo, strconv.Itoa(id), c.Author
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	fmt.Fprintf(r.Log, "actions: run %d of %s on %s#%d (%q by %s)\n", id, repoinit.WorkflowPath, c.Repo, c.Number, firstLine(c.Body), c.Author)
	rctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	out, err := r.Handle(rctx, list)
	if err != nil {
		fmt.Fprintf(r.Log, "actions: run %d failed: %v\n%s\n", id, err, out)
		return true
	}
	fmt.Fprintf(r.Log, "actions: run %d succeeded\n", id)
	return true
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
