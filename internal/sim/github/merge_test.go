package github

import (
	"net/http"
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// PUT /repos/{o}/{r}/pulls/{n}/merge (OpenAPI pulls/merge): a writer merges an open pull request
// (200, the head's files on the default branch); a second merge is 405, a stale sha 409, a reader
// 403, an unknown number 404.
func TestMergePullRequest(t *testing.T) {
	s, base := start(t)
	s.AddRepo("acme/shop", "main")
	s.SetPermission("acme/shop", "wes", "write")
	s.SetPermission("acme/shop", "rita", "read")
	wes, rita := userClient(t, s, base, "wes"), userClient(t, s, base, "rita")
	ctx := t.Context()
	s.SetFile("acme/shop", "feature", "a.txt", []byte("a"))
	pr, _, err := wes.PullRequests.Create(ctx, "acme", "shop", &gh.NewPullRequest{Title: gh.String("a"), Head: gh.String("feature"), Base: gh.String("main")})
	if err != nil {
		t.Fatal(err)
	}
	status := func(resp *gh.Response) int {
		if resp == nil {
			return 0
		}
		return resp.StatusCode
	}
	if _, resp, err := rita.PullRequests.Merge(ctx, "acme", "shop", pr.GetNumber(), "", nil); status(resp) != http.StatusForbidden {
		t.Errorf("a reader's merge: %v, want 403", err)
	}
	if _, resp, err := wes.PullRequests.Merge(ctx, "acme", "shop", pr.GetNumber(), "", &gh.PullRequestOptions{SHA: "0000"}); status(resp) != http.StatusConflict {
		t.Errorf("a merge of a stale sha: %v, want 409", err)
	}
	res, _, err := wes.PullRequests.Merge(ctx, "acme", "shop", pr.GetNumber(), "", nil)
	if err != nil || !res.GetMerged() || res.GetSHA() == "" {
		t.Fatalf("merge: %+v, %v", res, err)
	}
	if b, ok := s.File("acme/shop", "", "a.txt"); !ok || string(b) != "a" {
		t.Errorf("the default branch lacks the merged file")
	}
	if _, resp, err := wes.PullRequests.Merge(ctx, "acme", "shop", pr.GetNumber(), "", nil); status(resp) != http.StatusMethodNotAllowed {
		t.Errorf("a second merge: %v, want 405", err)
	}
	if _, resp, err := wes.PullRequests.Merge(ctx, "acme", "shop", 99, "", nil); status(resp) != http.StatusNotFound {
		t.Errorf("an unknown pull request: %v, want 404", err)
	}
}
