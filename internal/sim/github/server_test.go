package github

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T) (*Server, string) {
	t.Helper()
	return startWith(t, Options{})
}

// startWith serves a stand-in of opts until the test ends.
func startWith(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	return ServeFor(t, opts)
}

func signJWT(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(map[string]string{"alg": "RS256", "typ": "JWT"}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

type reply struct {
	status int
	body   map[string]any
	raw    string
	header http.Header
}

func do(t *testing.T, method, url, auth string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, raw: string(raw), header: resp.Header}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func TestAppJWTChecks(t *testing.T) {
	s, url := start(t)
	inst := s.AddRepo("acme/web", "main")
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now.Add(-30 * time.Second).Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	tests := []struct {
		name    string
		jwt     string
		status  int
		message string
	}{
		{"valid", signJWT(t, s.key, good), 200, ""},
		{"numeric iss", signJWT(t, s.key, with("iss", s.AppID())), 200, ""},
		{"wrong key", signJWT(t, other, good), 401, "could not be decoded"},
		{"wrong app id", signJWT(t, s.key, with("iss", "1")), 401, "Integration not found"},
		{"expired", signJWT(t, s.key, with("exp", now.Add(-time.Second).Unix())), 401, "'Expiration time' claim ('exp') must be"},
		{"lifetime over 10 min", signJWT(t, s.key, with("exp", now.Add(11*time.Minute).Unix())), 401, "too far in the future"},
		{"iat in the future", signJWT(t, s.key, with("iat", now.Add(5*time.Minute).Unix())), 401, "'Issued at'"},
		{"no exp", signJWT(t, s.key, with("exp", nil)), 401, "Missing 'expiration time'"},
		{"garbage", "a.b.c", 401, "could not be decoded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", url+"/repos/acme/web/installation", "Bearer "+tc.jwt, nil)
			if r.status != tc.status || (tc.message != "" && !strings.Contains(fmt.Sprint(r.body["message"]), tc.message)) {
				t.Fatalf("status %d body %s; want %d %q", r.status, r.raw, tc.status, tc.message)
			}
			if tc.status == 200 && r.body["id"] != float64(inst) {
				t.Fatalf("installation %v, want %d", r.body["id"], inst)
			}
			if tc.status == 401 && r.body["documentation_url"] == nil {
				t.Fatalf("401 body lacks GitHub's shape: %s", r.raw)
			}
		})
	}
}

