// Package chatops turns one GitHub event into the right replies: it decides whether the event is
// for the bot at all, acknowledges it at once (👀), parses the `/poc` command with the
// repository's bounds (`.github/poc.yml` from the default branch), authorizes the commenter
// through the collaborator-permission API, reads the cluster's status comment (its id and the
// state serial it recorded), and turns the command into a clusterops.Intent: one operation,
// clusterops.Ops.Run, reads, decides and acts, and the outcome, by what it did (a wake of a
// paused cluster is a resume), becomes the replies (operate.go: one answer per verb). Every rule
// of a cluster's life (budget, ownership, rollback, quota, phases, the pause window) is
// clusterops'; replies are rendered by internal/commands; GitHub is reached through
// internal/github, never from code that holds a lock (the status comment opens when clusterops'
// Observer hears the operation admitted, on the run's goroutine).
//
// Ordering is the contract: nothing slow (opening the state store, the Scaleway client, pricing)
// happens before the 👀 reaction, and nothing that can spend money (any Scaleway call) happens
// before the requester is authorized. A command posts at most two new comments: the sticky
// status comment (edited in place) and one short notification that @-mentions the requester.
package chatops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/prdeploy"
	"github.com/pocbot/pocbot/internal/prkube"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
)

// API is what the handler asks of GitHub; *github.Client implements it.
type API interface {
	github.CommentAPI
	Permission(ctx context.Context, login string) (string, error)
	React(ctx context.Context, commentID int64, content string) error
	ReactIssue(ctx context.Context, number int, content string) error
	RepoFile(ctx context.Context, path, ref string) ([]byte, error)
	UserSSHKeys(ctx context.Context, login string) ([]string, error)
	// SelfLogin is the login of the bot's own comments; UserLogin and UserID map an immutable
	// account id to its login now and back; LabelActor names who last added a label.
	SelfLogin(ctx context.Context) (string, error)
	UserLogin(ctx context.Context, id int64) (string, error)
	UserID(ctx context.Context, login string) (int64, error)
	LabelActor(ctx context.Context, number int, label string) (string, bool, error)
	IssueState(ctx context.Context, number int) (open, isPR, merged bool, labels []string, err error)
	// A pull request's job asking for its kubeconfig (request.go): the pull request and the
	// run it names, the check run that answers.
	PullRequest(ctx context.Context, number int) (github.PullInfo, error)
	WorkflowRun(ctx context.Context, id int64) (github.RunInfo, error)
	CreateCheckRun(ctx context.Context, cr github.CheckRun) (int64, error)
	UpdateCheckRun(ctx context.Context, id int64, cr github.CheckRun) error
}

// Backend is what runs operations: opened only once the command is parsed and authorized, so
// that a refused or malformed command costs no store access and no Scaleway call.
type Backend struct {
	// Ops decides and runs the operations; its Quoter prices them, its Pool (the state bucket's
	// parked workers) is counted by the budget, /poc cost and /poc status.
	Ops *clusterops.Ops
	// Spec is the spec of a new cluster before the comment's flags: the seed's defaults with the
	// image bucket.
	Spec  provision.Spec
	Close func()
}

// Reaper runs the scheduled teardown (internal/reaper) for a schedule or workflow_dispatch event
// and returns a one-line summary.
type Reaper func(ctx context.Context, ev github.Event) (string, error)

// Handler answers events for one repository.
type Handler struct {
	GitHub API
	Env    github.ActionsEnv
	// Actions receives groups, masks, step outputs and the job summary; nil outside Actions.
	Actions *github.Actions
	// Open opens the backend (state store, Scaleway, prices); called at most once per event.
	Open func(ctx context.Context) (*Backend, error)
	// Reap handles schedule / workflow_dispatch events; nil: not wired (logged, nothing done).
	Reap Reaper
	// Opportunistic, when set, runs a bounded reaper pass after a comment or pull-request event
	// was answered (schedules of idle repositories stop); its failure is logged, never the
	// event's.
	Opportunistic Reaper
	// ScheduleNotice, when set, is asked once the backend is open whether the reaper's schedule
	// has stopped; what it returns ("" when it runs) ends every reply of the event
	// (commands.WithNotice).
	ScheduleNotice func(ctx context.Context, b *Backend) string
	// AppSlug is the App's slug: its own comments (slug[bot]) are ignored even if GitHub were to
	// report them without the Bot type.
	AppSlug string
	Log     *slog.Logger
	Now     func() time.Time
	// Started is when the process started; the 👀 latency is measured from it.
	Started time.Time
	// StickyInterval throttles edits of the status comment (default 3 s).
	StickyInterval time.Duration
	// LinkTTL is the lifetime of the presigned kubeconfig link (default 1 h).
	LinkTTL time.Duration
	// Deployments records a pull request's cluster as a GitHub deployment (prdeploy); nil: not
	// recorded.
	Deployments *prdeploy.Recorder
	// Verifier checks the OIDC token of a pull request job's kubeconfig request; nil: every
	// request is dropped.
	Verifier TokenVerifier
	// RequestWait bounds how long a request waits for a cluster another run is making (default
	// 30 minutes); RequestPoll is how often it reads the state meanwhile (default 5 s).
	RequestWait, RequestPoll time.Duration
	// RequestBeat is how often a working answer is rewritten while the run makes or waits for the
	// cluster (default prkube.Heartbeat); tests shorten it.
	RequestBeat time.Duration
	// RefillWorkflow is the bot's workflow file (under .github/workflows): once a claim of a warm
	// spare is answered, a run of it on the default branch is dispatched with command
	// RefillCommand, which refills the pool now ("": the schedule refills it).
	RefillWorkflow string
}

