package actions

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	yamlv4 "go.yaml.in/yaml/v4"
	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot"
	"github.com/pocbot/pocbot/deploy"
	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/talos"
)

// Pull requests (prs.go): the events of a pull request, played on the workflows that subscribe to
// them, and the repository_dispatch runs the pull request's job causes. Contract rows in doc.go,
// "Pull requests".

// JobResult is one job a pull request event or a dispatch ran.
type JobResult struct {
	RunID    int64
	Workflow string // the workflow file's path
	Event    string
	Repo     string
	PR       int
	Skipped  string // why the job did not run ("" when it ran)
	Err      error
	// Output is everything the job printed (its steps' logs and workflow commands); Summary and
	// Outputs are its steps' $GITHUB_STEP_SUMMARY and $GITHUB_OUTPUT files.
	Output, Summary, Outputs string
	// Kubeconfig is the path the kubeconfig step set as kubeconfig-path; FirstKube is when a later
	// step's first Kubernetes call succeeded (zero: none did).
	Kubeconfig string
	FirstKube  time.Time
	Queued     time.Time // when GitHub queued it (the event)
	Started    time.Time // when a runner took it (after JobStart)
	Ended      time.Time
}

// jobs tracks the jobs started in the background.
type jobs struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	results []*JobResult
	// dispatched counts the repository_dispatch events already run.
	dispatched int
}

func (r *Runner) start(res *JobResult, run func(*JobResult)) {
	r.jobs.mu.Lock()
	r.jobs.results = append(r.jobs.results, res)
	r.jobs.mu.Unlock()
	r.jobs.wg.Add(1)
	go func() {
		defer r.jobs.wg.Done()
		run(res)
	}()
}

// Wait waits for every job started so far.
func (r *Runner) Wait() { r.jobs.wg.Wait() }

// Results returns the jobs started so far (the finished ones complete).
func (r *Runner) Results() []*JobResult {
	r.jobs.mu.Lock()
	defer r.jobs.mu.Unlock()
	return slices.Clone(r.jobs.results)
}

// PR plays a pull_request event of repo's pull request number, as GitHub sends it: to the default
// branch's pocbot workflow as pull_request_target when its types list action, and to the pull
// request's end-to-end workflow as pull_request when its types list it. The jobs run in the
// background (Wait, Results); sender caused the event.
func (r *Runner) PR(ctx context.Context, repo string, number int, action, label, sender string) {
	queued := time.Now()
	if env, ok, err := WorkflowEnv(r.GitHub, repo); ok && (err != nil || r.subscribes(repo, "", repoinit.WorkflowPath, "pull_request_target", action)) {
		res := &JobResult{Workflow: repoinit.WorkflowPath, Event: "pull_request_target", Repo: repo, PR: number, Queued: queued}
		payload := r.GitHub.PRPayload(repo, number, action, label, sender)
		r.start(res, func(res *JobResult) {
			if err != nil {
				res.Err = err
				return
			}
			r.runBot(ctx, res, env, "pull_request_target", payload, sender, 0)
		})
	}
	sha, _ := r.GitHub.PRHead(repo, number)
	branch := "feature"
	path := repoinit.PRWorkflowPath
	if !r.subscribes(repo, branch, path, "pull_request", action) {
		return
	}
	res := &JobResult{Workflow: path, Event: "pull_request", Repo: repo, PR: number, Queued: queued}
	payload := r.GitHub.PRPayload(repo, number, action, label, sender)
	r.start(res, func(res *JobResult) { r.runE2E(ctx, res, branch, payload, action, label, sender, sha) })
}

