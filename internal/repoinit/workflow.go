package repoinit

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/pocbot/pocbot/deploy"
)

// ActionRepo is the repository of pocbot's Action, which init pins by default.
const ActionRepo = "pocbot/pocbot"

// cronRE is the schedule line of the workflow template.
var cronRE = regexp.MustCompile(`(?m)^(\s+- cron: )"([^"]*)"`)

// templateLine is the line of deploy.Workflow that holds marker, and its text before marker.
func templateLine(marker string) (prefix string) { return templateLineOf(deploy.Workflow, marker) }

// templateLineOf is the line of template that holds marker, and its text before marker.
func templateLineOf(template, marker string) (prefix string) {
	i := strings.Index(template, marker)
	start := strings.LastIndex(template[:i], "\n") + 1
	return template[start:i]
}

var (
	usesPrefix   = templateLine(deploy.PlaceholderRef)
	runsOnPrefix = templateLine("runs-on: ") + "runs-on: "
	runsOnLine   = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(runsOnPrefix) + `(.*)$`)
	usesLine     = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(usesPrefix) + `(.*)$`)
	// DefaultRunsOn is the template's runner.
	DefaultRunsOn = runsOnLine.FindStringSubmatch(deploy.Workflow)[1]
)

// WorkflowShape is what a workflow of init's (or of docs/install.md's template) is made with.
type WorkflowShape struct {
	Ref         string // the pinned Action: OWNER/REPO@<sha> # vX.Y.Z
	Cron        string // the schedule
	Environment bool   // the job runs in the poc environment
	// Secrets: every value is read from secrets (init's); false: some from vars. (the template
	// docs/install.md copies).
	Secrets bool
	RunsOn  string // the job's runner (DefaultRunsOn unless changed)
}

// render is the workflow of shape: deploy.Workflow with its pin, schedule, runner, values and
// environment set.
func (s WorkflowShape) render() []byte {
	w := strings.Replace(deploy.Workflow, deploy.PlaceholderRef, s.Ref, 1)
	if s.Cron != "" {
		w = cronRE.ReplaceAllString(w, "${1}\""+s.Cron+"\"")
	}
	if s.RunsOn != "" {
		w = runsOnLine.ReplaceAllLiteralString(w, runsOnPrefix+s.RunsOn)
	}
	if s.Secrets {
		w = strings.ReplaceAll(w, "${{ vars.", "${{ secrets.")
	}
	if !s.Environment {
		w = strings.Replace(w, "    environment: "+deployEnvironment+"\n", "", 1)
	}
	return []byte(w)
}

// deployEnvironment is the environment the template's job names.
const deployEnvironment = "poc"

// WorkflowFile is the workflow init proposes: deploy/workflow/poc.yml pinned to actionRef, reading
// every value from secrets (init writes them all as secrets), and without the environment when
// the secrets are the repository's; cron "" keeps the template's schedule.
func WorkflowFile(actionRef string, environment bool, cron string) []byte {
	return WorkflowShape{Ref: actionRef, Cron: cron, Environment: environment, Secrets: true}.render()
}

// ParseWorkflow tells whether b is, byte for byte, a workflow init writes or the template
// docs/install.md copies, whatever its pin, schedule, runner and environment line: ok then, with
// the shape it was made with. Anything else (a step more, another event, another action) is not.
// The pin is returned as found: ok says nothing of whether it is a commit SHA.
func ParseWorkflow(b []byte) (shape WorkflowShape, ok bool) {
	if m := usesLine.FindSubmatch(b); m != nil {
		shape.Ref = string(m[1])
	}
	if m := cronRE.FindSubmatch(b); m != nil {
		shape.Cron = string(m[2])
	}
	if m := runsOnLine.FindSubmatch(b); m != nil {
		shape.RunsOn = string(m[1])
	}
	if shape.Ref == "" || shape.RunsOn == "" {
		return shape, false
	}
	for _, env := range []bool{true, false} {
		for _, secrets := range []bool{true, false} {
			s := shape
			s.Environment, s.Secrets = env, secrets
			if bytes.Equal(s.render(), b) {
				return s, true
			}
		}
	}
	return shape, false
}

// PRWorkflowFile is the pull requests' end-to-end workflow init proposes with --pr-workflow:
// deploy/workflow/poc-pr.yml pinned to actionRef.
func PRWorkflowFile(actionRef string) []byte {
	return []byte(strings.Replace(deploy.PRWorkflow, deploy.PlaceholderRef, actionRef, 1))
}

// prUsesLine is the pin's line of the end-to-end workflow.
var prUsesLine = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(templateLineOf(deploy.PRWorkflow, deploy.PlaceholderRef)) + `(.*)$`)

// ParsePRWorkflow tells whether b is, byte for byte, the end-to-end workflow init writes, whatever
// its pin; ref is the pin found.
func ParsePRWorkflow(b []byte) (ref string, ok bool) {
	m := prUsesLine.FindSubmatch(b)
	if m == nil {
		return "", false
	}
	return string(m[1]), bytes.Equal(PRWorkflowFile(string(m[1])), b)
}