// Outcome says what one event led to.
type Outcome struct {
	Ignored     string // why nothing was done ("" when something was)
	Verb        commands.Verb
	Cluster     string
	EyesAfter   time.Duration // from Started to the 👀 reaction being accepted
	OK          bool          // the command ran and succeeded
	Refused     string        // why the command was refused (permission, parse, budget, lock…)
	NewComments int
	Outputs     map[string]string // step outputs set
	// Refill says what became of the warm pool's refill after a claim ("dispatched", or why
	// not; "" when nothing was claimed).
	Refill string
}

// ErrCommandFailed wraps the error of a command that ran and failed (the reply was posted); the
// caller should exit non-zero so the run shows red.
var ErrCommandFailed = errors.New("command failed")

func (h *Handler) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.Default()
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

func (h *Handler) stickyInterval() time.Duration {
	return settings.DurationOr(h.StickyInterval, settings.DefaultStickyInterval)
}

func (h *Handler) linkTTL() time.Duration {
	return settings.DurationOr(h.LinkTTL, settings.DefaultLinkTTL)
}

func (h *Handler) requestWait() time.Duration {
	return settings.DurationOr(h.RequestWait, settings.DefaultRequestWait)
}

// requestBeat is how often a request's working answer is written again (prkube.Heartbeat).
func (h *Handler) requestBeat() time.Duration {
	return settings.DurationOr(h.RequestBeat, prkube.Heartbeat)
}

func (h *Handler) requestPoll() time.Duration {
	return settings.DurationOr(h.RequestPoll, settings.DefaultRequestPoll)
}

// serial orders the writers of the sticky comment: a later workflow run has a larger run id, so
// its bodies win over an older run that wakes up late. Outside Actions the start time stands in.
func (h *Handler) serial() int64 {
	if id, err := strconv.ParseInt(h.Env.RunID, 10, 64); err == nil && id > 0 {
		return id * 100
	}
	return h.Started.UnixMilli()
}

// Triage says why an event must be ignored without any API call ("" means handle it): events
// github.DecodeEvent already marked, the App's own comments, and comments without a `/poc` line.
func Triage(ev github.Event, appSlug string) string {
	if ev.Ignore != "" {
		return ev.Ignore
	}
	// The App's own events are not answered (a reply must not run again), but for the refill it
	// dispatches after a claim: a pool pass, which claims nothing and dispatches nothing.
	if ev.FromApp(appSlug) && (ev.Kind != github.KindDispatch || ev.Inputs["command"] != RefillCommand) {
		return "event caused by the App itself (" + ev.Sender + ")"
	}
	if ev.Kind == github.KindComment {
		// Finding the command line does not depend on the repository's bounds.
		if commands.Parse(ev.Body, commands.ParseConfig{}).Ignore {
			return "comment holds no /poc command"
		}
	}
	return ""
}

// run is the state of one event being handled.
type run struct {
	eta     string // an up's ETA, shown from its first status comment on
	h       *Handler
	ev      github.Event
	out     *Outcome
	cfg     repoconfig.RepoConfig
	pcfg    commands.ParseConfig
	backend *Backend
	cluster string
	// status is the cluster's status comment as found before the operation (zero: none yet), and
	// witness the state serial it recorded: the intent's data.
	status  github.Comment
	witness int64
	// perm is the sender's permission on the repository as GitHub answered it for this event
	// ("" until asked): what the sender may do, and whether a kubeconfig may be issued to them.
	perm string
	// note is a paragraph the status comment of this run's up adds (the next scheduled pause).
	note string
	// notice ends every reply once the backend is open: the reaper's schedule stopped.
	notice string
}

