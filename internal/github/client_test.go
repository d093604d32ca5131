package github

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	simgh "github.com/pocbot/pocbot/internal/sim/github"
)

const testRepo = "acme/web"

// world is a stand-in with one repository, its App installed, and a few users.
type world struct {
	sim  *simgh.Server
	url  string
	inst int64
}

func startWorld(t *testing.T) *world {
	t.Helper()
	sim, url := startSim(t, simgh.Options{})
	w := &world{sim: sim, url: url, inst: sim.AddRepo(testRepo, "trunk")}
	sim.AddRepo("acme/other", "main")
	sim.SetPermission(testRepo, "alice", "admin")
	sim.SetPermission(testRepo, "mia", "maintain")
	sim.SetPermission(testRepo, "walt", "write")
	sim.SetPermission(testRepo, "tria", "triage")
	sim.SetPermission(testRepo, "rita", "read")
	sim.AddUser("stranger")
	return w
}

// startSim starts the GitHub stand-in until the test's cleanups are done.
func startSim(tb testing.TB, opts simgh.Options) (*simgh.Server, string) {
	tb.Helper()
	sim, err := simgh.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(tb.Context()))
	url, stop, err := sim.Start(ctx)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stop(); cancel() })
	return sim, url
}

// instantRetry keeps retry tests fast and counts the waits.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) policy() RetryPolicy {
	return RetryPolicy{BaseDelay: time.Millisecond, Sleep: func(ctx context.Context, d time.Duration) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.d = append(s.d, d)
		return ctx.Err()
	}}
}

func (w *world) appClient(t *testing.T, mod func(*Auth)) (*Client, error) {
	t.Helper()
	owner, repo, _ := strings.Cut(testRepo, "/")
	a := Auth{AppID: w.sim.AppID(), PrivateKeyPEM: w.sim.AppPrivateKeyPEM(), Owner: owner, Repo: repo, BaseURL: w.url,
		Logger: slog.New(slog.DiscardHandler), Retry: (&sleeps{}).policy()}
	if mod != nil {
		mod(&a)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return NewClient(ctx, a)
}

func (w *world) mustApp(t *testing.T, mod func(*Auth)) *Client {
	t.Helper()
	c, err := w.appClient(t, mod)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestNewClientNarrowsInstallationToken(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil) // installation id looked up with the JWT
	if c.InstallationID() != w.inst || c.Mode() != ModeApp {
		t.Fatalf("installation %d mode %s, want %d app", c.InstallationID(), c.Mode(), w.inst)
	}
	toks := w.sim.Tokens()
	if len(toks) != 1 {
		t.Fatalf("%d tokens minted, want 1", len(toks))
	}
	tok := toks[0]
	if !strings.HasPrefix(tok.Value, "ghs_") || !reflect.DeepEqual(tok.Repos, []string{"acme/web"}) {
		t.Fatalf("token %+v not narrowed to acme/web", tok)
	}
	want := map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read",
		"deployments": "write", "checks": "write", "actions": "write"}
	if !reflect.DeepEqual(tok.Permissions, want) {
		t.Fatalf("token permissions %v, want %v", tok.Permissions, want)
	}
	got, err := c.Token(testCtx(t))
	if err != nil || got != tok.Value {
		t.Fatalf("Token() = %q, %v", got, err)
	}
	var auths []string
	for _, r := range w.sim.Requests() {
		auths = append(auths, r.Method+" "+r.Path+" "+r.Auth)
	}
	wantReq := []string{"GET /repos/acme/web/installation jwt", fmt.Sprintf("POST /app/installations/%d/access_tokens jwt", w.inst)}
	if !reflect.DeepEqual(auths, wantReq) {
		t.Fatalf("requests %v, want %v", auths, wantReq)
	}
	// The narrowed token cannot reach another repository of the same installation.
	other := *c
	other.repo = "other"
	if _, err := other.DefaultBranch(testCtx(t)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("narrowed token reached acme/other: %v", err)
	}
	// Given the installation id (from the event), no look-up is made.
	n := len(w.sim.Requests())
	w.mustApp(t, func(a *Auth) { a.InstallationID = w.inst })
	if reqs := w.sim.Requests()[n:]; len(reqs) != 1 || !strings.HasSuffix(reqs[0].Path, "/access_tokens") {
		t.Fatalf("with an installation id: %+v", reqs)
	}
}

