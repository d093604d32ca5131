package github

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/internal/retry"
)

// MaxCommentChars is GitHub's limit on a comment body; longer bodies are refused here, before
// the API refuses them, so the caller can fold its logs.
const MaxCommentChars = 65536

// ErrNotFound is wrapped by errors about something GitHub does not have (or does not show).
var ErrNotFound = errors.New("not found")

// Client talks to one repository's issues, comments and files.
type Client struct {
	gh             *gh.Client
	owner, repo    string
	mode           Mode
	installationID int64
	tokens         *installationTokens
	log            *slog.Logger
	app            *gh.Client  // JWT-authenticated (App mode only)
	self           *selfCache  // the login the client's comments carry (identity.go)
	retry          RetryPolicy // the transport's, for the retries of a comment creation
	// lacking are the optional permissions (PermDeployments, PermChecks) the installation has
	// not granted: their calls answer ErrNotGranted without asking GitHub.
	lacking []string
}

// Owner and Repo name the repository the client is bound to.
func (c *Client) Owner() string { return c.owner }

// Repo is the repository's name.
func (c *Client) Repo() string { return c.repo }

// Mode tells App or lesser (token) mode.
func (c *Client) Mode() Mode { return c.mode }

// InstallationID is the App installation in use (0 in token mode).
func (c *Client) InstallationID() int64 { return c.installationID }

// Token returns the current installation token (refreshed when near expiry), so that the caller
// can mask it in the Actions log; "" in token mode.
func (c *Client) Token(ctx context.Context) (string, error) {
	if c.tokens == nil {
		return "", nil
	}
	return c.tokens.Token(ctx)
}

// APIError is a failed GitHub call: what was attempted, the HTTP status, GitHub's message.
type APIError struct {
	Op      string
	Status  int
	Message string
	Err     error
	// RateLimited: GitHub refused for a primary or secondary rate limit, not for permissions.
	RateLimited bool
	// RetryAfter is how long GitHub asked to wait before this request is sent again (its
	// retry-after), ResetAt until when (its x-ratelimit-reset, or a hold an earlier refusal set);
	// both zero when it named no time, and then GitHub's page says "wait for at least one minute".
	RetryAfter time.Duration
	ResetAt    time.Time
}

func (e *APIError) Error() string {
	msg := "github: " + e.Op
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	switch {
	case e.RateLimited:
		msg += " (GitHub's rate limit: the bot waited as long as it may; run the command again later)"
	case e.Status == http.StatusUnauthorized:
		msg += " (the credentials were refused: check POC_APP_ID / POC_APP_PRIVATE_KEY or GITHUB_TOKEN)"
	case e.Status == http.StatusForbidden:
		msg += " (not permitted: the App needs issues and pull requests write, contents and metadata read on this repository)"
	}
	if e.Status == 0 && e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *APIError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) true for 404s.
func (e *APIError) Is(target error) bool {
	return target == ErrNotFound && e.Status == http.StatusNotFound
}

func apiError(op string, resp *gh.Response, err error) error {
	e := &APIError{Op: op, Err: err}
	if resp != nil && resp.Response != nil {
		e.Status = resp.StatusCode
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		e.Message = er.Message
		for _, d := range er.Errors {
			if d.Message != "" {
				e.Message += "; " + d.Message
			}
		}
		if er.Response != nil && e.Status == 0 {
			e.Status = er.Response.StatusCode
		}
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		e.Message, e.RateLimited = "rate limit exhausted until "+rl.Rate.Reset.Format(time.RFC3339), true
		e.ResetAt = rl.Rate.Reset.Time
	}
	var arl *gh.AbuseRateLimitError
	if errors.As(err, &arl) {
		e.Message, e.RateLimited = "secondary rate limit", true
		if arl.RetryAfter != nil {
			e.RetryAfter = *arl.RetryAfter
			e.Message += fmt.Sprintf(": GitHub asks to wait %s", arl.RetryAfter.Round(time.Second))
		}
	}
	var gate *GateError
	if errors.As(err, &gate) {
		e.Message, e.RateLimited, e.ResetAt = "secondary rate limit: not sent", true, gate.Until
	}
	if e.Status == http.StatusTooManyRequests && !e.RateLimited {
		e.RateLimited = true // a 429 is a limit whatever its body says
		if resp != nil && resp.Response != nil {
			if secs, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && secs > 0 {
				e.RetryAfter = time.Duration(secs) * time.Second
			}
		}
	}
	return e
}