// Handle answers one event. A refused or malformed command is answered and is not an error; an
// operation that ran and failed returns an error wrapping ErrCommandFailed after replying.
func (h *Handler) Handle(ctx context.Context, ev github.Event) (out Outcome, err error) {
	if h.Started.IsZero() {
		h.Started = time.Now()
	}
	if why := Triage(ev, h.AppSlug); why != "" {
		h.log().Info("event ignored", "event", ev.Name, "action", ev.Action, "why", why)
		return Outcome{Ignored: why}, nil
	}
	r := &run{h: h, ev: ev, out: &Outcome{}}
	defer func() {
		if r.backend != nil && r.backend.Close != nil {
			r.backend.Close()
		}
	}()
	switch ev.Kind {
	case github.KindComment:
		err = r.comment(ctx)
	case github.KindPullRequest:
		err = r.pullRequest(ctx)
	case github.KindSchedule, github.KindDispatch:
		err = r.schedule(ctx)
	case github.KindRequest:
		err = r.request(ctx)
	default:
		r.out.Ignored = "event kind " + string(ev.Kind) + " is not handled"
	}
	r.recordJobStart(ctx)
	if h.Opportunistic != nil && (ev.Kind == github.KindComment || ev.Kind == github.KindPullRequest) {
		done := r.group("opportunistic reap")
		msg, rerr := h.Opportunistic(ctx, ev)
		done()
		if rerr != nil {
			h.log().Warn("opportunistic reap failed; the schedule retries", "err", commands.Redact(rerr.Error()))
		} else {
			h.log().Info("opportunistic reap", "summary", firstLine(msg))
		}
	}
	return *r.out, err
}

// recordJobStart keeps how long GitHub took to start this job after the comment (register row
// job-start, a first-contact observation `bot doctor --live` reports), once the reply is out and
// only when the run opened the state bucket anyway; a failure is only logged.
func (r *run) recordJobStart(ctx context.Context) {
	note, ok := firstcontact.JobStart(r.ev.Created, r.h.Started)
	if !ok {
		return
	}
	r.h.log().Info("job start", "after_comment", note.Sample.Round(time.Second).String(), "reading", note.Reading)
	if r.backend == nil || r.backend.Ops == nil || r.backend.Ops.FirstContact == nil {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.backend.Ops.FirstContact.Record(wctx, note); err != nil {
		r.h.log().Warn("could not record the job's start", "err", err)
	}
}

// acknowledge puts 👀 on the comment (or on the PR for events without one), first thing.
func (r *run) acknowledge(ctx context.Context) {
	var err error
	if r.ev.CommentID != 0 {
		err = r.h.GitHub.React(ctx, r.ev.CommentID, github.ReactionEyes)
	} else if r.ev.Number != 0 {
		err = r.h.GitHub.ReactIssue(ctx, r.ev.Number, github.ReactionEyes)
	}
	r.out.EyesAfter = time.Since(r.h.Started)
	if err != nil {
		// A reaction is courtesy: the command still runs.
		r.h.log().Warn("could not add the 👀 reaction", "err", err)
		return
	}
	r.h.log().Info("acknowledged", "eyes_after", r.out.EyesAfter.Round(time.Millisecond).String())
}

// react adds a reaction where the event happened; failures are logged only.
func (r *run) react(ctx context.Context, content string) {
	var err error
	if r.ev.CommentID != 0 {
		err = r.h.GitHub.React(ctx, r.ev.CommentID, content)
	} else if r.ev.Number != 0 {
		err = r.h.GitHub.ReactIssue(ctx, r.ev.Number, content)
	}
	if err != nil {
		r.h.log().Warn("could not add a reaction", "reaction", content, "err", err)
	}
}

// reply posts one new comment on the issue or PR, ending with the run's notice if any.
func (r *run) reply(ctx context.Context, body string) (github.Comment, error) {
	c, err := r.h.GitHub.CreateComment(ctx, r.ev.Number, commands.WithNotice(body, r.notice))
	if err != nil {
		return c, fmt.Errorf("reply on #%d: %w", r.ev.Number, err)
	}
	r.out.NewComments++
	return c, nil
}

// refuse answers a command that will not run: the reply, then 😕.
func (r *run) refuse(ctx context.Context, why, body string) error {
	r.out.Refused = why
	r.h.log().Info("command refused", "verb", r.out.Verb, "cluster", r.cluster, "why", why)
	_, err := r.reply(ctx, body)
	r.react(ctx, github.ReactionConfused)
	return err
}

// loadConfig reads `.github/poc.yml` from the default branch (never a PR head: a pull request
// must not raise its own budget). A missing file means the defaults.
func (r *run) loadConfig(ctx context.Context) error {
	data, err := r.h.GitHub.RepoFile(ctx, repoconfig.Path, "")
	switch {
	case errors.Is(err, github.ErrNotFound):
		r.cfg = repoconfig.Default()
	case err != nil:
		return fmt.Errorf("read %s from the default branch: %w", repoconfig.Path, err)
	default:
		cfg, perr := repoconfig.Parse(data)
		if perr != nil {
			return &configError{err: perr}
		}
		r.cfg = cfg
	}
	r.pcfg = commands.ParseConfig{DefaultTTL: r.cfg.DefaultTTL, MinTTL: r.cfg.MinTTL, MaxTTL: r.cfg.MaxTTL}
	return nil
}

// configError is an invalid `.github/poc.yml`: answered, not a crash.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

func configReply(err error) string {
	return fmt.Sprintf("😕 **Not run:** the repository configuration `%s` on the default branch is invalid:\n\n```text\n%s\n```\n\n"+
		"Nothing was created or changed. Fix the file on the default branch (`bot` documents every key in deploy/poc.example.yml), then comment again.\n",
		repoconfig.Path, commands.Redact(err.Error()))
}

// open opens the backend once.
func (r *run) open(ctx context.Context) (*Backend, error) {
	if r.backend != nil {
		return r.backend, nil
	}
	if r.h.Open == nil {
		return nil, errors.New("chatops: no backend configured (Handler.Open is nil)")
	}
	done := r.group("open the state store and Scaleway")
	defer done()
	b, err := r.h.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("open the backend (state store, Scaleway): %w", err)
	}
	r.backend = b
	if r.h.ScheduleNotice != nil {
		r.notice = r.h.ScheduleNotice(ctx, b)
	}
	return b, nil
}

