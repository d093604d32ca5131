package doctor

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	gh "github.com/google/go-github/v88/github"
	"go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/deploy"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/version"
)

// The workflow on the default branch is what runs with the secrets, so doctor checks that it is
// the one init writes, byte for byte but for its pin, schedule and runner (repoinit.ParseWorkflow),
// and that no other workflow of the default branch runs in the secrets' environment: such a job
// reads every secret of pocbot's.

// usesRE is a pinned pocbot step: uses: OWNER/REPO@<40 hex> # vX.Y.Z
var usesRE = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)@(\S+)\s*(#\s*(\S+))?`)

var shaRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// workflows checks .github/workflows on branch: pocbot's workflow, its pin, the other workflows
// that use the environment. envOK says whether the secrets are the environment's.
func (g GitHub) workflows(ctx context.Context, c *gh.Client, owner, name, branch string, envOK bool) []Item {
	fc, _, resp, err := c.Repositories.GetContents(ctx, owner, name, repoinit.WorkflowPath, &gh.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return append(one("workflow", Fail, fmt.Sprintf("no %s on %s (issue_comment and schedule run only from the default branch)", repoinit.WorkflowPath, branch),
				fmt.Sprintf("merge the pull request `bot init --repo %s` opened (rerun init to open it)", g.Repo)),
				g.otherWorkflows(ctx, c, owner, name, branch)...)
		}
		return one("workflow", Fail, err.Error(), "use a repository admin's token")
	}
	text, err := fc.GetContent()
	if err != nil {
		return one("workflow", Fail, err.Error(), "")
	}
	items := g.workflowItem([]byte(text), branch, envOK)
	items = append(items, pin(text, branch)...)
	return append(items, g.otherWorkflows(ctx, c, owner, name, branch)...)
}

// workflowItem says whether the workflow is init's, and if not what differs.
func (g GitHub) workflowItem(text []byte, branch string, envOK bool) []Item {
	shape, ok := repoinit.ParseWorkflow(text)
	fix := fmt.Sprintf("find who changed it (git log -p %s), then rerun `bot init --repo %s`: it proposes its workflow again", repoinit.WorkflowPath, g.Repo)
	switch {
	case !ok:
		return one("workflow", Fail, fmt.Sprintf("%s on %s is not the workflow init writes: %s", repoinit.WorkflowPath, branch, strings.Join(differences(text, shape, g.Env, envOK), "; ")), fix)
	case shape.Environment != envOK:
		if envOK {
			return one("workflow", Fail, fmt.Sprintf("%s on %s runs outside the environment %s, which holds the secrets: it cannot read them", repoinit.WorkflowPath, branch, g.Env), fix)
		}
		return one("workflow", Fail, fmt.Sprintf("%s on %s names the environment %s, which holds no secrets (they are the repository's)", repoinit.WorkflowPath, branch, g.Env), fix)
	case shape.RunsOn != repoinit.DefaultRunsOn:
		return one("workflow", Warn, fmt.Sprintf("init's workflow, but it runs on %q (init writes %q): the job and its secrets go to that runner", shape.RunsOn, repoinit.DefaultRunsOn),
			"make sure that runner is yours (a self-hosted runner of this repository or organization), or rerun `bot init` to propose init's")
	}
	if action, _, _ := strings.Cut(shape.Ref, "@"); action != repoinit.ActionRepo {
		return one("workflow", Warn, fmt.Sprintf("init's workflow, but its Action is %s, not %s: that repository's code runs with the secrets", action, repoinit.ActionRepo),
			"make sure that repository is yours (a fork you build and release), or rerun `bot init` to propose pocbot's")
	}
	where := "the repository's secrets"
	if envOK {
		where = "the environment " + g.Env
	}
	return one("workflow", OK, fmt.Sprintf("init's workflow on %s: events %s, secrets from %s", branch, strings.Join(events(text), ", "), where), "")
}

// differences names how text departs from init's workflow: the pin, the environment, the events,
// then the first line that differs.
func differences(text []byte, shape repoinit.WorkflowShape, env string, envOK bool) []string {
	var out []string
	if m := usesRE.FindStringSubmatch(string(text)); m == nil || !strings.HasSuffix(m[1], "/pocbot") {
		out = append(out, "it does not use the pocbot Action")
	} else if !shaRE.MatchString(m[2]) {
		out = append(out, fmt.Sprintf("uses: %s@%s is not pinned by commit SHA", m[1], m[2]))
	}
	if jobs := jobEnvironments(text); envOK && !slices.ContainsFunc(jobs, func(e string) bool { return strings.EqualFold(e, env) }) {
		out = append(out, "no job runs in the environment "+env)
	}
	want, got := events([]byte(deploy.Workflow)), events(text)
	if !slices.Equal(want, got) {
		out = append(out, fmt.Sprintf("its events are %s, init's %s", strings.Join(got, ", "), strings.Join(want, ", ")))
	}
	shape.Environment, shape.Secrets = envOK, true
	if shape.RunsOn == "" {
		shape.RunsOn = repoinit.DefaultRunsOn
	}
	if line, have, wants := firstDifference(text, repoinit.WorkflowFile(shape.Ref, shape.Environment, shape.Cron)); line > 0 {
		out = append(out, fmt.Sprintf("line %d is %q, init writes %q", line, have, wants))
	}
	return out
}

