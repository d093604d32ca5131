package github

import (
	"context"
	"errors"
	"fmt"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// FindBoardIssue returns the open issue titled title that a bot opened and whose body holds marker
// (a hidden HTML comment), found with the search API. Only a bot's issue counts, so that a person
// cannot make the bot overwrite their issue by copying the title and the marker.
func (c *Client) FindBoardIssue(ctx context.Context, title, marker string) (number int, body string, found bool, err error) {
	if title == "" || marker == "" {
		return 0, "", false, errors.New("github: FindBoardIssue needs a title and a marker")
	}
	q := fmt.Sprintf("repo:%s/%s is:issue is:open in:title %q", c.owner, c.repo, title)
	res, resp, err := c.gh.Search.Issues(ctx, q, &gh.SearchOptions{ListOptions: gh.ListOptions{PerPage: 50}})
	if err != nil {
		return 0, "", false, apiError(fmt.Sprintf("search the %q issue", title), resp, err)
	}
	for _, is := range res.Issues {
		if is.GetTitle() == title && isBot(is.GetUser()) && strings.Contains(is.GetBody(), marker) {
			return is.GetNumber(), is.GetBody(), true, nil
		}
	}
	return 0, "", false, nil
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