func (r *run) group(name string) func() {
	if r.h.Actions == nil {
		return func() {}
	}
	return r.h.Actions.Group("pocbot: " + name)
}

func (r *run) setOutput(key, value string) {
	if r.out.Outputs == nil {
		r.out.Outputs = map[string]string{}
	}
	r.out.Outputs[key] = value
	if r.h.Actions != nil {
		if err := r.h.Actions.SetOutput(key, value); err != nil {
			r.h.log().Warn("could not set a step output", "key", key, "err", err)
		}
	}
}

func (r *run) summary(md string) {
	if r.h.Actions != nil {
		if err := r.h.Actions.AppendSummary(md); err != nil {
			r.h.log().Warn("could not write the job summary", "err", err)
		}
	}
}

func (r *run) mask(secret string) {
	if r.h.Actions != nil && secret != "" {
		r.h.Actions.Mask(secret)
	}
}

func (r *run) kind() string {
	if r.ev.IsPR {
		return "pull"
	}
	return "issue"
}

func (r *run) hasLabel(name string) bool {
	for _, l := range r.ev.Labels {
		if strings.EqualFold(l, name) {
			return true
		}
	}
	return false
}

// intent is what this event asks of its cluster for verb, within the repository's bounds, with
// what the run read before asking (the status comment's id and serial, the sender's permission).
func (r *run) intent(verb commands.Verb) clusterops.Intent {
	// The spec of a new cluster; an existing cluster keeps the spec in its state.
	spec := r.backend.Spec
	spec.ServiceAccountKey = r.cfg.ServiceAccountKey
	bounds := r.cfg
	return clusterops.Intent{Cluster: r.cluster, Spec: spec, Repository: r.ev.FullName(), Number: r.ev.Number,
		Kind: r.kind(), RequestedBy: r.ev.Sender, RequesterID: r.ev.SenderID, Permission: r.perm, RunID: r.h.Env.RunID,
		Command: "/poc " + string(verb), Bounds: &bounds, Witness: r.witness, StatusComment: r.status.ID, ShareParked: r.cfg.ShareParkedWorkers,
		Closed: r.ev.Kind == github.KindComment && r.ev.IssueState == "closed"}
}

// schedule hands schedule and workflow_dispatch events to the reaper.
func (r *run) schedule(ctx context.Context) error {
	r.out.Verb = "reap"
	if r.h.Reap == nil {
		r.out.Ignored = "the reaper is not wired in this build: schedule and workflow_dispatch events do nothing yet"
		r.h.log().Warn("schedule event: the reaper (internal/reaper) is not wired in this build; nothing was reaped", "event", r.ev.Name)
		return nil
	}
	done := r.group("reap")
	defer done()
	msg, err := r.h.Reap(ctx, r.ev)
	if err != nil {
		return fmt.Errorf("reap: %w", err)
	}
	r.out.OK = true
	r.h.log().Info("reaped", "summary", msg)
	r.summary("### pocbot reaper\n\n" + commands.Redact(msg) + "\n")
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