func TestNewClientRefusals(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	wrongPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(other)})
	w.sim.AddRepo("nobody/empty", "main")
	w.sim.Uninstall("nobody/empty")
	tests := []struct {
		name    string
		mod     func(*Auth)
		wantErr string
	}{
		{"wrong App key", func(a *Auth) { a.PrivateKeyPEM = wrongPEM }, "HTTP 401"},
		{"wrong App key with installation id", func(a *Auth) { a.PrivateKeyPEM = wrongPEM; a.InstallationID = w.inst }, "401"},
		{"wrong App id", func(a *Auth) { a.AppID = 1 }, "HTTP 401"},
		{"not a PEM", func(a *Auth) { a.PrivateKeyPEM = []byte("nope") }, "not a PEM RSA key"},
		{"App not installed", func(a *Auth) { a.Owner, a.Repo = "nobody", "empty" }, "HTTP 404"},
		{"wrong installation and App not installed", func(a *Auth) { a.Owner, a.Repo, a.InstallationID = "nobody", "empty", 99 }, "HTTP 404"},
		{"no repository", func(a *Auth) { a.Owner = "" }, "GITHUB_REPOSITORY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.appClient(t, tc.mod)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

// TestInstallationIDFallsBack: the installation id of the event payload is a hint. When GitHub
// refuses to mint a token with it (an unknown id: 404; another account's installation, which does
// not hold the repository: 422), the client looks the repository's installation up, as when the
// payload has no id, and says so in the log.
func TestInstallationIDFallsBack(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	elsewhere := w.sim.AddRepo("zed/far", "main") // another account's installation
	tests := []struct {
		name string
		id   int64
	}{
		{"unknown installation", 99},
		{"another account's installation", elsewhere},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			c := w.mustApp(t, func(a *Auth) {
				a.InstallationID = tc.id
				a.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})
			if c.InstallationID() != w.inst {
				t.Fatalf("installation %d, want the repository's %d", c.InstallationID(), w.inst)
			}
			if _, err := c.Permission(testCtx(t), "alice"); err != nil {
				t.Fatalf("the fallback token does not work: %v", err)
			}
			if !strings.Contains(logs.String(), fmt.Sprint(tc.id)) || !strings.Contains(logs.String(), fmt.Sprint(w.inst)) {
				t.Errorf("log does not name the refused id %d and the one used %d:\n%s", tc.id, w.inst, logs.String())
			}
		})
	}
}

