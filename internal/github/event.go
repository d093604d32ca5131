package github

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// Kind is the normalized kind of a triggering event.
type Kind string

// The kinds pocbot handles.
const (
	KindComment     Kind = "comment"      // issue_comment: a comment on an issue or a pull request
	KindPullRequest Kind = "pull_request" // pull_request or pull_request_target
	KindSchedule    Kind = "schedule"     // the reaper's cron
	KindDispatch    Kind = "dispatch"     // workflow_dispatch: an operator's run
	// KindRequest is a repository_dispatch of one of RequestTypes: a pull request's workflow
	// asking the bot for something (its kubeconfig), the payload in Event.Payload.
	KindRequest Kind = "request"
)

// KubeconfigRequest is the repository_dispatch event type of a pull request's job asking for its
// kubeconfig (internal/prkube).
const KubeconfigRequest = "pocbot-kubeconfig"

// RequestTypes are the repository_dispatch event types the bot answers (its workflow subscribes
// to them: GitHub starts no run for another type).
var RequestTypes = []string{KubeconfigRequest}

// CommentActions are the issue_comment actions that can carry a command: only a new comment is
// one (an edit or a deletion is ignored, so that editing a comment does not run it again).
var CommentActions = []string{"created"}

// PRInfo is what a pull_request event says about the pull request.
type PRInfo struct {
	Draft    bool
	Merged   bool
	FromFork bool   // head repository differs from the base (or was deleted): never auto-provision
	HeadSHA  string //
	HeadRepo string // "owner/name" of the head, "" when the fork was deleted
}

// Event is a GitHub Actions trigger, normalized. Fields that the event does not carry are zero.
type Event struct {
	Name        string // raw GITHUB_EVENT_NAME
	Kind        Kind
	Action      string // created, labeled, closed, …
	Owner, Repo string
	RepoID      int64
	Number      int  // issue or PR number
	IsPR        bool // the issue is a pull request
	CommentID   int64
	Body        string // the comment's body
	// Created is when the comment was written (comment.created_at): how long GitHub took to
	// start the job is measured from it (register row job-start).
	Created        time.Time
	Sender         string // login of who caused the event
	SenderID       int64  // their immutable account id (sender.id): logins can be renamed and re-registered
	SenderIsBot    bool
	InstallationID int64
	Labels         []string // current labels of the issue / PR
	Label          string   // the label a labeled/unlabeled event is about
	PR             PRInfo
	IssueState     string            // open or closed
	Inputs         map[string]string // workflow_dispatch inputs
	Schedule       string            // the cron line of a schedule event
	Payload        []byte            // a repository_dispatch's client_payload (raw JSON)
	// Ignore says why the bot must not act on this event ("" means act): edited or deleted
	// comments, bots' own comments (so a reply quoting "/poc up" triggers nothing), events the
	// bot does not handle.
	Ignore string
}

// FullName is "owner/repo".
func (e Event) FullName() string { return e.Owner + "/" + e.Repo }

// FromApp reports whether the sender is the App with this slug (its login is slug+"[bot]").
func (e Event) FromApp(slug string) bool {
	return slug != "" && strings.EqualFold(e.Sender, slug+"[bot]")
}

// isBot follows GitHub: a sender of type "Bot", or a login with the "[bot]" suffix that only
// Apps can have.
func isBot(u *gh.User) bool {
	return u != nil && (u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]"))
}

// DecodeEvent normalizes an event payload (the file at GITHUB_EVENT_PATH) given its name.
// Unsupported events decode to an Event with Ignore set, not an error; a malformed payload is an
// error.
func DecodeEvent(name string, payload []byte) (Event, error) {
	e := Event{Name: name}
	switch name {
	case "issue_comment":
		return decodeComment(e, name, payload)
	case "pull_request", "pull_request_target":
		return decodePullRequest(e, name, payload)
	case "workflow_dispatch":
		return decodeDispatch(e, name, payload)
	case "repository_dispatch":
		return decodeRequest(e, name, payload)
	case "schedule":
		return decodeSchedule(e, name, payload)
	}
	e.Ignore = "event " + name + " is not handled by pocbot"
	return e, nil
}

