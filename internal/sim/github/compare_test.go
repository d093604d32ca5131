package github

// Repository variables, compare and directory listings, through go-github's own calls.

import (
	"net/http"
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// Repository variables: create (201; 409 for a taken name), get, update (204), delete (204; 404
// once gone); a reader is refused, a writer may (the permissive reading, doc.go).
func TestRepositoryVariables(t *testing.T) {
	s, base := start(t)
	s.AddRepo("acme/shop", "main")
	s.SetPermission("acme/shop", "ada", "admin")
	s.SetPermission("acme/shop", "wes", "write")
	s.SetPermission("acme/shop", "rita", "read")
	ada, wes, rita := userClient(t, s, base, "ada"), userClient(t, s, base, "wes"), userClient(t, s, base, "rita")
	ctx := t.Context()
	if _, err := ada.Actions.CreateRepoVariable(ctx, "acme", "shop", &gh.ActionsVariable{Name: "pocbot_init", Value: "one"}); err != nil {
		t.Fatal(err)
	}
	if resp, err := ada.Actions.CreateRepoVariable(ctx, "acme", "shop", &gh.ActionsVariable{Name: "POCBOT_INIT", Value: "two"}); err == nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("a second create of the name: %v, want 409", err)
	}
	v, _, err := wes.Actions.GetRepoVariable(ctx, "acme", "shop", "pocbot_init")
	if err != nil || v.Name != "POCBOT_INIT" || v.Value != "one" || v.CreatedAt == nil {
		t.Fatalf("get: %+v, %v", v, err)
	}
	if resp, err := wes.Actions.UpdateRepoVariable(ctx, "acme", "shop", &gh.ActionsVariable{Name: "POCBOT_INIT", Value: "planted"}); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a writer's update: %v", err)
	}
	if got, _ := s.RepoVariable("acme/shop", "POCBOT_INIT"); got != "planted" {
		t.Errorf("after the update: %q", got)
	}
	if resp, err := rita.Actions.CreateRepoVariable(ctx, "acme", "shop", &gh.ActionsVariable{Name: "X", Value: "y"}); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a reader created a variable: %v", err)
	}
	if _, err := ada.Actions.DeleteRepoVariable(ctx, "acme", "shop", "POCBOT_INIT"); err != nil {
		t.Fatal(err)
	}
	if _, resp, err := ada.Actions.GetRepoVariable(ctx, "acme", "shop", "POCBOT_INIT"); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("get after delete: %v, want 404", err)
	}
}

// A branch made through the API compares against where it was made: the files a merge would
// bring, the commits and their authors; a directory lists its entries.
func TestCompareAndDirectoryListing(t *testing.T) {
	s, ada, wes := shopWithTwoUsers(t, "ada", "admin", "wes", "write")
	ctx := t.Context()
	s.SetFile("acme/shop", "", "README.md", []byte("hello\n"))
	s.SetFile("acme/shop", "", ".github/workflows/ci.yml", []byte("on: push\n"))
	head, _, err := wes.Git.GetRef(ctx, "acme", "shop", "heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wes.Git.CreateRef(ctx, "acme", "shop", gh.CreateRef{Ref: "refs/heads/topic", SHA: head.GetObject().GetSHA()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := wes.Repositories.CreateFile(ctx, "acme", "shop", ".github/workflows/x.yml",
		&gh.RepositoryContentFileOptions{Message: gh.Ptr("add x"), Content: []byte("on: push\n"), Branch: gh.Ptr("topic")}); err != nil {
		t.Fatal(err)
	}
	// The default branch moves on: the comparison is still against the merge base.
	s.SetFile("acme/shop", "", "NEWS.md", []byte("news\n"))
	cmp, _, err := ada.Repositories.CompareCommits(ctx, "acme", "shop", "main", "topic", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.GetStatus() != "ahead" || cmp.GetAheadBy() != 1 || len(cmp.Commits) != 1 || cmp.Commits[0].GetAuthor().GetLogin() != "wes" {
		t.Errorf("comparison: status %s ahead %d commits %+v", cmp.GetStatus(), cmp.GetAheadBy(), cmp.Commits)
	}
	if len(cmp.Files) != 1 || cmp.Files[0].GetFilename() != ".github/workflows/x.yml" || cmp.Files[0].GetStatus() != "added" {
		t.Errorf("files: %+v", cmp.Files)
	}
	_, dir, _, err := ada.Repositories.GetContents(ctx, "acme", "shop", ".github/workflows", &gh.RepositoryContentGetOptions{Ref: "topic"})
	if err != nil || len(dir) != 2 || dir[0].GetName() != "ci.yml" || dir[1].GetName() != "x.yml" || dir[1].GetType() != "file" {
		t.Fatalf("listing: %+v, %v", dir, err)
	}
	_, top, _, err := ada.Repositories.GetContents(ctx, "acme", "shop", ".github", nil)
	if err != nil || len(top) != 1 || top[0].GetType() != "dir" {
		t.Errorf("listing of .github: %+v, %v", top, err)
	}
}