// Permission returns the login's role on the repository from the collaborator-permission API
// (never from author_association): admin, maintain, write, triage, read or none. A user GitHub
// does not know has "none".
func (c *Client) Permission(ctx context.Context, login string) (string, error) {
	p, resp, err := c.gh.Repositories.GetPermissionLevel(ctx, c.owner, c.repo, login)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return "none", nil
		}
		return "", apiError("get "+login+"'s permission on "+c.owner+"/"+c.repo, resp, err)
	}
	// role_name is exact (maintain, triage); the legacy "permission" folds them into write/read.
	switch r := p.GetRoleName(); r {
	case "admin", "maintain", "write", "triage", "read", "none":
		return r, nil
	}
	if v := p.GetPermission(); v != "" {
		return v, nil
	}
	return "none", nil
}

// Reaction contents GitHub accepts.
const (
	ReactionEyes     = "eyes"
	ReactionRocket   = "rocket"
	ReactionHooray   = "hooray"
	ReactionConfused = "confused"
	ReactionPlusOne  = "+1"
	ReactionMinusOne = "-1"
)

// React adds a reaction to an issue comment.
func (c *Client) React(ctx context.Context, commentID int64, content string) error {
	_, resp, err := c.gh.Reactions.CreateIssueCommentReaction(ctx, c.owner, c.repo, commentID, content)
	if err != nil {
		return apiError(fmt.Sprintf("react %s to comment %d", content, commentID), resp, err)
	}
	return nil
}

// ReactIssue adds a reaction to the issue or PR itself (events without a comment).
func (c *Client) ReactIssue(ctx context.Context, number int, content string) error {
	_, resp, err := c.gh.Reactions.CreateIssueReaction(ctx, c.owner, c.repo, number, content)
	if err != nil {
		return apiError(fmt.Sprintf("react %s to #%d", content, number), resp, err)
	}
	return nil
}

// Comment is an issue or PR comment.
type Comment struct {
	ID          int64
	Body        string
	URL         string // html link
	Author      string
	AuthorIsBot bool
	Created     time.Time
	Updated     time.Time
}

func toComment(ic *gh.IssueComment) Comment {
	return Comment{ID: ic.GetID(), Body: ic.GetBody(), URL: ic.GetHTMLURL(), Author: ic.GetUser().GetLogin(),
		AuthorIsBot: isBot(ic.GetUser()), Created: ic.GetCreatedAt().Time, Updated: ic.GetUpdatedAt().Time}
}

