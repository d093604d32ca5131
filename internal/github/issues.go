package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// FindBoardIssue returns the open issue titled title that this client's identity opened (SelfLogin:
// the App's bot login) and whose body holds marker (a hidden HTML comment), found with the search
// API. Only the bot's own issue counts, so that neither a person nor another App can make the bot
// overwrite their issue by copying the title and the marker. Search lags behind (an issue created
// a moment ago may not be found): callers keep the number they created and ask OwnIssue.
func (c *Client) FindBoardIssue(ctx context.Context, title, marker string) (number int, body string, found bool, err error) {
	if title == "" || marker == "" {
		return 0, "", false, errors.New("github: FindBoardIssue needs a title and a marker")
	}
	self, err := c.SelfLogin(ctx)
	if err != nil {
		return 0, "", false, err
	}
	q := fmt.Sprintf("repo:%s/%s is:issue is:open in:title %q", c.owner, c.repo, title)
	res, resp, err := c.gh.Search.Issues(ctx, q, &gh.SearchOptions{ListOptions: gh.ListOptions{PerPage: 50}})
	if err != nil {
		return 0, "", false, apiError(fmt.Sprintf("search the %q issue", title), resp, err)
	}
	for _, is := range res.Issues {
		if is.GetTitle() == title && isSelf(is.GetUser(), self) && strings.Contains(is.GetBody(), marker) {
			return is.GetNumber(), is.GetBody(), true, nil
		}
	}
	return 0, "", false, nil
}

// OwnIssue reads issue number and reports whether it is this client's identity's own issue with
// marker in its body (open or closed, whatever its title now); ok is false, without an error, for
// one that is gone (404, 410) or not the bot's own.
func (c *Client) OwnIssue(ctx context.Context, number int, marker string) (body string, ok bool, err error) {
	self, err := c.SelfLogin(ctx)
	if err != nil {
		return "", false, err
	}
	is, resp, err := c.gh.Issues.Get(ctx, c.owner, c.repo, number)
	if err != nil {
		if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone) {
			return "", false, nil
		}
		return "", false, apiError(fmt.Sprintf("get #%d", number), resp, err)
	}
	if is.IsPullRequest() || !isSelf(is.GetUser(), self) || !strings.Contains(is.GetBody(), marker) {
		return "", false, nil
	}
	return is.GetBody(), true, nil
}

// CreateIssue opens an issue and returns its number.
func (c *Client) CreateIssue(ctx context.Context, title, body string) (int, error) {
	if err := checkBody(body); err != nil {
		return 0, err
	}
	is, resp, err := c.gh.Issues.Create(ctx, c.owner, c.repo, &gh.IssueRequest{Title: gh.String(title), Body: gh.String(body)})
	if err != nil {
		return 0, apiError(fmt.Sprintf("open the %q issue", title), resp, err)
	}
	return is.GetNumber(), nil
}

// EditIssueBody replaces an issue's body.
func (c *Client) EditIssueBody(ctx context.Context, number int, body string) error {
	if err := checkBody(body); err != nil {
		return err
	}
	_, resp, err := c.gh.Issues.Edit(ctx, c.owner, c.repo, number, &gh.IssueRequest{Body: gh.String(body)})
	if err != nil {
		return apiError(fmt.Sprintf("edit issue #%d", number), resp, err)
	}
	return nil
}