// decodeComment decodes an issue_comment: a command, unless edited, deleted or written by a bot.
func decodeComment(e Event, name string, payload []byte) (Event, error) {
	var p gh.IssueCommentEvent
	if err := unmarshal(name, payload, &p); err != nil {
		return Event{}, err
	}
	e.Kind, e.Action = KindComment, p.GetAction()
	e.fillCommon(p.Repo, p.Sender, p.Installation)
	is := p.GetIssue()
	if is == nil || is.Number == nil || p.Comment == nil {
		return Event{}, fmt.Errorf("github: issue_comment payload lacks issue.number or comment: not an issue_comment event")
	}
	if is.GetNumber() <= 0 {
		return Event{}, fmt.Errorf("github: issue_comment payload has issue number %d: not an issue_comment event", is.GetNumber())
	}
	e.Number, e.IsPR, e.IssueState = is.GetNumber(), is.IsPullRequest(), is.GetState()
	e.Labels = labelNames(is.Labels)
	e.CommentID, e.Body, e.Created = p.Comment.GetID(), p.Comment.GetBody(), p.Comment.GetCreatedAt().Time
	switch {
	case !slices.Contains(CommentActions, e.Action):
		e.Ignore = "comment " + e.Action + ": only new comments are commands"
	case e.SenderIsBot || isBot(p.Comment.GetUser()):
		e.SenderIsBot = true
		e.Ignore = "comment by a bot (" + e.Sender + ")"
	}
	return e, nil
}

// decodePullRequest decodes a pull_request or pull_request_target: its head, its fork, its labels.
func decodePullRequest(e Event, name string, payload []byte) (Event, error) {
	var p gh.PullRequestEvent // pull_request_target has the same payload
	if err := unmarshal(name, payload, &p); err != nil {
		return Event{}, err
	}
	e.Kind, e.Action = KindPullRequest, p.GetAction()
	e.fillCommon(p.Repo, p.Sender, p.Installation)
	pr := p.GetPullRequest()
	if p.PullRequest == nil {
		return Event{}, fmt.Errorf("github: %s payload lacks pull_request", name)
	}
	e.Number = p.GetNumber()
	if e.Number == 0 {
		e.Number = pr.GetNumber()
	}
	if e.Number <= 0 {
		return Event{}, fmt.Errorf("github: %s payload has pull request number %d: not a pull_request event", name, e.Number)
	}
	e.IsPR, e.IssueState = true, pr.GetState()
	e.Labels = labelNames(pr.Labels)
	e.Label = p.GetLabel().GetName()
	e.PR = PRInfo{Draft: pr.GetDraft(), Merged: pr.GetMerged(), HeadSHA: pr.GetHead().GetSHA(),
		HeadRepo: pr.GetHead().GetRepo().GetFullName()}
	base := pr.GetBase().GetRepo().GetFullName()
	if base == "" {
		base = p.GetRepo().GetFullName()
	}
	e.PR.FromFork = e.PR.HeadRepo == "" || !strings.EqualFold(e.PR.HeadRepo, base)
	if e.SenderIsBot && e.Action != "closed" {
		// A bot's label or push (e.g. dependabot) must not spend money; a close still tears down.
		e.Ignore = "pull_request " + e.Action + " by a bot (" + e.Sender + ")"
	}
	return e, nil
}

// decodeDispatch decodes a workflow_dispatch: its inputs as text.
func decodeDispatch(e Event, name string, payload []byte) (Event, error) {
	var p gh.WorkflowDispatchEvent
	if err := unmarshal(name, payload, &p); err != nil {
		return Event{}, err
	}
	e.Kind = KindDispatch
	e.fillCommon(p.Repo, p.Sender, p.Installation)
	if len(p.Inputs) > 0 {
		var raw map[string]any
		if err := json.Unmarshal(p.Inputs, &raw); err != nil {
			return Event{}, fmt.Errorf("github: workflow_dispatch inputs are not an object: %w", err)
		}
		e.Inputs = map[string]string{}
		for k, v := range raw {
			if s, ok := v.(string); ok {
				e.Inputs[k] = s
			} else if v != nil {
				e.Inputs[k] = fmt.Sprint(v) // boolean and number inputs
			}
		}
	}
	return e, nil
}

