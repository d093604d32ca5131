package github

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v88/github"
)

// Pull-request clusters (prs.go): workflow runs, repository_dispatch, check runs, deployments and
// the Actions OIDC issuer. The contract rows are in doc.go, "Pull-request clusters".

// Run seeds a workflow run (what the Actions stand-in starts).
type Run struct {
	Workflow        string // its name, e.g. "poc-pr"
	Path            string // .github/workflows/poc-pr.yml
	Event           string // pull_request, pull_request_target, repository_dispatch, …
	HeadSHA         string
	HeadBranch      string
	HeadRepo        string // owner/name of the code it runs ("" = the repository)
	Actor           string
	TriggeringActor string // "" = Actor
	PR              int    // the pull request it is of (pull_request events), 0 for none
}

type workflowRun struct {
	Run
	id, runNumber int64
	attempt       int
	status        string // queued, in_progress, completed
	conclusion    string
	created       time.Time
	updated       time.Time
}

// Dispatch is a recorded repository_dispatch.
type Dispatch struct {
	Repo      string
	EventType string
	Payload   json.RawMessage
	Sender    string
	At        time.Time
}

type checkRun struct {
	id          int64
	app         bool
	name        string
	headSHA     string
	externalID  string
	detailsURL  string
	status      string
	conclusion  string
	started     time.Time
	completed   time.Time
	title       string
	summary     string
	text        string
	hasOutput   bool
	createdByID int64 // the installation that made it
}

type deploymentRec struct {
	id          int64
	sha, ref    string
	task        string
	environment string
	description string
	transient   bool
	production  bool
	creator     string
	created     time.Time
	statuses    []deploymentStatusRec
}

type deploymentStatusRec struct {
	id          int64
	state       string
	description string
	envURL      string
	logURL      string
	environment string
	creator     string
	created     time.Time
}

// prState is one repository's workflow runs, dispatches, check runs and deployments.
type prState struct {
	runs        map[int64]*workflowRun
	checks      []*checkRun
	deployments []*deploymentRec
}

func (s *Server) prOf(r *repo) *prState {
	if r.pr == nil {
		r.pr = &prState{runs: map[int64]*workflowRun{}}
	}
	return r.pr
}

// AddRun records a workflow run of fullName, in progress, and returns its id.
func (s *Server) AddRun(fullName string, in Run) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	st := s.prOf(r)
	if in.TriggeringActor == "" {
		in.TriggeringActor = in.Actor
	}
	if in.HeadRepo == "" {
		in.HeadRepo = r.fullName()
	}
	s.userLocked(in.Actor)
	s.userLocked(in.TriggeringActor)
	now := s.now()
	wr := &workflowRun{Run: in, id: s.id(), runNumber: int64(len(st.runs) + 1), attempt: 1, status: "in_progress", created: now, updated: now}
	st.runs[wr.id] = wr
	return wr.id
}

// SetRunStatus ends (completed, with a conclusion) or restarts a run.
func (s *Server) SetRunStatus(fullName string, id int64, status, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wr := s.mustRun(fullName, id)
	wr.status, wr.conclusion, wr.updated = status, conclusion, s.now()
}

// RerunRun starts a new attempt of a run (GitHub's re-run: same id, run_attempt + 1).
func (s *Server) RerunRun(fullName string, id int64, by string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	wr := s.mustRun(fullName, id)
	wr.attempt++
	wr.status, wr.conclusion, wr.updated = "in_progress", "", s.now()
	if by != "" {
		wr.TriggeringActor = by
	}
	return wr.attempt
}

func (s *Server) mustRun(fullName string, id int64) *workflowRun {
	wr := s.prOf(s.mustRepo(fullName)).runs[id]
	if wr == nil {
		panic(fmt.Sprintf("sim/github: unknown run %d of %s", id, fullName))
	}
	return wr
}

// SetPRHead moves pull request number to a new head commit (a push to its branch).
func (s *Server) SetPRHead(fullName string, number int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, is := s.mustIssue(fullName, number)
	is.headSHA = sha
}

// PRHead is pull request number's head commit and head repository.
func (s *Server) PRHead(fullName string, number int) (sha, headRepo string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, is := s.mustIssue(fullName, number)
	headRepo = r.fullName()
	if is.fork {
		headRepo = "contributor/" + r.name
	}
	return is.headSHA, headRepo
}

