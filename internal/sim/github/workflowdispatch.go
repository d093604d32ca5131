package github

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v88/github"
	yamlv4 "go.yaml.in/yaml/v4"
)

// WorkflowDispatch is a recorded workflow_dispatch (POST …/actions/workflows/{file}/dispatches).
type WorkflowDispatch struct {
	Repo, Workflow, Ref string
	Inputs              map[string]any
	Sender              string
	RunID               int64
	At                  time.Time
}

// WorkflowDispatches returns the workflow_dispatch events sent so far, in order.
func (s *Server) WorkflowDispatches() []WorkflowDispatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.workflowDispatches)
}

// maxDispatchInputs bounds a workflow_dispatch's inputs: go-github v88 actions_workflows.go,
// CreateWorkflowDispatchEventRequest.Inputs ("The maximum number of properties is 25"; older
// descriptions said 10).
const maxDispatchInputs = 25

// workflowDispatch starts a run of a workflow file (named by its file name; a numeric id is not
// served) on ref: 204, or 200 with the run's details when return_run_details is true. Refused:
// no ref (422), a ref the repository does not have (422), no such workflow on ref (404), a
// workflow without a workflow_dispatch trigger (422), more than 25 inputs, an input the workflow
// does not declare, or a choice input's value outside its options (422).
func (s *Server) workflowDispatch(c *call, r *repo, workflow string) {
	var in gh.CreateWorkflowDispatchEventRequest
	if !c.decode(1<<20, &in) {
		return
	}
	if in.Ref == "" {
		c.validation("", "ref", "missing_field", "ref is required")
		return
	}
	files, ok := r.files[in.Ref]
	if !ok && in.Ref != r.defaultBranch {
		c.fail(http.StatusUnprocessableEntity, "No ref found for: "+in.Ref)
		return
	}
	text, ok := files[".github/workflows/"+workflow]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	if len(in.Inputs) > maxDispatchInputs {
		c.validation("", "inputs", "invalid", fmt.Sprintf("inputs has more than %d properties", maxDispatchInputs))
		return
	}
	declared, hasTrigger := dispatchInputs(text)
	if !hasTrigger {
		c.fail(http.StatusUnprocessableEntity, "Workflow does not have 'workflow_dispatch' trigger")
		return
	}
	if msg := checkInputs(in.Inputs, declared); msg != "" {
		c.fail(http.StatusUnprocessableEntity, msg)
		return
	}
	d := WorkflowDispatch{Repo: r.fullName(), Workflow: workflow, Ref: in.Ref, Inputs: in.Inputs, Sender: c.tok.login, RunID: s.id(), At: s.now()}
	s.workflowDispatches = append(s.workflowDispatches, d)
	if in.ReturnRunDetails == nil || !*in.ReturnRunDetails {
		c.json(http.StatusNoContent, nil)
		return
	}
	c.json(http.StatusOK, &gh.WorkflowDispatchRunDetails{WorkflowRunID: gh.Ptr(d.RunID),
		RunURL:  gh.Ptr("https://api.github.com/repos/" + r.fullName() + "/actions/runs/" + strconv.FormatInt(d.RunID, 10)),
		HTMLURL: gh.Ptr("https://github.com/" + r.fullName() + "/actions/runs/" + strconv.FormatInt(d.RunID, 10))})
}

// dispatchInput is one declared input of a workflow_dispatch trigger.
type dispatchInput struct {
	Type    string   `yaml:"type"`
	Options []string `yaml:"options"`
}

// dispatchInputs reads a workflow's workflow_dispatch trigger: its declared inputs, and whether
// it has the trigger at all (YAML 1.2: yaml.v2 reads the key `on` as the boolean true).
func dispatchInputs(text []byte) (map[string]dispatchInput, bool) {
	var wf struct {
		On yamlv4.Node `yaml:"on"`
	}
	if err := yamlv4.Unmarshal(text, &wf); err != nil {
		return nil, false
	}
	var events []string
	if wf.On.Decode(&events) == nil { // on: [a, b]
		return nil, slices.Contains(events, "workflow_dispatch")
	}
	var one string
	if wf.On.Decode(&one) == nil && one != "" { // on: workflow_dispatch
		return nil, one == "workflow_dispatch"
	}
	var on map[string]yamlv4.Node
	if wf.On.Decode(&on) != nil {
		return nil, false
	}
	node, ok := on["workflow_dispatch"]
	if !ok {
		return nil, false
	}
	var trig struct {
		Inputs map[string]dispatchInput `yaml:"inputs"`
	}
	_ = node.Decode(&trig) // `workflow_dispatch:` with no body has no inputs
	return trig.Inputs, true
}

// checkInputs says why inputs do not fit the declared ones ("" when they do): an undeclared input,
// or a choice outside its options. The wording is the stand-in's (not re-checked on GitHub).
func checkInputs(inputs map[string]any, declared map[string]dispatchInput) string {
	var unexpected []string
	for k, v := range inputs {
		d, ok := declared[k]
		if !ok {
			unexpected = append(unexpected, strconv.Quote(k))
			continue
		}
		if s, isText := v.(string); d.Type == "choice" && (!isText || !slices.Contains(d.Options, s)) {
			return fmt.Sprintf("Provided value '%v' for input '%s' not in the list of allowed values", v, k)
		}
		if s, isText := v.(string); isText && utf8.RuneCountInString(s) > 65535 {
			return "input " + k + " is too long"
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return "Unexpected inputs provided: [" + strings.Join(unexpected, ", ") + "]"
	}
	return ""
}