// decodeRequest decodes a repository_dispatch: a pull request job's request, by its type.
func decodeRequest(e Event, name string, payload []byte) (Event, error) {
	var p gh.RepositoryDispatchEvent
	if err := unmarshal(name, payload, &p); err != nil {
		return Event{}, err
	}
	e.Kind, e.Action, e.Payload = KindRequest, p.GetAction(), p.ClientPayload
	e.fillCommon(p.Repo, p.Sender, p.Installation)
	if !slices.Contains(RequestTypes, e.Action) {
		e.Ignore = "repository_dispatch " + e.Action + " is not a pocbot request"
	}
	return e, nil
}

// decodeSchedule decodes a schedule (an empty payload is one too).
func decodeSchedule(e Event, name string, payload []byte) (Event, error) {
	var p struct {
		Schedule     string           `json:"schedule"`
		Repo         *gh.Repository   `json:"repository"`
		Sender       *gh.User         `json:"sender"`
		Installation *gh.Installation `json:"installation"`
	}
	if len(strings.TrimSpace(string(payload))) > 0 {
		if err := unmarshal(name, payload, &p); err != nil {
			return Event{}, err
		}
	}
	e.Kind, e.Schedule = KindSchedule, p.Schedule
	e.fillCommon(p.Repo, p.Sender, p.Installation)
	return e, nil
}

func unmarshal(name string, payload []byte, v any) error {
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("github: decode %s event payload: %w", name, err)
	}
	return nil
}

func (e *Event) fillCommon(repo *gh.Repository, sender *gh.User, inst *gh.Installation) {
	if repo != nil {
		e.RepoID = repo.GetID()
		e.Owner, e.Repo = repo.GetOwner().GetLogin(), repo.GetName()
		if full := repo.GetFullName(); full != "" {
			e.Owner, e.Repo, _ = strings.Cut(full, "/")
		}
	}
	e.Sender, e.SenderID, e.SenderIsBot = sender.GetLogin(), sender.GetID(), isBot(sender)
	e.InstallationID = inst.GetID()
}

func labelNames(ls []*gh.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

// maxEventBytes bounds the event file read; GitHub caps webhook payloads at 25 MB.
const maxEventBytes = 25 << 20

// ReadEvent reads and decodes the event of an Actions run. Owner and Repo fall back to
// GITHUB_REPOSITORY, since schedule payloads may not carry the repository.
func ReadEvent(env ActionsEnv) (Event, error) {
	if env.EventName == "" {
		return Event{}, fmt.Errorf("github: GITHUB_EVENT_NAME is not set: run inside GitHub Actions or pass the event name")
	}
	var data []byte
	if env.EventPath != "" {
		f, err := os.Open(env.EventPath)
		if err != nil {
			return Event{}, fmt.Errorf("github: open the event payload (GITHUB_EVENT_PATH): %w", err)
		}
		defer f.Close()
		data, err = io.ReadAll(io.LimitReader(f, maxEventBytes+1))
		if err != nil {
			return Event{}, fmt.Errorf("github: read the event payload %s: %w", env.EventPath, err)
		}
		if len(data) > maxEventBytes {
			return Event{}, fmt.Errorf("github: event payload %s is larger than 25 MB", env.EventPath)
		}
	} else if env.EventName != "schedule" && env.EventName != "workflow_dispatch" {
		return Event{}, fmt.Errorf("github: GITHUB_EVENT_PATH is not set for a %s event", env.EventName)
	}
	if len(data) == 0 {
		data = []byte("{}")
	}
	e, err := DecodeEvent(env.EventName, data)
	if err != nil {
		return Event{}, err
	}
	if e.Owner == "" {
		e.Owner, e.Repo = env.Owner, env.Repo
	}
	return e, nil
}