// Dispatches returns the repository_dispatch events sent so far, in order.
func (s *Server) Dispatches() []Dispatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.dispatches)
}

// CheckRun is a recorded check run, as tests read it.
type CheckRun struct {
	ID                                 int64
	Repo, Name, HeadSHA, ExternalID    string
	Status, Conclusion, Title, Summary string
	Text                               string
	Completed                          time.Time
}

// CheckRuns returns every check run of fullName, oldest first.
func (s *Server) CheckRuns(fullName string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []CheckRun
	for _, c := range s.prOf(s.mustRepo(fullName)).checks {
		out = append(out, CheckRun{ID: c.id, Repo: fullName, Name: c.name, HeadSHA: c.headSHA, ExternalID: c.externalID, Status: c.status,
			Conclusion: c.conclusion, Title: c.title, Summary: c.summary, Text: c.text, Completed: c.completed})
	}
	return out
}

// DeploymentInfo is a recorded deployment with its statuses, oldest first.
type DeploymentInfo struct {
	ID                    int64
	SHA, Environment      string
	Transient, Production bool
	States, URLs, LogURLs []string
	Descriptions          []string
}

// Deployments returns fullName's deployments, oldest first.
func (s *Server) Deployments(fullName string) []DeploymentInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []DeploymentInfo
	for _, d := range s.prOf(s.mustRepo(fullName)).deployments {
		di := DeploymentInfo{ID: d.id, SHA: d.sha, Environment: d.environment, Transient: d.transient, Production: d.production}
		for _, st := range d.statuses {
			di.States, di.URLs = append(di.States, st.state), append(di.URLs, st.envURL)
			di.LogURLs, di.Descriptions = append(di.LogURLs, st.logURL), append(di.Descriptions, st.description)
		}
		out = append(out, di)
	}
	return out
}

// prRoute serves the repository paths of prs.go; false when the path is not one of them.
func (s *Server) prRoute(c *call, r *repo) bool {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	switch {
	case n == 4 && seg[3] == "dispatches" && m == http.MethodPost:
		if s.requireToken(c, r, "contents", "write") {
			s.dispatch(c, r)
		}
	case n == 7 && seg[3] == "actions" && seg[4] == "workflows" && seg[6] == "dispatches" && m == http.MethodPost:
		if s.requireToken(c, r, "actions", "write") {
			s.workflowDispatch(c, r, seg[5])
		}
	case n == 6 && seg[3] == "actions" && seg[4] == "runs" && m == http.MethodGet:
		if s.requireToken(c, r, "actions", "read") {
			s.getRun(c, r, seg[5])
		}
	case n == 4 && seg[3] == "check-runs" && m == http.MethodPost:
		if s.requireToken(c, r, "checks", "write") {
			s.createCheckRun(c, r)
		}
	case n == 5 && seg[3] == "check-runs" && m == http.MethodPatch:
		if s.requireToken(c, r, "checks", "write") {
			s.updateCheckRun(c, r, seg[4])
		}
	case n == 6 && seg[3] == "commits" && seg[5] == "check-runs" && m == http.MethodGet:
		if s.requireToken(c, r, "checks", "read") {
			s.listCheckRuns(c, r, seg[4])
		}
	case n == 4 && seg[3] == "deployments" && m == http.MethodPost:
		if s.requireToken(c, r, "deployments", "write") {
			s.createDeployment(c, r)
		}
	case n == 4 && seg[3] == "deployments" && m == http.MethodGet:
		if s.requireToken(c, r, "deployments", "read") {
			s.listDeployments(c, r)
		}
	case n == 6 && seg[3] == "deployments" && seg[5] == "statuses" && m == http.MethodPost:
		if s.requireToken(c, r, "deployments", "write") {
			s.createDeploymentStatus(c, r, seg[4])
		}
	case n == 6 && seg[3] == "deployments" && seg[5] == "statuses" && m == http.MethodGet:
		if s.requireToken(c, r, "deployments", "read") {
			s.listDeploymentStatuses(c, r, seg[4])
		}
	default:
		return false
	}
	return true
}