// firstDifference is the first line (1-based) where a and b differ, and its text in each; 0 when
// they are equal.
func firstDifference(a, b []byte) (line int, inA, inB string) {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = string(la[i])
		}
		if i < len(lb) {
			y = string(lb[i])
		}
		if x != y {
			return i + 1, x, y
		}
	}
	return 0, "", ""
}

// workflowFile is what doctor reads of a workflow: its events and its jobs' environments.
type workflowFile struct {
	On   yaml.Node `yaml:"on"`
	Jobs map[string]struct {
		Environment yaml.Node `yaml:"environment"`
	} `yaml:"jobs"`
}

func parseWorkflow(text []byte) (workflowFile, error) {
	var w workflowFile
	err := yaml.Unmarshal(text, &w)
	return w, err
}

// events are the names of a workflow's triggers, sorted.
func events(text []byte) []string {
	w, err := parseWorkflow(text)
	if err != nil {
		return []string{"(unreadable YAML)"}
	}
	var out []string
	switch w.On.Kind {
	case yaml.ScalarNode:
		out = append(out, w.On.Value)
	case yaml.SequenceNode:
		for _, n := range w.On.Content {
			out = append(out, n.Value)
		}
	case yaml.MappingNode:
		for i := 0; i < len(w.On.Content); i += 2 {
			out = append(out, w.On.Content[i].Value)
		}
	}
	sort.Strings(out)
	return out
}

// jobEnvironments lists the environment each job names ("job: env"), sorted; an expression is
// named as written.
func jobEnvironments(text []byte) []string {
	w, err := parseWorkflow(text)
	if err != nil {
		return nil
	}
	var out []string
	for _, j := range w.Jobs {
		e := j.Environment
		if e.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(e.Content); i += 2 {
				if e.Content[i].Value == "name" {
					e = *e.Content[i+1]
				}
			}
		}
		if e.Kind == yaml.ScalarNode && e.Value != "" {
			out = append(out, e.Value)
		}
	}
	sort.Strings(out)
	return out
}

// pin checks the pocbot step's pin: a commit SHA, with the version as a comment, this bot's.
func pin(text, branch string) []Item {
	for _, m := range usesRE.FindAllStringSubmatch(text, -1) {
		if !strings.HasSuffix(m[1], "/pocbot") {
			continue
		}
		if !shaRE.MatchString(m[2]) {
			return one("workflow pin", Fail, fmt.Sprintf("uses: %s@%s is not pinned by commit SHA", m[1], m[2]),
				"pin the commit SHA of a release tag, with the tag as a comment (uses: pocbot/pocbot@<sha> # vX.Y.Z): the SHA pins the binary's bytes")
		}
		v := m[4]
		if v == "" {
			return one("workflow pin", Warn, fmt.Sprintf("uses: %s@%s has no version comment", m[1], m[2][:12]), "add # vX.Y.Z after the SHA so Dependabot can bump it")
		}
		if cur := version.String(); strings.HasPrefix(cur, "v") && cur != v {
			return one("workflow pin", Warn, fmt.Sprintf("pinned to %s (%s), this bot is %s", v, m[2][:12], cur), "upgrade: accept Dependabot's bump of the SHA, or pin the SHA of "+cur+"'s tag")
		}
		return one("workflow pin", OK, fmt.Sprintf("%s@%s # %s on %s", m[1], m[2][:12], v, branch), "")
	}
	return one("workflow pin", Fail, fmt.Sprintf("%s on %s does not use the pocbot Action", repoinit.WorkflowPath, branch), "rerun `bot init` to propose the workflow")
}

// otherWorkflows names the other workflows of branch with a job in the environment g.Env (or in
// one an expression chooses): they read every secret of pocbot's.
func (g GitHub) otherWorkflows(ctx context.Context, c *gh.Client, owner, name, branch string) []Item {
	const dir = ".github/workflows"
	item := "environment " + g.Env
	_, list, resp, err := c.Repositories.GetContents(ctx, owner, name, dir, &gh.RepositoryContentGetOptions{Ref: branch})
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return one(item, Fail, fmt.Sprintf("list %s on %s: %v", dir, branch, err), "use a repository admin's token")
	}
	var uses []string
	for _, e := range list {
		p := e.GetPath()
		if e.GetType() != "file" || p == repoinit.WorkflowPath || !strings.HasSuffix(p, ".yml") && !strings.HasSuffix(p, ".yaml") {
			continue
		}
		fc, _, _, err := c.Repositories.GetContents(ctx, owner, name, p, &gh.RepositoryContentGetOptions{Ref: branch})
		if err != nil || fc == nil {
			uses = append(uses, p+" (unreadable: "+fmt.Sprint(err)+")")
			continue
		}
		text, err := fc.GetContent()
		if err != nil {
			uses = append(uses, p+" (unreadable)")
			continue
		}
		for _, e := range jobEnvironments([]byte(text)) {
			if strings.EqualFold(e, g.Env) || strings.Contains(e, "${{") {
				uses = append(uses, fmt.Sprintf("%s (environment: %s)", p, e))
				break
			}
		}
	}
	if len(uses) > 0 {
		return one(item, Fail, fmt.Sprintf("other workflows on %s run in it and read pocbot's secrets: %s", branch, strings.Join(uses, ", ")),
			fmt.Sprintf("remove them, or find who added them (git log -p FILE): the environment %s is for pocbot's workflow only", g.Env))
	}
	return one(item, OK, fmt.Sprintf("no other workflow on %s runs in it", branch), "")
}
