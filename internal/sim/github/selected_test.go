package github

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
)

// An installation on selected repositories covers only those: GET /repos/{o}/{r}/installation is
// 404 for another repository of its owner, and its tokens do not reach it. GET /app/installations
// lists it (repository_selection "selected"); PUT /user/installations/{id}/repositories/{repo id}
// adds a repository with a user's token that is admin there (204), and refuses an installation
// token, a user without admin, an unknown installation or another owner's repository.
func TestInstallationOnSelectedRepositories(t *testing.T) {
	s, base := start(t)
	inst := s.AddRepo("acme/shop", "main")
	s.AddRepo("acme/api", "main")
	s.AddRepo("other/x", "main")
	s.SelectRepositories("acme/shop")
	s.SetPermission("acme/api", "ada", "admin")
	s.SetPermission("acme/api", "bob", "write")
	s.SetPermission("other/x", "ada", "admin")
	ctx := t.Context()
	u, err := url.Parse(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, s.AppID(), s.AppPrivateKeyPEM())
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = base
	root := u.String()
	client := func(opt gh.ClientOptionsFunc) *gh.Client {
		c, err := gh.NewClient(opt, gh.WithURLs(&root, nil))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	app := client(gh.WithTransport(atr))
	user := func(login string) *gh.Client { return client(gh.WithAuthToken(s.AddUserToken(login))) }
	status := func(resp *gh.Response) int {
		if resp == nil {
			return 0
		}
		return resp.StatusCode
	}

	if _, resp, err := app.Apps.GetRepositoryInstallation(ctx, "acme", "api"); status(resp) != http.StatusNotFound {
		t.Fatalf("installation of acme/api before it is selected: %v, want 404", err)
	}
	list, _, err := app.Apps.ListInstallations(ctx, nil)
	if err != nil || len(list) != 2 {
		t.Fatalf("GET /app/installations: %d, %v; want the installations on acme and other", len(list), err)
	}
	for _, i := range list {
		want := map[bool]string{true: "selected", false: "all"}[i.GetID() == inst]
		if i.GetRepositorySelection() != want {
			t.Errorf("installation %d on %s: repository_selection %q, want %q", i.GetID(), i.GetAccount().GetLogin(), i.GetRepositorySelection(), want)
		}
	}
	tok, _, err := app.Apps.CreateInstallationToken(ctx, inst, nil)
	if err != nil {
		t.Fatal(err)
	}
	ic := client(gh.WithAuthToken(tok.GetToken()))
	if _, resp, _ := ic.Repositories.Get(ctx, "acme", "api"); status(resp) != http.StatusNotFound {
		t.Errorf("the installation's token reads acme/api (%d), which it was not given", status(resp))
	}
	apiRepo, _, err := user("ada").Repositories.Get(ctx, "acme", "api")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := user("ada").Repositories.Get(ctx, "other", "x")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		c            *gh.Client
		inst, repoID int64
		want         int
	}{
		{"installation token", ic, inst, apiRepo.GetID(), http.StatusForbidden},
		{"write, not admin", user("bob"), inst, apiRepo.GetID(), http.StatusForbidden},
		{"unknown installation", user("ada"), inst + 999, apiRepo.GetID(), http.StatusNotFound},
		{"another owner's repository", user("ada"), inst, other.GetID(), http.StatusNotFound},
	} {
		if _, resp, _ := tc.c.Apps.AddRepository(ctx, tc.inst, tc.repoID); status(resp) != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, status(resp), tc.want)
		}
	}
	if s.InstallationID("acme/api") != 0 {
		t.Fatal("a refused request added the repository")
	}
	if _, resp, err := user("ada").Apps.AddRepository(ctx, inst, apiRepo.GetID()); err != nil || status(resp) != http.StatusNoContent {
		t.Fatalf("an admin's token: %d, %v; want 204", status(resp), err)
	}
	if got, _, err := app.Apps.GetRepositoryInstallation(ctx, "acme", "api"); err != nil || got.GetID() != inst {
		t.Errorf("installation of acme/api once added: %v, %v; want %d", got.GetID(), err, inst)
	}
}