// dispatch records a repository_dispatch: event_type 1 to 100 characters, client_payload an
// object of at most 10 top-level properties and less than 64 KB.
func (s *Server) dispatch(c *call, r *repo) {
	var in struct {
		EventType     string          `json:"event_type"`
		ClientPayload json.RawMessage `json:"client_payload"`
	}
	if !c.decode(1<<20, &in) {
		return
	}
	switch n := utf8.RuneCountInString(in.EventType); {
	case n == 0:
		c.validation("", "event_type", "missing_field", "event_type is required")
		return
	case n > 100:
		c.validation("", "event_type", "invalid", "event_type must be 100 characters or fewer")
		return
	}
	if len(in.ClientPayload) > 0 && !bytes.Equal(bytes.TrimSpace(in.ClientPayload), []byte("null")) {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(in.ClientPayload, &obj); err != nil {
			c.validation("", "client_payload", "invalid", "client_payload must be an object")
			return
		}
		if len(obj) > 10 {
			c.validation("", "client_payload", "invalid", "client_payload has more than 10 top-level properties")
			return
		}
		if len(in.ClientPayload) >= 64<<10 {
			c.validation("", "client_payload", "invalid", "client_payload must be less than 64KB")
			return
		}
	}
	s.dispatches = append(s.dispatches, Dispatch{Repo: r.fullName(), EventType: in.EventType, Payload: in.ClientPayload,
		Sender: c.tok.login, At: s.now()})
	c.json(http.StatusNoContent, nil)
}

func (s *Server) getRun(c *call, r *repo, idText string) {
	id, _ := strconv.ParseInt(idText, 10, 64)
	wr := s.prOf(r).runs[id]
	if wr == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	c.json(http.StatusOK, s.runJSON(r, wr))
}

func (s *Server) runJSON(r *repo, wr *workflowRun) *gh.WorkflowRun {
	api := "https://api.github.com/repos/" + r.fullName()
	headRepo := s.repoJSON(r)
	if !strings.EqualFold(wr.HeadRepo, r.fullName()) {
		owner, name, _ := strings.Cut(wr.HeadRepo, "/")
		headRepo = &gh.Repository{Name: gh.String(name), FullName: gh.String(wr.HeadRepo), Owner: &gh.User{Login: gh.String(owner)}, Fork: gh.Bool(true)}
	}
	out := &gh.WorkflowRun{ID: gh.Int64(wr.id), Name: gh.String(wr.Workflow), NodeID: gh.String("WFR_" + strconv.FormatInt(wr.id, 10)),
		HeadBranch: gh.String(wr.HeadBranch), HeadSHA: gh.String(wr.HeadSHA), Path: gh.String(wr.Path), RunNumber: gh.Int(int(wr.runNumber)),
		RunAttempt: gh.Int(wr.attempt), Event: gh.String(wr.Event), DisplayTitle: gh.String(wr.Workflow), Status: gh.String(wr.status),
		WorkflowID: gh.Int64(1), CheckSuiteID: gh.Int64(wr.id + 1), URL: gh.String(api + "/actions/runs/" + strconv.FormatInt(wr.id, 10)),
		HTMLURL:   gh.String(fmt.Sprintf("https://github.com/%s/actions/runs/%d", r.fullName(), wr.id)),
		CreatedAt: &gh.Timestamp{Time: wr.created}, UpdatedAt: &gh.Timestamp{Time: wr.updated}, RunStartedAt: &gh.Timestamp{Time: wr.updated},
		JobsURL: gh.String(api + "/actions/runs/" + strconv.FormatInt(wr.id, 10) + "/jobs"), Repository: s.repoJSON(r), HeadRepository: headRepo,
		Actor: s.ghUser(wr.Actor), TriggeringActor: s.ghUser(wr.TriggeringActor), PullRequests: []*gh.PullRequest{}}
	if wr.conclusion != "" {
		out.Conclusion = gh.String(wr.conclusion)
	}
	if wr.PR > 0 && !strings.EqualFold(wr.HeadRepo, r.fullName()) {
		// GitHub lists a run's pull requests only when its head is in the repository.
	} else if wr.PR > 0 {
		out.PullRequests = append(out.PullRequests, &gh.PullRequest{Number: gh.Int(wr.PR),
			Head: &gh.PullRequestBranch{SHA: gh.String(wr.HeadSHA), Ref: gh.String(wr.HeadBranch)}})
	}
	return out
}

