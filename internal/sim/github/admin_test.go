package github

// The admin endpoints (admin.go): deleting an environment, merging a pull request.

import (
	"net/http"
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// DELETE /repos/{o}/{r}/environments/{e} (OpenAPI repos/delete-an-environment): 204, and the
// environment's secrets, variables and protection rules go with it; 404 once it is gone; a user
// who is not a repository admin is refused. GET answers the protection rules a PUT set.
func TestDeleteEnvironment(t *testing.T) {
	s, ada, wes := shopWithTwoUsers(t, "ada", "admin", "wes", "write")
	ctx := t.Context()
	wait := 5
	env, _, err := ada.Repositories.CreateUpdateEnvironment(ctx, "acme", "shop", "poc", &gh.CreateUpdateEnvironment{
		WaitTimer: &wait, Reviewers: []*gh.EnvReviewers{{Type: gh.String("User"), ID: gh.Int64(1)}}})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, r := range env.ProtectionRules {
		kinds[r.GetType()] = true
	}
	if !kinds["wait_timer"] || !kinds["required_reviewers"] || env.CreatedAt == nil {
		t.Errorf("the environment's protection rules or created_at: %+v", env)
	}
	if !s.SetEnvironmentVariable("acme/shop", "poc", "region", "fr-par") {
		t.Fatal("SetEnvironmentVariable: no environment")
	}
	vars, _, err := ada.Actions.ListEnvVariables(ctx, "acme", "shop", "poc", nil)
	if err != nil || vars.TotalCount != 1 || vars.Variables[0].Name != "REGION" {
		t.Fatalf("list the environment's variables: %+v, %v", vars, err)
	}

	if resp, err := wes.Repositories.DeleteEnvironment(ctx, "acme", "shop", "poc"); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a writer deleted the environment: %v", err)
	}
	resp, err := ada.Repositories.DeleteEnvironment(ctx, "acme", "shop", "poc")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete the environment: %v", err)
	}
	if ok, _ := s.Environment("acme/shop", "poc"); ok {
		t.Fatal("the environment is still there")
	}
	if _, resp, err := ada.Repositories.GetEnvironment(ctx, "acme", "shop", "poc"); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of the deleted environment: %v, want 404", err)
	}
	if resp, err := ada.Repositories.DeleteEnvironment(ctx, "acme", "shop", "poc"); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE of an absent environment: %v, want 404", err)
	}
	// Made again, it starts empty: nothing of the deleted one's came back.
	if _, _, err := ada.Repositories.CreateUpdateEnvironment(ctx, "acme", "shop", "poc", nil); err != nil {
		t.Fatal(err)
	}
	if vars, _, err := ada.Actions.ListEnvVariables(ctx, "acme", "shop", "poc", nil); err != nil || vars.TotalCount != 0 {
		t.Errorf("the new environment's variables: %+v, %v", vars, err)
	}
}

// userClient is go-github with a personal token of login, against the stand-in at base.
func userClient(t *testing.T, s *Server, base, login string) *gh.Client {
	t.Helper()
	root := base + "/"
	c, err := gh.NewClient(gh.WithAuthToken(s.AddUserToken(login)), gh.WithURLs(&root, nil))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// PUT /repos/{o}/{r}/pulls/{n}/merge (OpenAPI pulls/merge): a writer merges an open pull request
// (200, the head's files on the default branch); a second merge is 405, a stale sha 409, a reader
// 403, an unknown number 404.
func TestMergePullRequest(t *testing.T) {
	s, wes, rita := shopWithTwoUsers(t, "wes", "write", "rita", "read")
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

// shopWithTwoUsers starts a server holding acme/shop, with two users of the given permissions and
// a client of each.
func shopWithTwoUsers(t *testing.T, a, aPerm, b, bPerm string) (*Server, *gh.Client, *gh.Client) {
	t.Helper()
	s, base := start(t)
	s.AddRepo("acme/shop", "main")
	s.SetPermission("acme/shop", a, aPerm)
	s.SetPermission("acme/shop", b, bPerm)
	return s, userClient(t, s, base, a), userClient(t, s, base, b)
}