func checkBody(body string) error {
	if strings.TrimSpace(body) == "" {
		return errors.New("github: empty comment body")
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentChars {
		return fmt.Errorf("github: comment body has %d characters, over GitHub's %d: fold or trim the logs", n, MaxCommentChars)
	}
	return nil
}

// CreateComment posts a comment on issue or PR number.
//
// GitHub may answer a 5xx to a creation that took effect (its front end ends a request after 10
// s with "Server Error", docs /rest/using-the-rest-api/troubleshooting-the-rest-api, Timeouts),
// so a creation cannot simply be sent again: every comment carries a hidden random post marker,
// and after a 5xx the issue's comments are searched for it before the next try. A creation that
// got no answer at all is not tried again: it may still be under way (RetryPolicy.AttemptTimeout).
func (c *Client) CreateComment(ctx context.Context, number int, body string) (Comment, error) {
	marker, err := newPostMarker()
	if err != nil {
		return Comment{}, err
	}
	body += "\n" + marker
	if err := checkBody(body); err != nil {
		return Comment{}, err
	}
	var (
		created Comment
		failed  error // the last try's 5xx
		status  int
	)
	// Only a 5xx is tried again, after its back-off, once the issue's comments do not hold the
	// marker (an answer GitHub never sent is not: the creation may still be under way).
	err = c.retry.retryPolicy().Do(ctx, fmt.Sprintf("comment on #%d", number), func(ctx context.Context, attempt int) retry.Outcome {
		if failed != nil {
			cm, found, ferr := c.FindComment(ctx, number, marker)
			if ferr != nil {
				return retry.Outcome{Err: fmt.Errorf("%w; whether it was created anyway could not be read (%v): look for a duplicate before posting again", failed, ferr)}
			}
			if found {
				c.log.Info("github: a comment creation answered with a 5xx had taken effect", "issue", number, "status", status)
				created = cm
				return retry.Outcome{}
			}
		}
		ic, resp, err := c.gh.Issues.CreateComment(ctx, c.owner, c.repo, number, &gh.IssueComment{Body: gh.String(body)})
		if err != nil {
			failed, status = apiError(fmt.Sprintf("comment on #%d", number), resp, err), 0
			if resp != nil {
				status = resp.StatusCode
			}
			return retry.Outcome{Err: failed, Retry: status >= 500}
		}
		created = toComment(ic)
		return retry.Outcome{}
	})
	return created, err
}

// newPostMarker is the hidden line that identifies one comment creation.
func newPostMarker() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("github: draw a comment's post marker: %w", err)
	}
	return "<!-- pocbot:post=" + hex.EncodeToString(b[:]) + " -->", nil
}

// EditComment replaces a comment's body.
func (c *Client) EditComment(ctx context.Context, id int64, body string) (Comment, error) {
	if err := checkBody(body); err != nil {
		return Comment{}, err
	}
	ic, resp, err := c.gh.Issues.EditComment(ctx, c.owner, c.repo, id, &gh.IssueComment{Body: gh.String(body)})
	if err != nil {
		return Comment{}, apiError(fmt.Sprintf("edit comment %d", id), resp, err)
	}
	return toComment(ic), nil
}

// GetComment reads one comment.
func (c *Client) GetComment(ctx context.Context, id int64) (Comment, error) {
	ic, resp, err := c.gh.Issues.GetComment(ctx, c.owner, c.repo, id)
	if err != nil {
		return Comment{}, apiError(fmt.Sprintf("get comment %d", id), resp, err)
	}
	return toComment(ic), nil
}

// FindComment returns the newest comment on number that this client's identity wrote (SelfLogin:
// the App's bot login) and that contains marker (a hidden HTML comment). Only its own comments
// count, so that neither a person quoting the marker nor another bot (issue 11 hole 6) can
// capture the status comment. The list API is oldest-first, so it starts at the last page and
// walks back: the sticky comment is usually recent.
func (c *Client) FindComment(ctx context.Context, number int, marker string) (Comment, bool, error) {
	if marker == "" {
		return Comment{}, false, errors.New("github: FindComment needs a marker")
	}
	self, err := c.SelfLogin(ctx)
	if err != nil {
		return Comment{}, false, err
	}
	list := func(page int) ([]*gh.IssueComment, *gh.Response, error) {
		cs, resp, err := c.gh.Issues.ListComments(ctx, c.owner, c.repo, number,
			&gh.IssueListCommentsOptions{ListOptions: gh.ListOptions{PerPage: 100, Page: page}})
		if err != nil {
			return nil, resp, apiError(fmt.Sprintf("list comments of #%d (page %d)", number, page), resp, err)
		}
		return cs, resp, nil
	}
	match := func(cs []*gh.IssueComment) (Comment, bool) {
		for i := len(cs) - 1; i >= 0; i-- {
			if isSelf(cs[i].GetUser(), self) && strings.Contains(cs[i].GetBody(), marker) {
				return toComment(cs[i]), true
			}
		}
		return Comment{}, false
	}
	first, resp, err := list(1)
	if err != nil {
		return Comment{}, false, err
	}
	for page := resp.LastPage; page > 1; page-- {
		cs, _, err := list(page)
		if err != nil {
			return Comment{}, false, err
		}
		if cm, ok := match(cs); ok {
			return cm, true, nil
		}
	}
	cm, ok := match(first)
	return cm, ok, nil
}

