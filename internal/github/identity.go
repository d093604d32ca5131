package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	gh "github.com/google/go-github/v88/github"
)

// ActionsBotLogin is the login of comments posted with a workflow's GITHUB_TOKEN (the lesser
// mode): https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication
const ActionsBotLogin = "github-actions[bot]"

type selfCache struct {
	mu    sync.Mutex
	login string
}

// SelfLogin is the login this client's comments carry: the App's bot login "<slug>[bot]" (the
// slug from GET /app, asked once; GitHub reserves the "[bot]" suffix for Apps, and slugs are
// unique), or github-actions[bot] in the lesser mode, where any workflow of the repository
// posts under that same name.
func (c *Client) SelfLogin(ctx context.Context) (string, error) {
	c.self.mu.Lock()
	defer c.self.mu.Unlock()
	if c.self.login != "" {
		return c.self.login, nil
	}
	if c.app == nil {
		c.self.login = ActionsBotLogin
		return c.self.login, nil
	}
	app, resp, err := c.app.Apps.Get(ctx, "")
	if err != nil {
		return "", apiError("get the App (GET /app) to learn its bot login", resp, err)
	}
	if app.GetSlug() == "" {
		return "", errors.New("github: GET /app returned no slug: cannot tell the App's own comments from others'")
	}
	c.self.login = app.GetSlug() + "[bot]"
	return c.self.login, nil
}

// SetSelfLogin sets the login SelfLogin returns (e.g. from POC_APP_SLUG), sparing GET /app.
func (c *Client) SetSelfLogin(login string) {
	c.self.mu.Lock()
	defer c.self.mu.Unlock()
	c.self.login = login
}

func isSelf(u *gh.User, self string) bool {
	return u != nil && self != "" && strings.EqualFold(u.GetLogin(), self) && isBot(u)
}

// UserLogin returns the current login of the account with this immutable id
// (GET /user/{account_id}, users/get-by-id). A deleted account is an error wrapping ErrNotFound.
func (c *Client) UserLogin(ctx context.Context, id int64) (string, error) {
	u, resp, err := c.gh.Users.GetByID(ctx, id)
	if err != nil {
		return "", apiError(fmt.Sprintf("get the account with id %d", id), resp, err)
	}
	return u.GetLogin(), nil
}

// UserID returns the immutable id of the account that holds login now (GET /users/{username}).
func (c *Client) UserID(ctx context.Context, login string) (int64, error) {
	u, resp, err := c.gh.Users.Get(ctx, login)
	if err != nil {
		return 0, apiError("get the account "+login, resp, err)
	}
	return u.GetID(), nil
}

// maxEventPages bounds the events walk (100 per page): an issue with more than 3,000 events is
// answered from what was read, newest pages last... so the walk reads every page up to the bound.
const maxEventPages = 30

// LabelActor returns who added label to issue or PR number the last time it was added, from the
// issue's events (GET /repos/{owner}/{repo}/issues/{n}/events, issues/list-events: a "labeled"
// event names its actor). ok is false when no such event was found.
func (c *Client) LabelActor(ctx context.Context, number int, label string) (actor string, ok bool, err error) {
	opt := &gh.ListOptions{PerPage: 100}
	for page := 0; page < maxEventPages; page++ {
		evs, resp, err := c.gh.Issues.ListIssueEvents(ctx, c.owner, c.repo, number, opt)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusNotFound {
				return "", false, nil
			}
			return "", false, apiError(fmt.Sprintf("list the events of #%d", number), resp, err)
		}
		for _, e := range evs {
			if e.GetEvent() == "labeled" && strings.EqualFold(e.GetLabel().GetName(), label) {
				actor, ok = e.GetActor().GetLogin(), true // oldest first: the last one wins
			}
		}
		if resp.NextPage == 0 {
			return actor, ok, nil
		}
		opt.Page = resp.NextPage
	}
	return "", false, fmt.Errorf("github: #%d has more than %d events: who added %q is not known", number, maxEventPages*100, label)
}