// pollDispatches runs the default branch's pocbot workflow, in the background, for every
// repository_dispatch sent since the last poll whose type it subscribes to.
func (r *Runner) pollDispatches(ctx context.Context) int {
	all := r.GitHub.Dispatches()
	r.jobs.mu.Lock()
	fresh := all[min(r.jobs.dispatched, len(all)):]
	r.jobs.dispatched = len(all)
	r.jobs.mu.Unlock()
	n := 0
	for _, d := range fresh {
		env, ok, err := WorkflowEnv(r.GitHub, d.Repo)
		if !ok || (err == nil && !r.subscribes(d.Repo, "", repoinit.WorkflowPath, "repository_dispatch", d.EventType)) {
			continue
		}
		n++
		res := &JobResult{Workflow: repoinit.WorkflowPath, Event: "repository_dispatch", Repo: d.Repo, Queued: time.Now()}
		payload := r.GitHub.DispatchPayload(d)
		r.start(res, func(res *JobResult) {
			if err != nil {
				res.Err = err
				return
			}
			r.runBot(ctx, res, env, "repository_dispatch", payload, d.Sender, 0)
		})
	}
	return n
}

// subscribes says whether the workflow at path (of branch, else the default branch) lists the
// activity type under on.<event>.types.
func (r *Runner) subscribes(repo, branch, path, event, activity string) bool {
	text, ok := r.workflowFile(repo, branch, path)
	if !ok {
		return false
	}
	// YAML 1.2 (yaml/v4): yaml.v2 reads the key `on` as the boolean true.
	// Each event decodes apart: schedule is a list, workflow_dispatch a map of inputs.
	var wf struct {
		On map[string]yamlv4.Node `yaml:"on"`
	}
	if err := yamlv4.Unmarshal(text, &wf); err != nil {
		return false
	}
	node, ok := wf.On[event]
	var trig struct {
		Types []string `yaml:"types"`
	}
	return ok && node.Decode(&trig) == nil && slices.Contains(trig.Types, activity)
}

// workflowFile is path on branch when the branch has it, else on the default branch: a
// pull_request run takes the workflow of the merge commit, which is the branch's version.
func (r *Runner) workflowFile(repo, branch, path string) ([]byte, bool) {
	if branch != "" {
		if b, ok := r.GitHub.File(repo, branch, path); ok {
			return b, true
		}
	}
	return r.GitHub.File(repo, "", path)
}

// queue waits for a runner (JobStart, the modeled time GitHub takes to start a job).
func (r *Runner) queue(ctx context.Context, res *JobResult) bool {
	if r.JobStart > 0 {
		select {
		case <-ctx.Done():
			res.Err = ctx.Err()
			return false
		case <-time.After(r.JobStart):
		}
	}
	res.Started = time.Now()
	return true
}

// runBot runs `bot handle` for an event of the default branch's workflow (its environment's
// secrets, the event file), recorded as a workflow run.
func (r *Runner) runBot(ctx context.Context, res *JobResult, env map[string]string, event string, payload []byte, actor string, pr int) {
	defer func() { res.Ended = time.Now() }()
	if !r.queue(ctx, res) {
		return
	}
	res.RunID = r.GitHub.AddRun(res.Repo, ghsim.Run{Workflow: "poc", Path: repoinit.WorkflowPath, Event: event, Actor: actor, PR: pr})
	defer r.GitHub.SetRunStatus(res.Repo, res.RunID, "completed", "")
	dir, eventPath, err := r.jobDir("run-", payload)
	if err != nil {
		res.Err = err
		return
	}
	vars := map[string]string{}
	for k, v := range env {
		vars[k] = v
	}
	for _, kv := range r.Base {
		vars[kv[0]] = kv[1]
	}
	files := r.stepFiles(dir, vars)
	vars["GITHUB_ACTIONS"], vars["GITHUB_EVENT_NAME"], vars["GITHUB_EVENT_PATH"] = "true", event, eventPath
	vars["GITHUB_REPOSITORY"], vars["GITHUB_RUN_ID"], vars["GITHUB_RUN_ATTEMPT"] = res.Repo, strconv.FormatInt(res.RunID, 10), "1"
	vars["GITHUB_ACTOR"], vars["GITHUB_SERVER_URL"] = actor, r.serverURL()
	rctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	out, err := r.Handle(rctx, list(vars))
	res.Output, res.Err = string(out), err
	res.Summary, res.Outputs = files.read()
	r.logRun(res)
}

