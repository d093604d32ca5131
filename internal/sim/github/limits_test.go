package github

import (
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBodyLimitReadings: issue and comment bodies over 65,536 characters are refused with
// GitHub's recorded 422, each unit of "characters" played: bytes (the default), code points,
// UTF-16 code units.
func TestBodyLimitReadings(t *testing.T) {
	bodies := []struct {
		name  string
		body  string
		under map[BodyUnit]bool // fits in that unit
	}{
		{"65536 ASCII", strings.Repeat("a", 65536), map[BodyUnit]bool{BodyBytes: true, BodyRunes: true, BodyUTF16: true}},
		{"65537 ASCII", strings.Repeat("a", 65537), map[BodyUnit]bool{}},
		{"40000 é (80000 bytes)", strings.Repeat("é", 40000), map[BodyUnit]bool{BodyRunes: true, BodyUTF16: true}},
		{"33000 emoji (66000 UTF-16 units)", strings.Repeat("😀", 33000), map[BodyUnit]bool{BodyRunes: true}},
	}
	for _, unit := range []BodyUnit{BodyBytes, BodyRunes, BodyUTF16} {
		s, url := startWith(t, Options{BodyUnit: unit})
		s.AddRepo("acme/web", "main")
		n := s.AddIssue("acme/web", Issue{})
		s.AddToken("tok", "github-actions[bot]")
		for _, b := range bodies {
			t.Run(fmt.Sprintf("unit %d %s", unit, b.name), func(t *testing.T) {
				c := do(t, "POST", fmt.Sprintf("%s/repos/acme/web/issues/%d/comments", url, n), "Bearer tok", map[string]string{"body": b.body})
				i := do(t, "POST", url+"/repos/acme/web/issues", "Bearer tok", map[string]string{"title": "t", "body": b.body})
				if b.under[unit] {
					if c.status != 201 || i.status != 201 {
						t.Fatalf("a body that fits: comment %d, issue %d", c.status, i.status)
					}
					return
				}
				if c.status != 422 || !strings.Contains(c.raw, `"field":"data"`) || !strings.Contains(c.raw, "Body is too long (maximum is 65536 characters)") {
					t.Errorf("comment: %d %s", c.status, c.raw)
				}
				if i.status != 422 || !strings.Contains(i.raw, `"field":"body"`) || !strings.Contains(i.raw, "body is too long (maximum is 65536 characters)") {
					t.Errorf("issue: %d %s", i.status, i.raw)
				}
			})
		}
	}
}

// TestTokenScopes: a classic token's scopes are answered in X-OAuth-Scopes and bound what it
// reaches: workflow files need the workflow scope (or the Workflows permission of a fine-grained
// token) unless the same file is on another branch; a private repository needs repo; adding a
// repository to an installation takes a classic PAT with repo.
func TestTokenScopes(t *testing.T) {
	s, url := start(t)
	s.AddRepo("acme/web", "main")
	s.AddRepo("acme/secret", "main")
	s.SetPrivate("acme/secret", true, false)
	s.SetPermission("acme/web", "alice", "admin")
	s.SetPermission("acme/secret", "alice", "admin")
	s.SelectRepositories("acme/web")
	ghDefault := "token " + s.AddUserTokenWith("alice", UserToken{Kind: TokenOAuth, Scopes: []string{"gist", "read:org", "repo"}})
	withWorkflow := "token " + s.AddUserTokenWith("alice", UserToken{Kind: TokenOAuth, Scopes: []string{"repo", "workflow"}})
	publicOnly := "token " + s.AddUserTokenWith("alice", UserToken{Scopes: []string{"public_repo"}})
	classic := "token " + s.AddUserToken("alice")
	fine := "token " + s.AddUserTokenWith("alice", UserToken{Kind: TokenFineGrained})
	fineWorkflows := "token " + s.AddUserTokenWith("alice", UserToken{Kind: TokenFineGrained, Workflows: true})

	r := do(t, "GET", url+"/repos/acme/web", ghDefault, nil)
	if r.status != 200 || r.header.Get("X-OAuth-Scopes") != "gist, read:org, repo" {
		t.Fatalf("GET with the gh token: %d, X-OAuth-Scopes %q", r.status, r.header.Get("X-OAuth-Scopes"))
	}
	if r := do(t, "GET", url+"/repos/acme/web", fine, nil); r.status != 200 || r.header.Values("X-OAuth-Scopes") != nil {
		t.Fatalf("a fine-grained token: %d, X-OAuth-Scopes %v (it has no scopes)", r.status, r.header.Values("X-OAuth-Scopes"))
	}
	workflow := base64.StdEncoding.EncodeToString([]byte("on: issue_comment\n"))
	put := func(tok, branch, path, content string) int {
		return do(t, "PUT", url+"/repos/acme/web/contents/"+path, tok, map[string]string{"message": "m", "content": content, "branch": branch}).status
	}
	if got := put(classic, "main", "README", workflow); got != 201 {
		t.Fatalf("README: %d", got)
	}
	ref := do(t, "GET", url+"/repos/acme/web/git/ref/heads/main", classic, nil)
	sha := ref.body["object"].(map[string]any)["sha"].(string)
	if r := do(t, "POST", url+"/repos/acme/web/git/refs", classic, map[string]string{"ref": "refs/heads/copy", "sha": sha}); r.status != 201 {
		t.Fatalf("branch: %d %s", r.status, r.raw)
	}
	for _, c := range []struct {
		name, tok, path string
		want            int
	}{
		{"gh's default scopes, workflow file", ghDefault, ".github/workflows/poc.yml", 404},
		{"gh's default scopes, other file", ghDefault, ".github/poc.yml", 201},
		{"public_repo only, workflow file", publicOnly, ".github/workflows/a.yml", 404},
		{"fine-grained without Workflows", fine, ".github/workflows/b.yml", 404},
		{"fine-grained with Workflows", fineWorkflows, ".github/workflows/c.yml", 201},
		{"workflow scope", withWorkflow, ".github/workflows/poc.yml", 201},
	} {
		if got := put(c.tok, "main", c.path, workflow); got != c.want {
			t.Errorf("%s: PUT %s answered %d, want %d", c.name, c.path, got, c.want)
		}
	}
	if got := put(ghDefault, "copy", ".github/workflows/poc.yml", workflow); got != 201 {
		t.Errorf("the same workflow file as on another branch: %d, want 201 (no workflow scope needed)", got)
	}
	if got := do(t, "GET", url+"/repos/acme/secret", publicOnly, nil).status; got != 404 {
		t.Errorf("a private repository with public_repo only: %d, want 404", got)
	}
	if got := do(t, "GET", url+"/repos/acme/secret/actions/secrets/public-key", classic, nil).status; got != 200 {
		t.Errorf("secrets with repo: %d", got)
	}
	if got := do(t, "GET", url+"/repos/acme/web/actions/secrets/public-key", publicOnly, nil).status; got != 404 {
		t.Errorf("secrets with public_repo only: %d, want 404 (they need repo)", got)
	}
	inst := s.InstallationID("acme/web")
	add := fmt.Sprintf("%s/user/installations/%d/repositories/%d", url, inst, s.mustRepo("acme/secret").id)
	for _, tok := range []string{ghDefault, fine} {
		if got := do(t, "PUT", add, tok, nil).status; got != 403 {
			t.Errorf("adding a repository with a %s token: %d, want 403 (classic PATs only)", tok[6:10], got)
		}
	}
	if got := do(t, "PUT", add, classic, nil).status; got != 204 {
		t.Errorf("adding a repository with a classic PAT: %d, want 204", got)
	}
}

// TestSearchLag: a new issue is found by search only SearchLag after its creation.
func TestSearchLag(t *testing.T) {
	var clock atomic.Pointer[time.Time]
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock.Store(&t0)
	s, url := startWith(t, Options{Now: func() time.Time { return *clock.Load() }})
	s.AddRepo("acme/web", "main")
	s.AddToken("tok", "github-actions[bot]")
	if r := do(t, "POST", url+"/repos/acme/web/issues", "Bearer tok", map[string]string{"title": "POC clusters"}); r.status != 201 {
		t.Fatalf("create: %d", r.status)
	}
	search := func() float64 {
		r := do(t, "GET", url+"/search/issues?q=repo:acme/web+is:issue+%22POC+clusters%22", "Bearer tok", nil)
		return r.body["total_count"].(float64)
	}
	if n := search(); n != 0 {
		t.Errorf("found %v at once; the index lags", n)
	}
	later := t0.Add(DefaultSearchLag)
	clock.Store(&later)
	if n := search(); n != 1 {
		t.Errorf("found %v after the lag, want 1", n)
	}
}