func TestInstallationTokens(t *testing.T) {
	s, url := start(t)
	inst := s.AddRepo("acme/web", "main")
	s.AddRepo("acme/other", "main")
	s.AddRepo("zed/far", "main")
	n := s.AddIssue("acme/web", Issue{})
	nOther := s.AddIssue("acme/other", Issue{})
	jwt := func() string {
		now := time.Now()
		return "Bearer " + signJWT(t, s.key, map[string]any{"iss": fmt.Sprint(s.AppID()), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	}
	mint := func(body any) reply {
		return do(t, "POST", fmt.Sprintf("%s/app/installations/%d/access_tokens", url, inst), jwt(), body)
	}
	// Narrowed to acme/web, issues read only.
	r := mint(map[string]any{"repositories": []string{"web"}, "permissions": map[string]string{"issues": "read"}})
	if r.status != 201 || r.body["repository_selection"] != "selected" {
		t.Fatalf("mint: %d %s", r.status, r.raw)
	}
	tok := "token " + r.body["token"].(string)
	if !strings.HasPrefix(tok, fmt.Sprintf("token ghs_%d_", s.AppID())) || strings.Count(tok, ".") != 2 {
		t.Fatalf("token shape %q", tok)
	}
	perms := r.body["permissions"].(map[string]any)
	if perms["issues"] != "read" || perms["metadata"] != "read" || perms["pull_requests"] != nil {
		t.Fatalf("permissions %v", perms)
	}
	checks := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"read an issue", "GET", fmt.Sprintf("/repos/acme/web/issues/%d", n), nil, 200},
		{"write needs issues:write", "POST", fmt.Sprintf("/repos/acme/web/issues/%d/comments", n), map[string]string{"body": "x"}, 403},
		{"other repo of the installation", "GET", fmt.Sprintf("/repos/acme/other/issues/%d", nOther), nil, 404},
		{"pull requests not granted", "GET", "/repos/acme/web/pulls/1", nil, 403},
		{"App endpoint with a token", "GET", "/repos/acme/web/installation", nil, 401},
	}
	for _, c := range checks {
		if r := do(t, c.method, url+c.path, tok, c.body); r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, r.status, r.raw, c.status)
		}
	}
	// Refusals when minting.
	for name, body := range map[string]any{
		"more than granted":         map[string]any{"permissions": map[string]string{"administration": "write"}},
		"repo outside installation": map[string]any{"repositories": []string{"far"}},
		"unknown repo id":           map[string]any{"repository_ids": []int64{1}},
	} {
		if r := mint(body); r.status != 422 {
			t.Errorf("%s: %d %s, want 422", name, r.status, r.raw)
		}
	}
	if r := do(t, "POST", url+"/app/installations/1/access_tokens", jwt(), nil); r.status != 404 {
		t.Errorf("unknown installation: %d", r.status)
	}
	// Without a body: every repository of the installation, the full grant.
	all := mint(nil)
	if all.status != 201 || all.body["repository_selection"] != "all" {
		t.Fatalf("mint all: %d %s", all.status, all.raw)
	}
	allTok := "Bearer " + all.body["token"].(string)
	if r := do(t, "POST", fmt.Sprintf("%s/repos/acme/other/issues/%d/comments", url, nOther), allTok, map[string]string{"body": "hi"}); r.status != 201 {
		t.Fatalf("all-repo token: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", url+"/repos/zed/far", allTok, nil); r.status != 404 {
		t.Fatalf("another owner's repo: %d", r.status)
	}
	// No credentials, bad credentials, expired token.
	if r := do(t, "GET", url+"/repos/acme/web", "", nil); r.status != 401 || r.body["message"] != "Requires authentication" {
		t.Fatalf("anonymous: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", url+"/repos/acme/web", "token ghs_nope", nil); r.status != 401 || r.body["message"] != "Bad credentials" {
		t.Fatalf("bad token: %d %s", r.status, r.raw)
	}
	s.SetNow(func() time.Time { return time.Now().Add(61 * time.Minute) })
	if r := do(t, "GET", url+"/repos/acme/web", allTok, nil); r.status != 401 {
		t.Fatalf("expired token: %d %s", r.status, r.raw)
	}
}

func TestRESTShapes(t *testing.T) {
	s, url := start(t)
	s.AddRepo("acme/web", "trunk")
	s.AddToken("tok", "github-actions[bot]", "acme/web")
	auth := "Bearer tok"
	n := s.AddIssue("acme/web", Issue{Author: "alice"})
	for i := range 65 {
		s.AddComment("acme/web", n, "alice", fmt.Sprint("c", i))
	}
	// Pagination with GitHub's Link header, also under the /api/v3 prefix.
	for _, prefix := range []string{"", "/api/v3"} {
		r := do(t, "GET", fmt.Sprintf("%s%s/repos/acme/web/issues/%d/comments?per_page=30&page=2", url, prefix, n), auth, nil)
		link := r.header.Get("Link")
		for _, want := range []string{`page=3&per_page=30>; rel="next"`, `page=3&per_page=30>; rel="last"`, `page=1&per_page=30>; rel="prev"`, prefix + "/repos/acme/web/issues/"} {
			if r.status != 200 || !strings.Contains(link, want) {
				t.Fatalf("prefix %q: status %d Link %q lacks %q", prefix, r.status, link, want)
			}
		}
		var list []map[string]any
		_ = json.Unmarshal([]byte(r.raw), &list)
		if len(list) != 30 || list[0]["body"] != "c30" {
			t.Fatalf("page 2: %d items, first %v", len(list), list[0]["body"])
		}
	}
	// Reactions: 201 then 200 for the same one.
	cid := s.AddComment("acme/web", n, "alice", "/poc up")
	if r := do(t, "POST", fmt.Sprintf("%s/repos/acme/web/issues/comments/%d/reactions", url, cid), auth, map[string]string{"content": "eyes"}); r.status != 201 {
		t.Fatalf("reaction: %d", r.status)
	}
	if r := do(t, "POST", fmt.Sprintf("%s/repos/acme/web/issues/comments/%d/reactions", url, cid), auth, map[string]string{"content": "eyes"}); r.status != 200 {
		t.Fatalf("same reaction again: %d", r.status)
	}
	// Comment size limit.
	if r := do(t, "POST", fmt.Sprintf("%s/repos/acme/web/issues/%d/comments", url, n), auth, map[string]string{"body": strings.Repeat("x", 65537)}); r.status != 422 {
		t.Fatalf("long comment: %d", r.status)
	}
	// Contents: base64, default branch.
	s.SetFile("acme/web", "", "docs/a.md", []byte("hello"))
	r := do(t, "GET", url+"/repos/acme/web/contents/docs/a.md", auth, nil)
	dec, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(fmt.Sprint(r.body["content"]), "\n", ""))
	if r.status != 200 || string(dec) != "hello" || r.body["encoding"] != "base64" {
		t.Fatalf("contents: %d %s", r.status, r.raw)
	}
	if r := do(t, "GET", url+"/repos/acme/web/contents/docs/a.md?ref=other", auth, nil); r.status != 404 {
		t.Fatalf("contents on a missing ref: %d", r.status)
	}
	// Requests are recorded without the prefix, with how they authenticated.
	reqs := s.Requests()
	if reqs[1].Path != fmt.Sprintf("/repos/acme/web/issues/%d/comments", n) || reqs[1].Auth != "token" || reqs[1].Status != 200 {
		t.Fatalf("recorded %+v", reqs[1])
	}
}

func TestFaults(t *testing.T) {
	s, url := start(t)
	s.AddRepo("acme/web", "main")
	s.AddToken("tok", "github-actions[bot]")
	s.Inject(Fault{PathContains: "/repos/acme/web", SecondaryRateLimit: true, RetryAfter: 2 * time.Second, Times: 2})
	for i := range 2 {
		r := do(t, "GET", url+"/repos/acme/web", "Bearer tok", nil)
		if r.status != 403 || r.header.Get("Retry-After") != "2" || !strings.Contains(r.raw, "secondary rate limit") {
			t.Fatalf("try %d: %d %v %s", i, r.status, r.header, r.raw)
		}
	}
	if r := do(t, "GET", url+"/repos/acme/web", "Bearer tok", nil); r.status != 200 {
		t.Fatalf("after the faults: %d", r.status)
	}
}
