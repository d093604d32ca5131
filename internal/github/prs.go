package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// The calls of pull-request clusters: the pull request and the workflow run a kubeconfig request
// names (read by the bot), the repository_dispatch that carries the request (sent by the
// pull request's job with its GITHUB_TOKEN), the check run that answers it, and the deployment
// that shows the cluster on the pull request's page.

// ErrNotGranted wraps a call the installation's token cannot make: the App's installation has not
// accepted a permission this version asks for (deployments, checks).
var ErrNotGranted = errors.New("the App's installation lacks this permission: accept the App's new permissions (Settings → GitHub Apps → pocbot → Review request) and run `bot doctor`")

// Optional permissions: asked for when the installation has them, and their calls skipped (with
// ErrNotGranted) when it has not, so that an installation made before they existed keeps working.
const (
	PermDeployments = "deployments"
	PermChecks      = "checks"
	PermActions     = "actions"
	// PermDispatch is actions: write, which a workflow_dispatch needs (actions: read is
	// PermActions).
	PermDispatch = "actions:write"
)

func (c *Client) granted(perm string) error {
	if slices.Contains(c.lacking, perm) {
		return fmt.Errorf("github: %s permission: %w", perm, ErrNotGranted)
	}
	return nil
}

// Lacking lists the optional permissions the installation did not grant (nil in token mode).
func (c *Client) Lacking() []string { return slices.Clone(c.lacking) }

// PullInfo is what the bot reads of a pull request.
type PullInfo struct {
	Number   int
	Open     bool
	HeadSHA  string
	HeadRepo string // "owner/name"; "" when the head repository was deleted
	FromFork bool
	Draft    bool
	Author   string
	Labels   []string
}

// PullRequest reads pull request number (operation pulls/get).
func (c *Client) PullRequest(ctx context.Context, number int) (PullInfo, error) {
	pr, resp, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return PullInfo{}, apiError(fmt.Sprintf("read pull request #%d", number), resp, err)
	}
	head := pr.GetHead().GetRepo().GetFullName()
	base := pr.GetBase().GetRepo().GetFullName()
	if base == "" {
		base = c.owner + "/" + c.repo
	}
	return PullInfo{Number: pr.GetNumber(), Open: pr.GetState() == "open", HeadSHA: pr.GetHead().GetSHA(), HeadRepo: head,
		FromFork: head == "" || !strings.EqualFold(head, base), Draft: pr.GetDraft(), Author: pr.GetUser().GetLogin(), Labels: labelNames(pr.Labels)}, nil
}

// RunInfo is what the bot reads of a workflow run (operation actions/get-workflow-run).
type RunInfo struct {
	ID              int64
	Event           string // pull_request, pull_request_target, push, …
	Status          string // queued, in_progress, completed, …
	HeadSHA         string
	HeadRepo        string
	Attempt         int
	Actor           string
	TriggeringActor string
	Workflow        string
	URL             string
}

// WorkflowRun reads run id of the repository.
func (c *Client) WorkflowRun(ctx context.Context, id int64) (RunInfo, error) {
	if err := c.granted(PermActions); err != nil {
		return RunInfo{}, err
	}
	r, resp, err := c.gh.Actions.GetWorkflowRunByID(ctx, c.owner, c.repo, id)
	if err != nil {
		return RunInfo{}, apiError(fmt.Sprintf("read workflow run %d", id), resp, err)
	}
	return RunInfo{ID: r.GetID(), Event: r.GetEvent(), Status: r.GetStatus(), HeadSHA: r.GetHeadSHA(),
		HeadRepo: r.GetHeadRepository().GetFullName(), Attempt: r.GetRunAttempt(), Actor: r.GetActor().GetLogin(),
		TriggeringActor: r.GetTriggeringActor().GetLogin(), Workflow: r.GetName(), URL: r.GetHTMLURL()}, nil
}

// DispatchWorkflow starts a run of the workflow file (its name under .github/workflows) on ref (a
// branch or a tag), with inputs (at most 25): operation actions/create-workflow-dispatch, which
// needs actions: write for an App. GitHub answers 422 when the workflow on ref has no
// workflow_dispatch trigger, 404 when it has no such workflow.
func (c *Client) DispatchWorkflow(ctx context.Context, workflow, ref string, inputs map[string]any) error {
	if err := c.granted(PermDispatch); err != nil {
		return err
	}
	_, resp, err := c.gh.Actions.CreateWorkflowDispatchEventByFileName(ctx, c.owner, c.repo, workflow,
		gh.CreateWorkflowDispatchEventRequest{Ref: ref, Inputs: inputs})
	if err != nil {
		e := apiError(fmt.Sprintf("dispatch workflow %s on %s", workflow, ref), resp, err)
		switch {
		case resp != nil && resp.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%w (the App needs actions: write: accept its new permissions, then `bot doctor`)", e)
		case resp != nil && resp.StatusCode == http.StatusUnprocessableEntity:
			return fmt.Errorf("%w (the workflow %s on %s lacks a workflow_dispatch trigger or this input: rerun `bot init` to update it)", e, workflow, ref)
		}
		return e
	}
	return nil
}