// jobDir makes a job's directory under the runner's and writes its event there (GITHUB_EVENT_PATH).
func (r *Runner) jobDir(prefix string, payload []byte) (dir, eventPath string, err error) {
	if dir, err = os.MkdirTemp(r.Dir, prefix); err != nil {
		return "", "", err
	}
	eventPath = filepath.Join(dir, "event.json")
	return dir, eventPath, os.WriteFile(eventPath, payload, 0o600)
}

// runE2E runs the pull request's end-to-end job: its if:, its token and OIDC rights, then its
// steps (the kubeconfig step with the Action's mapping, the steps that use the kubeconfig).
func (r *Runner) runE2E(ctx context.Context, res *JobResult, branch string, payload []byte, action, label, sender, sha string) {
	defer func() { res.Ended = time.Now() }()
	text, _ := r.workflowFile(res.Repo, branch, res.Workflow)
	job, err := parseE2E(text)
	if err != nil {
		res.Err = err
		return
	}
	_, headRepo := r.GitHub.PRHead(res.Repo, res.PR)
	fork := !strings.EqualFold(headRepo, res.Repo)
	labels := r.GitHub.Labels(res.Repo, res.PR)
	if why := job.skip(action, label, fork, labels); why != "" {
		res.Skipped = why
		r.logRun(res)
		return
	}
	if !r.queue(ctx, res) {
		return
	}
	res.RunID = r.GitHub.AddRun(res.Repo, ghsim.Run{Workflow: "poc-pr", Path: res.Workflow, Event: "pull_request", HeadSHA: sha, HeadBranch: branch,
		HeadRepo: headRepo, Actor: sender, PR: res.PR})
	defer r.GitHub.SetRunStatus(res.Repo, res.RunID, "completed", "")
	dir, eventPath, err := r.jobDir("job-", payload)
	if err != nil {
		res.Err = err
		return
	}
	vars := map[string]string{}
	for _, kv := range r.Base {
		vars[kv[0]] = kv[1]
	}
	for k, v := range job.Env {
		vars[k] = v
	}
	vars["GITHUB_ACTIONS"], vars["GITHUB_EVENT_NAME"], vars["GITHUB_EVENT_PATH"] = "true", "pull_request", eventPath
	vars["GITHUB_REPOSITORY"], vars["GITHUB_RUN_ID"], vars["GITHUB_RUN_ATTEMPT"] = res.Repo, strconv.FormatInt(res.RunID, 10), "1"
	vars["GITHUB_ACTOR"], vars["GITHUB_SERVER_URL"], vars["RUNNER_TEMP"] = sender, r.serverURL(), filepath.Join(dir, "tmp")
	if err := os.MkdirAll(vars["RUNNER_TEMP"], 0o700); err != nil {
		res.Err = err
		return
	}
	// The job's token has the job's permissions, read at most for a fork; id-token only when
	// granted, never for a fork.
	perms := map[string]string{}
	for k, v := range job.Permissions {
		if k == "id-token" {
			continue
		}
		if fork && v == "write" {
			v = "read"
		}
		perms[strings.ReplaceAll(k, "-", "_")] = v
	}
	token := "ghs_job" + strconv.FormatInt(res.RunID, 10) + "x" + strconv.FormatInt(time.Now().UnixNano(), 36)
	r.GitHub.AddJobToken(token, res.Repo, perms)
	if job.Permissions["id-token"] == "write" && !fork {
		vars["ACTIONS_ID_TOKEN_REQUEST_URL"], vars["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = r.GitHub.JobIDToken(r.serverURL(), ghsim.JobClaims{
			Repo: res.Repo, RunID: res.RunID, RunAttempt: 1, EventName: "pull_request", Ref: fmt.Sprintf("refs/pull/%d/merge", res.PR), SHA: sha, Actor: sender, Workflow: "poc-pr"})
	}
	r.steps(ctx, res, job, vars, token, dir)
	r.logRun(res)
}