// IssueInfo is an issue's or PR's state.
type IssueInfo struct {
	Open   bool
	IsPR   bool
	Merged bool
	Draft  bool
	Labels []string
}

// IssueState reports whether issue or PR number is open, is a PR, was merged, and its labels.
func (c *Client) IssueState(ctx context.Context, number int) (open, isPR, merged bool, labels []string, err error) {
	in, err := c.Issue(ctx, number)
	return in.Open, in.IsPR, in.Merged, in.Labels, err
}

// Issue is IssueState as a struct (with Draft).
func (c *Client) Issue(ctx context.Context, number int) (IssueInfo, error) {
	is, resp, err := c.gh.Issues.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		return IssueInfo{}, apiError(fmt.Sprintf("get #%d", number), resp, err)
	}
	in := IssueInfo{Open: is.GetState() == "open", IsPR: is.IsPullRequest(), Labels: labelNames(is.Labels)}
	if in.IsPR {
		pr, resp, err := c.gh.PullRequests.Get(ctx, c.owner, c.repo, number)
		if err != nil {
			return IssueInfo{}, apiError(fmt.Sprintf("get pull request #%d", number), resp, err)
		}
		in.Merged, in.Draft = pr.GetMerged(), pr.GetDraft()
	}
	return in, nil
}

// UserSSHKeys returns login's public SSH keys ("ssh-ed25519 AAAA…"), all pages.
func (c *Client) UserSSHKeys(ctx context.Context, login string) ([]string, error) {
	var out []string
	opt := &gh.ListOptions{PerPage: 100}
	for {
		keys, resp, err := c.gh.Users.ListKeys(ctx, login, opt)
		if err != nil {
			return nil, apiError("list "+login+"'s public SSH keys", resp, err)
		}
		for _, k := range keys {
			if v := strings.TrimSpace(k.GetKey()); v != "" {
				out = append(out, v)
			}
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opt.Page = resp.NextPage
	}
}

// DefaultBranch returns the repository's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	r, resp, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", apiError("get repository "+c.owner+"/"+c.repo, resp, err)
	}
	if r.GetDefaultBranch() == "" {
		return "", fmt.Errorf("github: repository %s/%s has no default branch (empty repository?)", c.owner, c.repo)
	}
	return r.GetDefaultBranch(), nil
}

// RepoFile reads a file at ref; ref "" means the default branch, resolved through the repository
// API, so that configuration (.github/poc.yml) comes from reviewed code, never from a PR head.
// A missing file is an error wrapping ErrNotFound.
func (c *Client) RepoFile(ctx context.Context, path, ref string) ([]byte, error) {
	if ref == "" {
		b, err := c.DefaultBranch(ctx)
		if err != nil {
			return nil, err
		}
		ref = b
	}
	fc, dir, resp, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, path, &gh.RepositoryContentGetOptions{Ref: ref})
	if err != nil {
		return nil, apiError(fmt.Sprintf("read %s at %s", path, ref), resp, err)
	}
	if fc == nil || dir != nil {
		return nil, fmt.Errorf("github: %s at %s is a directory, not a file", path, ref)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, fmt.Errorf("github: decode %s at %s: %w", path, ref, err)
	}
	return []byte(s), nil
}

// AddLabel adds a label to an issue or PR (GitHub creates the label if the repo lacks it).
func (c *Client) AddLabel(ctx context.Context, number int, label string) error {
	_, resp, err := c.gh.Issues.AddLabelsToIssue(ctx, c.owner, c.repo, number, []string{label})
	if err != nil {
		return apiError(fmt.Sprintf("add label %q to #%d", label, number), resp, err)
	}
	return nil
}

// RemoveLabel removes a label; a label already absent is not an error.
func (c *Client) RemoveLabel(ctx context.Context, number int, label string) error {
	// go-github puts the name in the path unescaped; "poc/keep" must travel as "poc%2Fkeep".
	resp, err := c.gh.Issues.RemoveLabelForIssue(ctx, c.owner, c.repo, number, url.PathEscape(label))
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil
		}
		return apiError(fmt.Sprintf("remove label %q from #%d", label, number), resp, err)
	}
	return nil
}