var checkStatuses = []string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}
var checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}

type checkInput struct {
	Name       *string `json:"name"`
	HeadSHA    *string `json:"head_sha"`
	DetailsURL *string `json:"details_url"`
	ExternalID *string `json:"external_id"`
	Status     *string `json:"status"`
	Conclusion *string `json:"conclusion"`
	Output     *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
}

// applyCheck validates in and applies it to cr; false after answering 422.
func (s *Server) applyCheck(c *call, cr *checkRun, in checkInput, create bool) bool {
	if in.Name != nil {
		cr.name = *in.Name
	}
	if in.DetailsURL != nil {
		cr.detailsURL = *in.DetailsURL
	}
	if in.ExternalID != nil {
		cr.externalID = *in.ExternalID
	}
	if in.Status != nil {
		if !slices.Contains(checkStatuses, *in.Status) {
			c.validation("CheckRun", "status", "invalid", "status is not one of "+strings.Join(checkStatuses, ", "))
			return false
		}
		if *in.Status == "waiting" || *in.Status == "requested" || *in.Status == "pending" {
			c.validation("CheckRun", "status", "invalid", "Only GitHub Actions can set a status of waiting, pending, or requested.")
			return false
		}
		cr.status = *in.Status
	}
	if in.Conclusion != nil {
		if !slices.Contains(checkConclusions, *in.Conclusion) || *in.Conclusion == "stale" {
			c.validation("CheckRun", "conclusion", "invalid", "conclusion is not one a check run can be given")
			return false
		}
		cr.conclusion, cr.status = *in.Conclusion, "completed" // "Providing conclusion will automatically set the status parameter to completed"
	}
	if cr.status == "completed" && cr.conclusion == "" {
		c.validation("CheckRun", "conclusion", "missing_field", "conclusion is required when status is completed")
		return false
	}
	if cr.status == "completed" && cr.completed.IsZero() {
		cr.completed = s.now()
	}
	if o := in.Output; o != nil {
		if (create && (o.Title == nil || *o.Title == "")) || o.Summary == nil {
			c.validation("CheckRun", "output", "missing_field", "output needs a title and a summary")
			return false
		}
		for field, v := range map[string]*string{"summary": o.Summary, "text": o.Text} {
			if v != nil && utf8.RuneCountInString(*v) > 65535 {
				c.validation("CheckRun", "output."+field, "invalid", "output."+field+" is longer than 65535 characters")
				return false
			}
		}
		if o.Title != nil {
			cr.title = *o.Title
		}
		cr.summary, cr.hasOutput = *o.Summary, true
		if o.Text != nil {
			cr.text = *o.Text
		}
	}
	return true
}

func (s *Server) createCheckRun(c *call, r *repo) {
	if c.tok.installationID == 0 {
		c.fail(http.StatusForbidden, "You must authenticate via a GitHub App.")
		return
	}
	var in checkInput
	if !c.decode(1<<20, &in) {
		return
	}
	if in.Name == nil || *in.Name == "" || in.HeadSHA == nil || !isHex40(*in.HeadSHA) {
		c.validation("CheckRun", "head_sha", "missing_field", "name and head_sha (a commit SHA) are required")
		return
	}
	cr := &checkRun{id: s.id(), app: true, headSHA: *in.HeadSHA, status: "queued", started: s.now(), createdByID: c.tok.installationID}
	if !s.applyCheck(c, cr, in, true) {
		return
	}
	st := s.prOf(r)
	st.checks = append(st.checks, cr)
	c.json(http.StatusCreated, s.checkJSON(r, cr))
}

func (s *Server) updateCheckRun(c *call, r *repo, idText string) {
	id, _ := strconv.ParseInt(idText, 10, 64)
	var cr *checkRun
	for _, x := range s.prOf(r).checks {
		if x.id == id {
			cr = x
		}
	}
	if cr == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	if c.tok.installationID == 0 || c.tok.installationID != cr.createdByID {
		c.fail(http.StatusForbidden, "Invalid app_id `0` - check run can only be modified by the GitHub App that created it.")
		return
	}
	var in checkInput
	if !c.decode(1<<20, &in) {
		return
	}
	next := *cr
	if !s.applyCheck(c, &next, in, false) {
		return
	}
	*cr = next
	c.json(http.StatusOK, s.checkJSON(r, cr))
}