// steps runs the job's steps in order until one fails.
func (r *Runner) steps(ctx context.Context, res *JobResult, job *e2eJob, vars map[string]string, token, dir string) {
	outputs := map[string]map[string]string{} // step id → outputs
	var log strings.Builder
	defer func() { res.Output = log.String() }()
	for i, st := range job.Steps {
		switch {
		case strings.HasPrefix(st.Uses, "actions/checkout@"):
			// Nothing to check out: the stand-in runs no code of the pull request's.
		case strings.HasPrefix(st.Uses, repoinit.ActionRepo+"@"):
			stepVars, err := actionEnv(st.With, token)
			if err != nil {
				res.Err = err
				return
			}
			for k, v := range vars {
				stepVars[k] = v
			}
			files := r.stepFiles(filepath.Join(dir, "step-"+strconv.Itoa(i)), stepVars)
			if stepVars["INPUT_COMMAND"] != "kubeconfig" || r.Request == nil {
				res.Err = fmt.Errorf("step %d: the stand-in runs the Action's command kubeconfig only (got %q)", i, stepVars["INPUT_COMMAND"])
				return
			}
			// action.yml's run step: GITHUB_TOKEN="$INPUT_GITHUB_TOKEN" exec "$BOT" request-kubeconfig
			stepVars["GITHUB_TOKEN"] = stepVars["INPUT_GITHUB_TOKEN"]
			out, err := r.Request(ctx, list(stepVars))
			log.Write(out)
			summary, stepOut := files.read()
			res.Summary += summary
			res.Outputs += stepOut
			if err != nil {
				res.Err = fmt.Errorf("step %s: %w", st.name(i), err)
				return
			}
			outputs[st.ID] = actionOutputs(stepOut)
		case st.Run != "":
			kc, ok := kubeconfigOf(st.Env, outputs)
			if !ok {
				res.Err = fmt.Errorf("step %s: the stand-in plays only the steps that use the kubeconfig (env KUBECONFIG from the kubeconfig step)", st.name(i))
				return
			}
			res.Kubeconfig = kc
			kube := r.Kube
			if kube == nil {
				kube = PlayKube
			}
			if err := kube(ctx, KubeStep{Index: i, Name: st.Name, Run: st.Run, Kubeconfig: kc, Env: vars, Repo: res.Repo, PR: res.PR}); err != nil {
				res.Err = fmt.Errorf("step %s: %w", st.name(i), err)
				return
			}
			if res.FirstKube.IsZero() {
				res.FirstKube = time.Now()
			}
			fmt.Fprintf(&log, "step %s: ok\n", st.name(i))
		default:
			res.Err = fmt.Errorf("step %s: neither uses nor run", st.name(i))
			return
		}
	}
}

// KubeStep is a `run:` step of the end-to-end job that uses the kubeconfig (kubectl apply,
// kubectl wait, the test command); the stand-in plays it against the emulated Kubernetes API.
type KubeStep struct {
	Index      int
	Name, Run  string
	Kubeconfig string            // the file the kubeconfig step wrote
	Env        map[string]string // the job's env: (KUSTOMIZE_DIR, NAMESPACE, TEST_COMMAND …)
	Repo       string
	PR         int
}