// Dispatch sends a repository_dispatch event (operation repos/create-dispatch-event: the token
// needs contents: write; GitHub runs the default branch's workflows that subscribe to eventType).
func (c *Client) Dispatch(ctx context.Context, eventType string, payload any) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("github: encode the %s payload: %w", eventType, err)
	}
	rm := json.RawMessage(raw)
	_, resp, err := c.gh.Repositories.Dispatch(ctx, c.owner, c.repo, gh.DispatchRequestOptions{EventType: eventType, ClientPayload: &rm})
	if err != nil {
		e := apiError("send the "+eventType+" repository_dispatch", resp, err)
		if resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
			return fmt.Errorf("%w (the job's token needs `permissions: contents: write` to send a repository_dispatch)", e)
		}
		return e
	}
	return nil
}

// CheckRun is a check run as the bot writes and reads it.
type CheckRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	ExternalID string
	Status     string // queued, in_progress, completed
	Conclusion string // success, failure, neutral, … when completed
	Title      string
	Summary    string
	Text       string
	DetailsURL string
	Updated    time.Time // started_at, or completed_at once completed
}

func checkOutput(cr CheckRun) *gh.CheckRunOutput {
	if cr.Title == "" && cr.Summary == "" {
		return nil
	}
	out := &gh.CheckRunOutput{Title: gh.String(cr.Title), Summary: gh.String(cr.Summary)}
	if cr.Text != "" {
		out.Text = gh.String(cr.Text)
	}
	return out
}

// CreateCheckRun creates a check run on cr.HeadSHA (operation checks/create; Apps only).
func (c *Client) CreateCheckRun(ctx context.Context, cr CheckRun) (int64, error) {
	if err := c.granted(PermChecks); err != nil {
		return 0, err
	}
	opts := gh.CreateCheckRunOptions{Name: cr.Name, HeadSHA: cr.HeadSHA, Status: gh.String(cr.Status), Output: checkOutput(cr)}
	if cr.ExternalID != "" {
		opts.ExternalID = gh.String(cr.ExternalID)
	}
	if cr.DetailsURL != "" {
		opts.DetailsURL = gh.String(cr.DetailsURL)
	}
	if cr.Status == "completed" {
		opts.Conclusion = gh.String(cr.Conclusion)
		opts.CompletedAt = &gh.Timestamp{Time: time.Now()}
	}
	run, resp, err := c.gh.Checks.CreateCheckRun(ctx, c.owner, c.repo, opts)
	if err != nil {
		return 0, apiError("create check run "+cr.Name, resp, err)
	}
	return run.GetID(), nil
}

// UpdateCheckRun rewrites check run id's status, conclusion and output (operation checks/update).
func (c *Client) UpdateCheckRun(ctx context.Context, id int64, cr CheckRun) error {
	if err := c.granted(PermChecks); err != nil {
		return err
	}
	opts := gh.UpdateCheckRunOptions{Name: cr.Name, Status: gh.String(cr.Status), Output: checkOutput(cr)}
	if cr.Status == "completed" {
		opts.Conclusion = gh.String(cr.Conclusion)
		opts.CompletedAt = &gh.Timestamp{Time: time.Now()}
	}
	if _, resp, err := c.gh.Checks.UpdateCheckRun(ctx, c.owner, c.repo, id, opts); err != nil {
		return apiError(fmt.Sprintf("update check run %d", id), resp, err)
	}
	return nil
}