// listCheckRuns answers GET …/commits/{ref}/check-runs: check_name and status filter, filter
// latest (the default: the newest run of each name) or all, per_page up to 100.
func (s *Server) listCheckRuns(c *call, r *repo, ref string) {
	q := c.r.URL.Query()
	filter := q.Get("filter")
	if filter == "" {
		filter = "latest"
	}
	if filter != "latest" && filter != "all" {
		c.validation("CheckRun", "filter", "invalid", "filter must be latest or all")
		return
	}
	var match []*checkRun
	for _, cr := range s.prOf(r).checks {
		if cr.headSHA != ref || (q.Get("check_name") != "" && cr.name != q.Get("check_name")) || (q.Get("status") != "" && cr.status != q.Get("status")) {
			continue
		}
		match = append(match, cr)
	}
	sort.Slice(match, func(i, j int) bool { return match[i].id > match[j].id })
	if filter == "latest" {
		seen := map[string]bool{}
		var latest []*checkRun
		for _, cr := range match {
			if !seen[cr.name] {
				seen[cr.name] = true
				latest = append(latest, cr)
			}
		}
		match = latest
	}
	lo, hi, ok := c.paginate(len(match))
	if !ok {
		return
	}
	runs := []*gh.CheckRun{}
	for _, cr := range match[lo:hi] {
		runs = append(runs, s.checkJSON(r, cr))
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(match), "check_runs": runs})
}

func (s *Server) checkJSON(r *repo, cr *checkRun) *gh.CheckRun {
	out := &gh.CheckRun{ID: gh.Int64(cr.id), NodeID: gh.String("CR_" + strconv.FormatInt(cr.id, 10)), HeadSHA: gh.String(cr.headSHA),
		ExternalID: gh.String(cr.externalID), URL: gh.String(fmt.Sprintf("https://api.github.com/repos/%s/check-runs/%d", r.fullName(), cr.id)),
		HTMLURL: gh.String(fmt.Sprintf("https://github.com/%s/runs/%d", r.fullName(), cr.id)), DetailsURL: gh.String(cr.detailsURL),
		Status: gh.String(cr.status), StartedAt: &gh.Timestamp{Time: cr.started}, Name: gh.String(cr.name),
		App:          &gh.App{ID: gh.Int64(s.appID), Slug: gh.String(s.appSlug), Name: gh.String(s.appSlug)},
		CheckSuite:   &gh.CheckSuite{ID: gh.Int64(cr.id + 1)},
		PullRequests: []*gh.PullRequest{},
		Output:       &gh.CheckRunOutput{Title: gh.String(cr.title), Summary: gh.String(cr.summary), Text: gh.String(cr.text), AnnotationsCount: gh.Int(0)}}
	if cr.conclusion != "" {
		out.Conclusion = gh.String(cr.conclusion)
	}
	if !cr.completed.IsZero() {
		out.CompletedAt = &gh.Timestamp{Time: cr.completed}
	}
	return out
}

func isHex40(s string) bool { return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == "" }

var deploymentStates = []string{"error", "failure", "inactive", "in_progress", "queued", "pending", "success"}

func (s *Server) createDeployment(c *call, r *repo) {
	var in struct {
		Ref              *string   `json:"ref"`
		Task             *string   `json:"task"`
		AutoMerge        *bool     `json:"auto_merge"`
		RequiredContexts *[]string `json:"required_contexts"`
		Environment      *string   `json:"environment"`
		Description      *string   `json:"description"`
		Transient        *bool     `json:"transient_environment"`
		Production       *bool     `json:"production_environment"`
	}
	if !c.decode(1<<20, &in) {
		return
	}
	if in.Ref == nil || *in.Ref == "" {
		c.validation("Deployment", "ref", "missing_field", "ref is required")
		return
	}
	// auto_merge (default true) merges the default branch into a ref behind it: a commit SHA
	// cannot take a merge, and this stand-in keeps no history to say a branch is behind.
	d := &deploymentRec{id: s.id(), sha: *in.Ref, ref: *in.Ref, task: "deploy", environment: "production", creator: c.tok.login, created: s.now()}
	if !isHex40(d.sha) {
		d.sha = randomHex(20) // a branch or tag: the stand-in does not resolve refs
	}
	if in.Task != nil {
		d.task = *in.Task
	}
	if in.Environment != nil && *in.Environment != "" {
		d.environment = *in.Environment
	}
	if in.Description != nil {
		d.description = *in.Description
	}
	d.transient = in.Transient != nil && *in.Transient
	d.production = d.environment == "production"
	if in.Production != nil {
		d.production = *in.Production
	}
	st := s.prOf(r)
	st.deployments = append(st.deployments, d)
	c.json(http.StatusCreated, s.deploymentJSON(r, d))
}