// PlayKube is the default play of a KubeStep: with the kubeconfig, as kubectl does, a ConfigMap
// of the pull request is written in the job's NAMESPACE by the first step (apply) and read back
// by the others (rollout, test).
func PlayKube(ctx context.Context, st KubeStep) error {
	kc, err := os.ReadFile(st.Kubeconfig)
	if err != nil {
		return fmt.Errorf("read the kubeconfig: %w", err)
	}
	if fi, err := os.Stat(st.Kubeconfig); err == nil && fi.Mode().Perm() != 0o600 {
		return fmt.Errorf("the kubeconfig %s has mode %v, not 0600", st.Kubeconfig, fi.Mode().Perm())
	}
	c, err := talos.NewKubeClient(kc)
	if err != nil {
		return err
	}
	ns := cmpOr(st.Env["NAMESPACE"], "default")
	name := fmt.Sprintf("pocbot-e2e-pr-%d", st.PR)
	if strings.Contains(st.Run, "apply") {
		err := c.Create(ctx, "configmaps", ns, name, map[string]string{"step": st.Name})
		var ans *talos.KubeAnswer
		if errors.As(err, &ans) && ans.Code == 409 {
			return c.Update(ctx, "configmaps", ns, name, map[string]string{"step": st.Name})
		}
		return err
	}
	_, err = c.Data(ctx, "configmaps", ns, name)
	return err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// e2eJob is the end-to-end workflow's one job, as the stand-in reads it.
type e2eJob struct {
	If          string
	Permissions map[string]string
	Env         map[string]string
	Steps       []e2eStep
}

type e2eStep struct {
	ID, Name, Uses, Run string
	With                map[string]string
	Env                 map[string]string
}

func (s e2eStep) name(i int) string {
	if s.Name != "" {
		return strconv.Itoa(i) + " (" + s.Name + ")"
	}
	return strconv.Itoa(i)
}

func parseE2E(text []byte) (*e2eJob, error) {
	var wf struct {
		Env  map[string]string `yaml:"env"`
		Jobs map[string]struct {
			If          string            `yaml:"if"`
			Permissions map[string]string `yaml:"permissions"`
			Steps       []e2eStep         `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(text, &wf); err != nil {
		return nil, fmt.Errorf("read %s: %w", repoinit.PRWorkflowPath, err)
	}
	if len(wf.Jobs) != 1 {
		return nil, fmt.Errorf("%s has %d jobs; the stand-in plays the template's one", repoinit.PRWorkflowPath, len(wf.Jobs))
	}
	for _, j := range wf.Jobs {
		return &e2eJob{If: j.If, Permissions: j.Permissions, Env: wf.Env, Steps: j.Steps}, nil
	}
	return nil, nil
}

// UnmarshalYAML reads a step's keys (yaml.v2 lower-cases nothing: the workflow's names).
func (s *e2eStep) UnmarshalYAML(unmarshal func(any) error) error {
	var raw struct {
		ID   string            `yaml:"id"`
		Name string            `yaml:"name"`
		Uses string            `yaml:"uses"`
		Run  string            `yaml:"run"`
		With map[string]string `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	}
	if err := unmarshal(&raw); err != nil {
		return err
	}
	*s = e2eStep{ID: raw.ID, Name: raw.Name, Uses: raw.Uses, Run: raw.Run, With: raw.With, Env: raw.Env}
	return nil
}

// templateIf is the job condition of deploy/workflow/poc-pr.yml, the only one the stand-in
// evaluates (as written there, not as a general expression).
var templateIf = func() string {
	j, err := parseE2E([]byte(deploy.PRWorkflow))
	if err != nil || j == nil {
		panic(fmt.Sprintf("deploy/workflow/poc-pr.yml does not read: %v", err))
	}
	return j.If
}()

// skip evaluates the job's if: on the event ("" when the job runs).
func (j *e2eJob) skip(action, label string, fork bool, labels []string) string {
	if j.If == "" {
		return ""
	}
	if strings.TrimSpace(j.If) != strings.TrimSpace(templateIf) {
		return "the job's if: is not the template's, which is the only one the stand-in evaluates"
	}
	hasPoc := slices.ContainsFunc(labels, func(l string) bool { return strings.EqualFold(l, "poc") })
	switch {
	case action == "closed":
		return "closed: the bot's workflow tears the cluster down"
	case fork:
		return "a fork's pull request"
	case !hasPoc:
		return "the pull request is not labeled poc"
	case action == "labeled" && !strings.EqualFold(label, "poc"):
		return "labeled " + label + ", not poc"
	}
	return ""
}

// actionSpec is action.yml's inputs, outputs and run step's env mapping, read once (for the
// bot's job and for a pull request's job alike).
var actionSpec = func() (spec struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Value string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Steps []struct {
			ID  string            `yaml:"id"`
			Env map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}) {
	if err := yaml.Unmarshal(pocbot.ActionYAML, &spec); err != nil {
		panic(fmt.Sprintf("action.yml does not read: %v", err))
	}
	return spec
}()

var (
	inputRef     = regexp.MustCompile(`^\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}$`)
	githubToken  = regexp.MustCompile(`^\$\{\{\s*github\.token\s*\}\}$`)
	stepOutRef   = regexp.MustCompile(`^\$\{\{\s*steps\.run\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$`)
	kubeconfigOK = regexp.MustCompile(`^\$\{\{\s*steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)\s*\}\}$`)
)

// actionEnv is the environment action.yml's run step gets for the step's with: (a default for an
// input not given; ${{ github.token }} is the job's token).
func actionEnv(with map[string]string, token string) (map[string]string, error) {
	inputs := map[string]string{}
	for k, in := range actionSpec.Inputs {
		inputs[k] = in.Default
	}
	for k, v := range with {
		inputs[k] = v
	}
	for k, v := range inputs {
		if githubToken.MatchString(v) {
			inputs[k] = token
		} else if strings.Contains(v, "${{") {
			return nil, fmt.Errorf("input %s = %q: the stand-in resolves only ${{ github.token }} in the kubeconfig step", k, v)
		}
	}
	env := map[string]string{}
	for _, st := range actionSpec.Runs.Steps {
		if st.ID != "run" {
			continue
		}
		for k, v := range st.Env {
			if m := inputRef.FindStringSubmatch(v); m != nil {
				env[k] = inputs[m[1]]
			}
		}
	}
	return env, nil
}

// actionOutputs maps the run step's $GITHUB_OUTPUT to the Action's outputs (action.yml outputs:
// value ${{ steps.run.outputs.X }}).
func actionOutputs(stepOut string) map[string]string {
	raw := parseOutputFile(stepOut)
	out := map[string]string{}
	for name, o := range actionSpec.Outputs {
		if m := stepOutRef.FindStringSubmatch(o.Value); m != nil {
			if v, ok := raw[m[1]]; ok {
				out[name] = v
			}
		}
	}
	return out
}

// kubeconfigOf is a step's KUBECONFIG, from an earlier step's output.
func kubeconfigOf(env map[string]string, outputs map[string]map[string]string) (string, bool) {
	m := kubeconfigOK.FindStringSubmatch(env["KUBECONFIG"])
	if m == nil {
		return "", false
	}
	v, ok := outputs[m[1]][m[2]]
	return v, ok && v != ""
}

// stepFile are a step's $GITHUB_OUTPUT and $GITHUB_STEP_SUMMARY.
type stepFile struct{ output, summary string }

func (r *Runner) stepFiles(dir string, vars map[string]string) stepFile {
	_ = os.MkdirAll(dir, 0o700)
	f := stepFile{output: filepath.Join(dir, "output"), summary: filepath.Join(dir, "summary")}
	vars["GITHUB_OUTPUT"], vars["GITHUB_STEP_SUMMARY"] = f.output, f.summary
	return f
}

func (f stepFile) read() (summary, output string) {
	s, _ := os.ReadFile(f.summary)
	o, _ := os.ReadFile(f.output)
	return string(s), string(o)
}

func list(vars map[string]string) []string {
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (r *Runner) serverURL() string {
	for _, kv := range r.Base {
		if kv[0] == "GITHUB_API_URL" {
			return kv[1]
		}
	}
	return ""
}

func (r *Runner) logRun(res *JobResult) {
	if r.Log == nil {
		return
	}
	switch {
	case res.Skipped != "":
		fmt.Fprintf(r.Log, "actions: %s of %s #%d skipped: %s\n", res.Event, res.Workflow, res.PR, res.Skipped)
	case res.Err != nil:
		fmt.Fprintf(r.Log, "actions: run %d (%s of %s) failed: %v\n", res.RunID, res.Event, res.Workflow, res.Err)
	default:
		fmt.Fprintf(r.Log, "actions: run %d (%s of %s) succeeded\n", res.RunID, res.Event, res.Workflow)
	}
}

// parseOutputFile reads a $GITHUB_OUTPUT file as the runner does: NAME=value lines, and
// NAME<<DELIMITER, the value's lines, DELIMITER (github/docs "Workflow commands for GitHub
// Actions": Setting an output parameter, Multiline strings).
func parseOutputFile(text string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var value []string
			for sc.Scan() && sc.Text() != delim {
				value = append(value, sc.Text())
			}
			out[name] = strings.Join(value, "\n")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}