// TestInstallationTokenRefreshed: a token close to its expiry is replaced before a request
// leaves with it, and every token minted (the first and each refresh) is handed to OnToken whole,
// for ::add-mask::.
func TestInstallationTokenRefreshed(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	var (
		mu     sync.Mutex
		clock  = time.Now()
		masked []string
	)
	// Only the client's clock moves: the App's JWT is signed on the real one (ghinstallation).
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	c := w.mustApp(t, func(a *Auth) {
		a.Now = now
		a.OnToken = func(tok string) { mu.Lock(); defer mu.Unlock(); masked = append(masked, tok) }
	})
	first, err := c.Token(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	clock = clock.Add(59 * time.Minute) // one minute left: inside the refresh margin
	mu.Unlock()
	if _, err := c.Permission(testCtx(t), "alice"); err != nil {
		t.Fatalf("request after the refresh: %v", err)
	}
	mu.Lock()
	clock = time.Now() // back to the stand-in's time: the new token has its hour ahead
	mu.Unlock()
	second, err := c.Token(testCtx(t))
	if err != nil || second == first {
		t.Fatalf("token not refreshed (%v)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(masked, []string{first, second}) {
		t.Fatalf("OnToken saw %d tokens, want the two minted, whole", len(masked))
	}
	if n := len(w.sim.Tokens()); n != 2 {
		t.Fatalf("%d tokens minted, want 2", n)
	}
}

func TestExpiredTokenRefused(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	if _, err := c.Permission(testCtx(t), "alice"); err != nil {
		t.Fatal(err)
	}
	// The stand-in's clock moves past the token's expiry; the client's does not, so it still
	// sends the old token, which must be refused.
	later := time.Now().Add(2 * time.Hour)
	w.sim.SetNow(func() time.Time { return later })
	_, err := c.Permission(testCtx(t), "alice")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("expired token: err = %v", err)
	}
}

func TestEnterpriseBaseURL(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	var mu sync.Mutex
	var paths []string
	rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	c := w.mustApp(t, func(a *Auth) { a.BaseURL = w.url + "/api/v3"; a.Transport = rec })
	w.sim.SetFile(testRepo, "", ".github/poc.yml", []byte("ttl: 8h\n"))
	if b, err := c.RepoFile(testCtx(t), ".github/poc.yml", ""); err != nil || string(b) != "ttl: 8h\n" {
		t.Fatalf("RepoFile over /api/v3: %q %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 4 {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		if !strings.HasPrefix(p, "/api/v3/") {
			t.Fatalf("path %s lacks the /api/v3 prefix (all: %v)", p, paths)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestPermission(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	tests := []struct{ login, want string }{
		{"alice", "admin"}, {"mia", "maintain"}, {"walt", "write"}, {"tria", "triage"}, {"rita", "read"},
		{"stranger", "read"}, // a public repository's non-collaborator
		{"ghost-user", "none"},
	}
	for _, tc := range tests {
		got, err := c.Permission(testCtx(t), tc.login)
		if err != nil || got != tc.want {
			t.Errorf("Permission(%s) = %q, %v; want %q", tc.login, got, err, tc.want)
		}
	}
}

func TestCommentsAndReactions(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	n := w.sim.AddIssue(testRepo, simgh.Issue{Title: "poc", Author: "alice"})
	userComment := w.sim.AddComment(testRepo, n, "alice", "/poc up")

	if err := c.React(ctx, userComment, ReactionEyes); err != nil {
		t.Fatal(err)
	}
	if err := c.React(ctx, userComment, ReactionEyes); err != nil { // idempotent on GitHub
		t.Fatal(err)
	}
	if err := c.ReactIssue(ctx, n, ReactionRocket); err != nil {
		t.Fatal(err)
	}
	if err := c.React(ctx, userComment, "thumbs"); err == nil || !strings.Contains(err.Error(), "422") {
		t.Fatalf("invalid reaction: %v", err)
	}
	var got []string
	for _, r := range w.sim.Reactions(testRepo, n) {
		got = append(got, fmt.Sprintf("%d:%s:%s", r.CommentID, r.Content, r.User))
	}
	want := []string{fmt.Sprintf("%d:eyes:pocbot[bot]", userComment), "0:rocket:pocbot[bot]"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("reactions %v, want %v", got, want)
	}

	cm, err := c.CreateComment(ctx, n, "hello <!-- m -->")
	if err != nil || cm.Author != "pocbot[bot]" || !cm.AuthorIsBot || cm.URL == "" {
		t.Fatalf("CreateComment: %+v %v", cm, err)
	}
	if _, err := c.EditComment(ctx, cm.ID, "edited <!-- m -->"); err != nil {
		t.Fatal(err)
	}
	if g, err := c.GetComment(ctx, cm.ID); err != nil || g.Body != "edited <!-- m -->" {
		t.Fatalf("GetComment: %+v %v", g, err)
	}
	if _, err := c.CreateComment(ctx, n, strings.Repeat("é", MaxCommentChars+1)); err == nil {
		t.Fatal("an over-long body must be refused before the call")
	}
	if _, err := c.CreateComment(ctx, 9999, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("comment on a missing issue: %v", err)
	}
	if _, err := c.EditComment(ctx, 123456789, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("edit a missing comment: %v", err)
	}
	cs := w.sim.Comments(testRepo, n)
	if len(cs) != 2 || cs[1].Edits != 1 {
		t.Fatalf("comments %+v", cs)
	}
}

func TestFindCommentPaginatesNewestFirst(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	n := w.sim.AddIssue(testRepo, simgh.Issue{Title: "busy"})
	// 250 comments (3 pages of 100): the bot's marker at #5 (old) and #180 (newer), another
	// App's comment carrying the marker at #200 and a person quoting it at #240 (newer, must not
	// count: issue 11 hole 6).
	var want int64
	for i := 1; i <= 250; i++ {
		author, body := "alice", fmt.Sprintf("comment %d", i)
		switch i {
		case 5, 180:
			author, body = w.sim.BotLogin(), fmt.Sprintf("<!-- pocbot:status:x -->\nstatus %d", i)
		case 200:
			author, body = "spoofer[bot]", "<!-- pocbot:status:x -->\n<!-- pocbot:serial=9223372036854775807 -->"
		case 240:
			body = "> <!-- pocbot:status:x --> quoting the bot"
		}
		id := w.sim.AddComment(testRepo, n, author, body)
		if i == 180 {
			want = id
		}
	}
	start := len(w.sim.Requests())
	got, ok, err := c.FindComment(ctx, n, "<!-- pocbot:status:x -->")
	if err != nil || !ok || got.ID != want {
		t.Fatalf("FindComment = %+v %v %v, want id %d", got, ok, err, want)
	}
	var pages []string
	for _, r := range w.sim.Requests()[start:] {
		if strings.HasSuffix(r.Path, "/comments") {
			pages = append(pages, r.Query)
		}
	}
	// page 1 (to learn the last page), then page 3, then page 2 where it is found.
	if len(pages) != 3 || !strings.Contains(pages[1], "page=3") || !strings.Contains(pages[2], "page=2") {
		t.Fatalf("pages fetched: %v", pages)
	}
	if _, ok, err := c.FindComment(ctx, n, "<!-- absent -->"); ok || err != nil {
		t.Fatalf("absent marker: ok=%v err=%v", ok, err)
	}
}

func TestIssueState(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	issue := w.sim.AddIssue(testRepo, simgh.Issue{Labels: []string{"poc/keep"}})
	closedIssue := w.sim.AddIssue(testRepo, simgh.Issue{Closed: true})
	pr := w.sim.AddPR(testRepo, simgh.PR{Draft: true, Labels: []string{"poc"}})
	merged := w.sim.AddPR(testRepo, simgh.PR{Merged: true})
	tests := []struct {
		number                int
		open, isPR, merged    bool
		labels                []string
		wantErrNotFoundForNum bool
	}{
		{number: issue, open: true, labels: []string{"poc/keep"}},
		{number: closedIssue},
		{number: pr, open: true, isPR: true, labels: []string{"poc"}},
		{number: merged, isPR: true, merged: true},
		{number: 777, wantErrNotFoundForNum: true},
	}
	for _, tc := range tests {
		open, isPR, m, labels, err := c.IssueState(testCtx(t), tc.number)
		if tc.wantErrNotFoundForNum {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("#%d: err = %v, want not found", tc.number, err)
			}
			continue
		}
		if err != nil || open != tc.open || isPR != tc.isPR || m != tc.merged || !reflect.DeepEqual(labels, tc.labels) {
			t.Errorf("#%d: open=%v pr=%v merged=%v labels=%v err=%v; want %+v", tc.number, open, isPR, m, labels, err, tc)
		}
	}
	in, err := c.Issue(testCtx(t), pr)
	if err != nil || !in.Draft {
		t.Fatalf("Issue(pr) = %+v %v", in, err)
	}
	// Labels round trip.
	ctx := testCtx(t)
	if err := c.AddLabel(ctx, issue, "poc"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, issue, "poc/keep"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, issue, "poc/keep"); err != nil {
		t.Fatalf("removing an absent label: %v", err)
	}
	if got := w.sim.Labels(testRepo, issue); !reflect.DeepEqual(got, []string{"poc"}) {
		t.Fatalf("labels %v", got)
	}
}

func TestUserSSHKeysAndRepoFile(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	var want []string
	for i := range 105 { // more than one page
		k := fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%03d", i)
		w.sim.AddUserKey("alice", k)
		want = append(want, k)
	}
	got, err := c.UserSSHKeys(ctx, "alice")
	sort.Strings(got)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("UserSSHKeys: %d keys, err %v", len(got), err)
	}
	if got, err := c.UserSSHKeys(ctx, "walt"); err != nil || len(got) != 0 {
		t.Fatalf("no keys: %v %v", got, err)
	}
	if _, err := c.UserSSHKeys(ctx, "ghost-user"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}

	big := bytes.Repeat([]byte("pull_requests: always\n"), 100)
	w.sim.SetFile(testRepo, "", ".github/poc.yml", big)
	w.sim.SetFile(testRepo, "feature", ".github/poc.yml", []byte("evil: true\n"))
	tests := []struct {
		ref, want string
		notFound  bool
	}{
		{ref: "", want: string(big)}, // default branch "trunk", resolved through the API
		{ref: "feature", want: "evil: true\n"},
		{ref: "nope", notFound: true},
	}
	for _, tc := range tests {
		b, err := c.RepoFile(ctx, ".github/poc.yml", tc.ref)
		if tc.notFound {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("ref %q: err %v, want not found", tc.ref, err)
			}
			continue
		}
		if err != nil || string(b) != tc.want {
			t.Errorf("ref %q: %d bytes, err %v", tc.ref, len(b), err)
		}
	}
	if b, err := c.DefaultBranch(ctx); err != nil || b != "trunk" {
		t.Fatalf("DefaultBranch %q %v", b, err)
	}
}

func TestTokenMode(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	w.sim.AddToken("ghs_workflowtoken0000000000000000000000", "github-actions[bot]", testRepo)
	var logs bytes.Buffer
	c, err := NewClient(testCtx(t), Auth{Token: "ghs_workflowtoken0000000000000000000000", Owner: "acme", Repo: "web",
		BaseURL: w.url, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode() != ModeToken || !strings.Contains(logs.String(), "lesser mode") || strings.Contains(logs.String(), "ghs_") {
		t.Fatalf("mode %s, log %q", c.Mode(), logs.String())
	}
	n := w.sim.AddIssue(testRepo, simgh.Issue{})
	cm, err := c.CreateComment(testCtx(t), n, "hi")
	if err != nil || cm.Author != "github-actions[bot]" || !cm.AuthorIsBot {
		t.Fatalf("token-mode comment %+v %v", cm, err)
	}
	bad, err := NewClient(testCtx(t), Auth{Token: "ghs_wrong", Owner: "acme", Repo: "web", BaseURL: w.url, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Permission(testCtx(t), "alice"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	sl := &sleeps{}
	c := w.mustApp(t, func(a *Auth) { a.Retry = sl.policy() })
	ctx := testCtx(t)
	n := w.sim.AddIssue(testRepo, simgh.Issue{})
	count := func(method, sub string) int {
		k := 0
		for _, r := range w.sim.Requests() {
			if r.Method == method && strings.Contains(r.Path, sub) {
				k++
			}
		}
		return k
	}

	// Two 502s on a GET, then success.
	w.sim.Inject(simgh.Fault{Method: "GET", PathContains: "/collaborators/", Status: 502, Times: 2})
	if p, err := c.Permission(ctx, "walt"); err != nil || p != "write" {
		t.Fatalf("after 5xx: %q %v", p, err)
	}
	if k := count("GET", "/collaborators/"); k != 3 {
		t.Fatalf("%d tries, want 3", k)
	}
	// The bound: 4 tries, then the 502 is reported.
	w.sim.Inject(simgh.Fault{Method: "GET", PathContains: "/users/alice/keys", Status: 503, Times: 10})
	if _, err := c.UserSSHKeys(ctx, "alice"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("persistent 503: %v", err)
	}
	if k := count("GET", "/users/alice/keys"); k != 4 {
		t.Fatalf("%d tries, want 4", k)
	}
	// A 502 on "create comment": the comments are searched for it, then it is sent again.
	w.sim.Inject(simgh.Fault{Method: "POST", PathContains: "/comments", Status: 502})
	if cm, err := c.CreateComment(ctx, n, "once"); err != nil || !strings.HasPrefix(cm.Body, "once\n<!-- pocbot:post=") {
		t.Fatalf("create after a 502 that did not take effect: %+v %v", cm, err)
	}
	if k := count("POST", "/comments"); k != 2 {
		t.Fatalf("create comment tried %d times, want 2", k)
	}
	if cs := w.sim.Comments(testRepo, n); len(cs) != 1 {
		t.Fatalf("%d comments after a 502 then a success, want 1", len(cs))
	}
	n = w.sim.AddIssue(testRepo, simgh.Issue{})
	// A secondary rate limit refused the request outright: wait Retry-After, try again.
	sl.mu.Lock()
	sl.d = nil
	sl.mu.Unlock()
	w.sim.Inject(simgh.Fault{Method: "POST", PathContains: "/comments", SecondaryRateLimit: true, RetryAfter: 3 * time.Second})
	if _, err := c.CreateComment(ctx, n, "after rate limit"); err != nil {
		t.Fatal(err)
	}
	sl.mu.Lock()
	if len(sl.d) != 1 || sl.d[0] != 3*time.Second {
		t.Fatalf("waits %v, want [3s]", sl.d)
	}
	sl.mu.Unlock()
	if cs := w.sim.Comments(testRepo, n); len(cs) != 1 || !strings.HasPrefix(cs[0].Body, "after rate limit\n<!-- pocbot:post=") {
		t.Fatalf("comments %+v", cs)
	}
	// A plain 403 (permission) is not retried.
	before := count("GET", "/pulls/")
	w.sim.Inject(simgh.Fault{Method: "GET", PathContains: "/pulls/", Status: 403})
	pr := w.sim.AddPR(testRepo, simgh.PR{})
	if _, err := c.Issue(ctx, pr); err == nil {
		t.Fatal("403 should fail")
	}
	if k := count("GET", "/pulls/") - before; k != 1 {
		t.Fatalf("403 tried %d times", k)
	}
	// A wait beyond MaxDelay is not waited for: the error says it is GitHub's limit and how long
	// it asks for. Until then this client's writes are refused without being sent (GitHub asks
	// not to retry before); reads, which create no content, still go.
	w.sim.Inject(simgh.Fault{Method: "POST", PathContains: "/comments", SecondaryRateLimit: true, RetryAfter: 10 * time.Minute})
	_, err := c.CreateComment(ctx, n, "x")
	if err == nil || !strings.Contains(err.Error(), "secondary rate limit: GitHub asks to wait 10m0s") ||
		!strings.Contains(err.Error(), "run the command again later") || strings.Contains(err.Error(), "not permitted") {
		t.Fatalf("long rate limit: %v", err)
	}
	before = len(w.sim.Requests())
	if err := c.ReactIssue(ctx, n, ReactionEyes); err == nil || !strings.Contains(err.Error(), "secondary rate limit") || len(w.sim.Requests()) != before {
		t.Fatalf("a write during the limit: err %v, %d requests sent", err, len(w.sim.Requests())-before)
	}
	if _, err := c.Permission(ctx, "walt"); err != nil || len(w.sim.Requests()) != before+1 {
		t.Fatalf("a read during the limit: err %v, %d requests sent", err, len(w.sim.Requests())-before)
	}
}

// BenchmarkAuthAndReact measures what precedes the 👀 reaction: installation look-up, token
// minting, and the reaction itself, against the loopback stand-in.
func BenchmarkAuthAndReact(b *testing.B) {
	sim, url := startSim(b, simgh.Options{})
	ctx := b.Context()
	sim.AddRepo(testRepo, "main")
	n := sim.AddIssue(testRepo, simgh.Issue{})
	id := sim.AddComment(testRepo, n, "alice", "/poc up")
	b.ResetTimer()
	for range b.N {
		c, err := NewClient(ctx, Auth{AppID: sim.AppID(), PrivateKeyPEM: sim.AppPrivateKeyPEM(), Owner: "acme", Repo: "web",
			BaseURL: url, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.React(ctx, id, ReactionEyes); err != nil {
			b.Fatal(err)
		}
	}
}

// A request GitHub holds without answering is abandoned after the attempt timeout: a read is
// tried again; a comment creation is not (it may still be created) and its error says so.
func TestStalledRequests(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, func(a *Auth) {
		a.Retry = RetryPolicy{BaseDelay: time.Millisecond, AttemptTimeout: 300 * time.Millisecond}
	})
	ctx := testCtx(t)
	n := w.sim.AddIssue(testRepo, simgh.Issue{})

	w.sim.Inject(simgh.Fault{Method: "GET", PathContains: "/collaborators/", Stall: 2 * time.Second})
	t0 := time.Now()
	if p, err := c.Permission(ctx, "walt"); err != nil || p != "write" {
		t.Fatalf("a read stalled once: %q %v", p, err)
	}
	if d := time.Since(t0); d >= 2*time.Second {
		t.Errorf("the stalled read was waited for (%s), not abandoned after 300ms", d)
	}

	w.sim.Inject(simgh.Fault{Method: "POST", PathContains: "/comments", Stall: 2 * time.Second})
	_, err := c.CreateComment(ctx, n, "late")
	if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("a stalled comment creation: %v, want an error saying GitHub gave no answer", err)
	}
}

// A comment creation answered with a 5xx may have taken effect: it is looked for by its post
// marker, and sent again only when it is not there. Every case ends with exactly one comment
// (or a clear error), never two.
func TestCreateCommentAfterA5xx(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		faults    []simgh.Fault
		wantPosts int
		wantErr   string // "" = created
	}{
		{"took effect, answered 502", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 502, AfterEffect: true}}, 1, ""},
		{"refused 503, then took effect and answered 500", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 503},
			{Method: "POST", PathContains: "/comments", Status: 500, AfterEffect: true}}, 2, ""},
		{"refused 503 three times", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 503, Times: 3}}, 4, ""},
		{"refused 503 every time", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 503, Times: 10}}, 4, "503"},
		{"the search fails too", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 503},
			{Method: "GET", PathContains: "/comments", Status: 404}}, 1, "look for a duplicate"},
		{"a 422 is not retried", []simgh.Fault{{Method: "POST", PathContains: "/comments", Status: 422}}, 1, "422"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := startWorld(t)
			c := w.mustApp(t, func(a *Auth) { a.Retry = (&sleeps{}).policy() })
			ctx := testCtx(t)
			n := w.sim.AddIssue(testRepo, simgh.Issue{})
			for _, f := range tc.faults {
				w.sim.Inject(f)
			}
			cm, err := c.CreateComment(ctx, n, "hello")
			posts := 0
			for _, r := range w.sim.Requests() {
				if r.Method == "POST" && strings.HasSuffix(r.Path, "/comments") {
					posts++
				}
			}
			cs := w.sim.Comments(testRepo, n)
			if posts != tc.wantPosts {
				t.Errorf("%d creations sent, want %d", posts, tc.wantPosts)
			}
			if errorWanted(t, err, tc.wantErr) {
				return
			}
			if len(cs) != 1 || cs[0].ID != cm.ID || !strings.HasPrefix(cs[0].Body, "hello\n<!-- pocbot:post=") {
				t.Fatalf("comments %+v, returned %+v: want exactly the one created", cs, cm)
			}
		})
	}
}