func (s *Server) deploymentJSON(r *repo, d *deploymentRec) *gh.Deployment {
	api := fmt.Sprintf("https://api.github.com/repos/%s/deployments/%d", r.fullName(), d.id)
	return &gh.Deployment{URL: gh.String(api), ID: gh.Int64(d.id), SHA: gh.String(d.sha), Ref: gh.String(d.ref), Task: gh.String(d.task),
		Payload: json.RawMessage(`{}`), Environment: gh.String(d.environment), Description: gh.String(d.description), Creator: s.ghUser(d.creator),
		CreatedAt: &gh.Timestamp{Time: d.created}, UpdatedAt: &gh.Timestamp{Time: d.created}, StatusesURL: gh.String(api + "/statuses"),
		RepositoryURL: gh.String("https://api.github.com/repos/" + r.fullName()), NodeID: gh.String("DE_" + strconv.FormatInt(d.id, 10))}
}

// listDeployments answers GET …/deployments filtered by sha, ref, task and environment, newest
// first, per_page up to 100.
func (s *Server) listDeployments(c *call, r *repo) {
	q := c.r.URL.Query()
	var match []*deploymentRec
	for _, d := range s.prOf(r).deployments {
		if (q.Get("sha") != "" && d.sha != q.Get("sha")) || (q.Get("ref") != "" && d.ref != q.Get("ref")) ||
			(q.Get("task") != "" && d.task != q.Get("task")) || (q.Get("environment") != "" && d.environment != q.Get("environment")) {
			continue
		}
		match = append(match, d)
	}
	sort.Slice(match, func(i, j int) bool { return match[i].id > match[j].id })
	lo, hi, ok := c.paginate(len(match))
	if !ok {
		return
	}
	out := []*gh.Deployment{}
	for _, d := range match[lo:hi] {
		out = append(out, s.deploymentJSON(r, d))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) deploymentByID(r *repo, idText string) *deploymentRec {
	id, _ := strconv.ParseInt(idText, 10, 64)
	for _, d := range s.prOf(r).deployments {
		if d.id == id {
			return d
		}
	}
	return nil
}

func (s *Server) createDeploymentStatus(c *call, r *repo, idText string) {
	d := s.deploymentByID(r, idText)
	if d == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	var in struct {
		State          string  `json:"state"`
		TargetURL      *string `json:"target_url"`
		LogURL         *string `json:"log_url"`
		Description    *string `json:"description"`
		Environment    *string `json:"environment"`
		EnvironmentURL *string `json:"environment_url"`
		AutoInactive   *bool   `json:"auto_inactive"`
	}
	if !c.decode(1<<20, &in) {
		return
	}
	if !slices.Contains(deploymentStates, in.State) {
		c.validation("DeploymentStatus", "state", "invalid", "state is not one of "+strings.Join(deploymentStates, ", "))
		return
	}
	st := deploymentStatusRec{id: s.id(), state: in.State, creator: c.tok.login, created: s.now(), environment: d.environment}
	if len(d.statuses) > 0 {
		st.environment = d.statuses[len(d.statuses)-1].environment
	}
	if in.Environment != nil && *in.Environment != "" {
		st.environment = *in.Environment
	}
	if in.Description != nil {
		if utf8.RuneCountInString(*in.Description) > 140 {
			c.validation("DeploymentStatus", "description", "invalid", "description is longer than 140 characters")
			return
		}
		st.description = *in.Description
	}
	if in.TargetURL != nil {
		st.logURL = *in.TargetURL
	}
	if in.LogURL != nil {
		st.logURL = *in.LogURL // "Setting log_url will automatically set target_url to the same value"
	}
	if in.EnvironmentURL != nil {
		st.envURL = *in.EnvironmentURL
	}
	d.statuses = append(d.statuses, st)
	// auto_inactive (default true): an inactive status on every prior non-transient,
	// non-production deployment of the environment whose state was success.
	if in.State == "success" && (in.AutoInactive == nil || *in.AutoInactive) {
		for _, o := range s.prOf(r).deployments {
			if o.id < d.id && o.environment == d.environment && !o.transient && !o.production && len(o.statuses) > 0 &&
				o.statuses[len(o.statuses)-1].state == "success" {
				o.statuses = append(o.statuses, deploymentStatusRec{id: s.id(), state: "inactive", creator: c.tok.login, created: s.now(), environment: o.environment})
			}
		}
	}
	c.json(http.StatusCreated, s.deploymentStatusJSON(r, d, st))
}

func (s *Server) deploymentStatusJSON(r *repo, d *deploymentRec, st deploymentStatusRec) *gh.DeploymentStatus {
	api := fmt.Sprintf("https://api.github.com/repos/%s/deployments/%d", r.fullName(), d.id)
	return &gh.DeploymentStatus{ID: gh.Int64(st.id), State: gh.String(st.state), Creator: s.ghUser(st.creator), Description: gh.String(st.description),
		Environment: gh.String(st.environment), NodeID: gh.String("DES_" + strconv.FormatInt(st.id, 10)),
		CreatedAt: &gh.Timestamp{Time: st.created}, UpdatedAt: &gh.Timestamp{Time: st.created}, TargetURL: gh.String(st.logURL),
		DeploymentURL: gh.String(api), RepositoryURL: gh.String("https://api.github.com/repos/" + r.fullName()),
		EnvironmentURL: gh.String(st.envURL), LogURL: gh.String(st.logURL), URL: gh.String(api + "/statuses/" + strconv.FormatInt(st.id, 10))}
}

// listDeploymentStatuses answers newest first, per_page up to 100.
func (s *Server) listDeploymentStatuses(c *call, r *repo, idText string) {
	d := s.deploymentByID(r, idText)
	if d == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	sts := slices.Clone(d.statuses)
	slices.Reverse(sts)
	lo, hi, ok := c.paginate(len(sts))
	if !ok {
		return
	}
	out := []*gh.DeploymentStatus{}
	for _, st := range sts[lo:hi] {
		out = append(out, s.deploymentStatusJSON(r, d, st))
	}
	c.json(http.StatusOK, out)
}

// The Actions OIDC issuer, at <stand-in URL>/_services/token (the form GitHub Enterprise Server
// uses, https://HOSTNAME/_services/token): its discovery document, its keys (JWKS), and the
// runner's token endpoint a job reaches through ACTIONS_ID_TOKEN_REQUEST_URL.

// oidcTTL is an Actions OIDC token's lifetime: the recorded example of github/actions-oidc-debugger's
// README (exp - iat = 21600 s, nbf = iat - 300 s).
const oidcTTL = 6 * time.Hour

type oidcIssuer struct {
	key *rsa.PrivateKey
	kid string
	// jobs maps a job's request token to the claims its OIDC tokens carry.
	jobs map[string]JobClaims
}

// JobClaims are what a job's OIDC tokens say of it.
type JobClaims struct {
	Repo       string // owner/name
	RunID      int64
	RunAttempt int
	EventName  string
	Ref        string // refs/pull/N/merge for pull_request
	SHA        string
	Actor      string
	Workflow   string
}

func (s *Server) issuer() (*oidcIssuer, error) {
	if s.oidc != nil {
		return s.oidc, nil
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(k.PublicKey.N.Bytes())
	s.oidc = &oidcIssuer{key: k, kid: hex.EncodeToString(sum[:8]), jobs: map[string]JobClaims{}}
	return s.oidc, nil
}

// JobIDToken gives a job the right to ask for OIDC tokens (its workflow grants id-token: write):
// the values of ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN, for base, the
// stand-in's URL.
func (s *Server) JobIDToken(base string, j JobClaims) (requestURL, requestToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	iss, err := s.issuer()
	if err != nil {
		panic(err)
	}
	requestToken = randomHex(24)
	iss.jobs[requestToken] = j
	return strings.TrimRight(base, "/") + "/_services/token/idtoken?api-version=2.0", requestToken
}

// OIDCIssuer is the stand-in's issuer URL for base.
func OIDCIssuer(base string) string { return strings.TrimRight(base, "/") + "/_services/token" }

// oidcRoute serves /_services/token/…; false when the path is not the issuer's.
func (s *Server) oidcRoute(c *call) bool {
	seg := c.seg
	if len(seg) < 3 || seg[0] != "_services" || seg[1] != "token" || c.r.Method != http.MethodGet {
		return false
	}
	iss, err := s.issuer()
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return true
	}
	base := "http://" + c.r.Host
	if c.r.TLS != nil {
		base = "https://" + c.r.Host
	}
	issuer := base + "/_services/token"
	switch path := strings.Join(seg[2:], "/"); path {
	case ".well-known/openid-configuration":
		c.json(http.StatusOK, map[string]any{"issuer": issuer, "jwks_uri": issuer + "/.well-known/jwks",
			"subject_types_supported": []string{"public", "pairwise"}, "response_types_supported": []string{"id_token"},
			"id_token_signing_alg_values_supported": []string{"RS256"}, "scopes_supported": []string{"openid"},
			"claims_supported": []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "repository_id", "repository_owner",
				"run_id", "run_number", "run_attempt", "actor", "actor_id", "workflow", "head_ref", "base_ref", "event_name", "ref_type", "job_workflow_ref", "runner_environment"}})
	case ".well-known/jwks":
		pub := iss.key.PublicKey
		c.json(http.StatusOK, map[string]any{"keys": []map[string]string{{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": iss.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes())}}})
	case "idtoken":
		s.idToken(c, iss, issuer)
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
	return true
}

// idToken answers a job's token request: Bearer <request token>, audience from the query
// (default: the repository owner's URL), {"value": JWT}.
func (s *Server) idToken(c *call, iss *oidcIssuer, issuer string) {
	scheme, cred, _ := strings.Cut(c.r.Header.Get("Authorization"), " ")
	j, ok := iss.jobs[strings.TrimSpace(cred)]
	if !strings.EqualFold(scheme, "bearer") || !ok {
		c.fail(http.StatusUnauthorized, "Unauthorized")
		return
	}
	r := s.repos[lower(j.Repo)]
	if r == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	aud := c.r.URL.Query().Get("audience")
	if aud == "" {
		aud = "https://github.com/" + r.owner
	}
	now := s.now()
	actor := s.userLocked(j.Actor)
	claims := map[string]any{
		"iss": issuer, "aud": aud, "sub": "repo:" + r.fullName() + ":" + j.EventName, "jti": randomHex(16),
		"iat": now.Unix(), "nbf": now.Add(-5 * time.Minute).Unix(), "exp": now.Add(oidcTTL).Unix(),
		"repository": r.fullName(), "repository_id": strconv.FormatInt(r.id, 10), "repository_owner": r.owner,
		"run_id": strconv.FormatInt(j.RunID, 10), "run_number": "1", "run_attempt": strconv.Itoa(j.RunAttempt),
		"event_name": j.EventName, "ref": j.Ref, "sha": j.SHA, "actor": actor.login, "actor_id": strconv.FormatInt(actor.id, 10),
		"workflow": j.Workflow, "runner_environment": "github-hosted", "ref_type": "branch",
	}
	tok, err := signRS256(iss, claims)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	c.json(http.StatusOK, map[string]string{"value": tok})
}

func signRS256(iss *oidcIssuer, claims map[string]any) (string, error) {
	enc := func(v any) (string, error) {
		b, err := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b), err
	}
	h, err := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": iss.kid})
	if err != nil {
		return "", err
	}
	p, err := enc(claims)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(h + "." + p))
	sig, err := rsa.SignPKCS1v15(rand.Reader, iss.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return h + "." + p + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// AddJobToken registers a job's GITHUB_TOKEN for fullName with the workflow's permissions (for a
// fork's pull request GitHub caps them at read, and never grants id-token); it acts as
// github-actions[bot].
func (s *Server) AddJobToken(value, fullName string, perms map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userLocked("github-actions[bot]")
	t := &token{value: value, login: u.login, typ: u.typ, repos: map[string]bool{lower(fullName): true}, perms: map[string]string{"metadata": "read"},
		expires: s.now().Add(24 * time.Hour)}
	for k, v := range perms {
		t.perms[k] = v
	}
	s.tokens[value] = t
}