// CheckRuns lists every check run named name on commit sha (operation checks/list-for-ref,
// filter=all: the latest of a name is not enough, a request's answer is found by its external id).
func (c *Client) CheckRuns(ctx context.Context, sha, name string) ([]CheckRun, error) {
	opts := &gh.ListCheckRunsOptions{CheckName: gh.String(name), Filter: gh.String("all"), ListOptions: gh.ListOptions{PerPage: 100}}
	var out []CheckRun
	for page := 0; page < 10; page++ {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, c.owner, c.repo, sha, opts)
		if err != nil {
			return nil, apiError("list the check runs "+name+" of "+sha, resp, err)
		}
		for _, r := range res.CheckRuns {
			cr := CheckRun{ID: r.GetID(), Name: r.GetName(), HeadSHA: r.GetHeadSHA(), ExternalID: r.GetExternalID(),
				Status: r.GetStatus(), Conclusion: r.GetConclusion(), DetailsURL: r.GetDetailsURL(), Updated: r.GetStartedAt().Time}
			if t := r.GetCompletedAt(); !t.IsZero() {
				cr.Updated = t.Time
			}
			if o := r.GetOutput(); o != nil {
				cr.Title, cr.Summary, cr.Text = o.GetTitle(), o.GetSummary(), o.GetText()
			}
			out = append(out, cr)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// Deployment is a GitHub deployment as the bot reads it, with its latest status.
type Deployment struct {
	ID          int64
	SHA         string
	Environment string
	Created     time.Time
	State       string // the latest status's state ("" without status)
	URL         string // the latest status's environment_url
}

// CreateDeployment records a deployment of sha to environment (operation repos/create-deployment):
// no auto-merge of the default branch into it and no commit-status check (required_contexts
// empty), a transient, non-production environment.
func (c *Client) CreateDeployment(ctx context.Context, sha, environment, description string) (int64, error) {
	if err := c.granted(PermDeployments); err != nil {
		return 0, err
	}
	d, resp, err := c.gh.Repositories.CreateDeployment(ctx, c.owner, c.repo, &gh.DeploymentRequest{
		Ref: gh.String(sha), Task: gh.String("deploy"), AutoMerge: gh.Bool(false), RequiredContexts: &[]string{},
		Environment: gh.String(environment), Description: gh.String(description),
		TransientEnvironment: gh.Bool(true), ProductionEnvironment: gh.Bool(false)})
	if err != nil {
		return 0, apiError("create a deployment of "+sha+" to "+environment, resp, err)
	}
	if resp.StatusCode == http.StatusAccepted || d.GetID() == 0 {
		return 0, fmt.Errorf("github: GitHub answered the deployment of %s with %d and no deployment (an auto-merge?)", sha, resp.StatusCode)
	}
	return d.GetID(), nil
}

// DeploymentStatus is one status to add to a deployment.
type DeploymentStatus struct {
	State          string // in_progress, success, failure, error, inactive, …
	Description    string // at most 140 characters (cut here)
	EnvironmentURL string
	LogURL         string
}

// MaxDeploymentDescription is GitHub's bound on a deployment status's description (OpenAPI
// repos/create-deployment-status: "The maximum description length is 140 characters").
const MaxDeploymentDescription = 140

// CreateDeploymentStatus adds a status to deployment id (operation repos/create-deployment-status).
func (c *Client) CreateDeploymentStatus(ctx context.Context, id int64, st DeploymentStatus) error {
	if err := c.granted(PermDeployments); err != nil {
		return err
	}
	desc := []rune(st.Description)
	if len(desc) > MaxDeploymentDescription {
		desc = append(desc[:MaxDeploymentDescription-1], '…')
	}
	req := &gh.DeploymentStatusRequest{State: gh.String(st.State), Description: gh.String(string(desc))}
	if st.EnvironmentURL != "" {
		req.EnvironmentURL = gh.String(st.EnvironmentURL)
	}
	if st.LogURL != "" {
		req.LogURL = gh.String(st.LogURL)
	}
	if _, resp, err := c.gh.Repositories.CreateDeploymentStatus(ctx, c.owner, c.repo, id, req); err != nil {
		return apiError(fmt.Sprintf("add a %s status to deployment %d", st.State, id), resp, err)
	}
	return nil
}

// Deployments lists the deployments to environment, each with its latest status
// (operations repos/list-deployments and repos/list-deployment-statuses).
func (c *Client) Deployments(ctx context.Context, environment string) ([]Deployment, error) {
	ds, resp, err := c.gh.Repositories.ListDeployments(ctx, c.owner, c.repo, &gh.DeploymentsListOptions{Environment: environment, ListOptions: gh.ListOptions{PerPage: 100}})
	if err != nil {
		return nil, apiError("list the deployments to "+environment, resp, err)
	}
	out := make([]Deployment, 0, len(ds))
	for _, d := range ds {
		dep := Deployment{ID: d.GetID(), SHA: d.GetSHA(), Environment: d.GetEnvironment(), Created: d.GetCreatedAt().Time}
		sts, resp, err := c.gh.Repositories.ListDeploymentStatuses(ctx, c.owner, c.repo, d.GetID(), &gh.ListOptions{PerPage: 100})
		if err != nil {
			return nil, apiError(fmt.Sprintf("list the statuses of deployment %d", d.GetID()), resp, err)
		}
		// The latest is the one of the highest id: the description does not say in which order
		// GitHub lists them.
		var latest *gh.DeploymentStatus
		for _, st := range sts {
			if latest == nil || st.GetID() > latest.GetID() {
				latest = st
			}
		}
		if latest != nil {
			dep.State, dep.URL = latest.GetState(), latest.GetEnvironmentURL()
		}
		out = append(out, dep)
	}
	return out, nil
}
