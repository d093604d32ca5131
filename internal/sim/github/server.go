package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/sim/loopback"
)

// Options configure a stand-in. The zero value is usable.
type Options struct {
	AppID    int64            // default 424242
	AppSlug  string           // default "pocbot"
	Now      func() time.Time // default time.Now; tests pass a controllable clock
	TokenTTL time.Duration    // installation token lifetime; default 1 h, like GitHub
	// Grant is what the App was granted at installation (permission name → read|write).
	// Default: the App manifest's set (deploy/app-manifest.json): issues, pull_requests,
	// deployments, checks, actions write; metadata, contents read.
	Grant  map[string]string
	Logger *slog.Logger
	// TokenFormat is the shape of minted installation tokens: stateless ghs_<app id>_<JWT>
	// (the zero value, GitHub's default since its rollout) or TokenClassic (40 characters).
	TokenFormat TokenFormat
	// ContentLimit is the secondary rate limit on content-generating requests; the zero value
	// is GitHub's documented 80 a minute and 500 an hour.
	ContentLimit ContentLimit
	// BodyUnit is how the 65,536-character limit on issue and comment bodies is counted
	// (default: UTF-8 bytes, the strictest reading).
	BodyUnit BodyUnit
	// SearchLag is how long after its creation an issue is found by search (0:
	// DefaultSearchLag; NoSearchLag: at once).
	SearchLag time.Duration
	// CompareBaseTip plays register row compare-base's base-tip reading: GET …/compare/{base}...
	// {head} lists head's files against base's current tip, not against the merge base.
	CompareBaseTip bool
}

// DefaultSearchLag is how long a new issue stays out of the search index by default: GitHub's
// search is eventually consistent, and its lag has been seen from seconds to minutes.
const DefaultSearchLag = time.Minute

// NoSearchLag makes search find an issue as soon as it exists.
const NoSearchLag time.Duration = -1

// Server is the GitHub API stand-in. It is an http.Handler, so it can be mounted on an
// httptest.Server, or started on loopback with Start.
type Server struct {
	mu       sync.Mutex
	appID    int64
	appSlug  string
	key      *rsa.PrivateKey
	grant    map[string]string
	now      func() time.Time
	tokenTTL time.Duration
	log      *slog.Logger
	minter   tokenMinter
	limiter  *contentLimiter
	bodyUnit BodyUnit
	// compareBaseTip: register row compare-base plays base-tip (Options.CompareBaseTip).
	compareBaseTip bool
	// searchLag: an issue is searchable this long after its creation.
	searchLag time.Duration

	nextID        int64
	installations map[string]int64 // owner (lower) → installation id
	repos         map[string]*repo // "owner/name" (lower)
	users         map[string]*user // login (lower)
	tokens        map[string]*token
	comments      map[int64]*comment
	events        map[string][]issueEvent // "owner/name#n" (lower) → label events, oldest first
	hooks         []*hook
	reactions     []Reaction
	requests      []Request
	faults        []*Fault
	manifest      manifestState // the App manifest flow (manifest.go)
	dispatches    []Dispatch    // repository_dispatch events (prs.go)
	// workflowDispatches are the workflow_dispatch events (workflowdispatch.go).
	workflowDispatches []WorkflowDispatch
	oidc               *oidcIssuer // the Actions OIDC issuer (prs.go), made on first use

	// selected holds, for an installation on selected repositories only, those repositories
	// (lower full names); an installation absent here is on all of its owner's repositories.
	selected map[int64]map[string]bool
}

type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	private       bool
	freePlan      bool                         // owner on GitHub Free: no environments for a private repository
	admin         *repoAdmin                   // secrets, environments, branches (admin.go)
	files         map[string]map[string][]byte // branch → path → content
	perms         map[string]string            // login (lower) → role
	issues        map[int]*issue
	nextNumber    int
	pr            *prState // workflow runs, check runs, deployments (prs.go)
}

func (r *repo) fullName() string { return r.owner + "/" + r.name }

type user struct {
	id    int64
	login string
	typ   string
	keys  []sshKey
}

type sshKey struct {
	id  int64
	key string
}

type issue struct {
	number   int
	title    string
	body     string
	author   string
	state    string // open | closed
	labels   []string
	isPR     bool
	draft    bool
	merged   bool
	fork     bool
	headSHA  string
	headRef  string
	comments []int64
	closedAt time.Time
	created  time.Time
}

type comment struct {
	Comment
}

type token struct {
	value          string
	installationID int64 // 0 for static tokens
	user           bool  // a user's personal token (AddUserToken): acts with the user's role
	kind           UserTokenKind
	scopes         []string // a classic or OAuth token's scopes
	workflows      bool     // a fine-grained token's Workflows permission
	login, typ     string
	repos          map[string]bool // full names (lower); empty = every repo of the installation
	perms          map[string]string
	expires        time.Time
}

// Comment is a recorded issue or pull-request comment.
type Comment struct {
	ID         int64
	Repo       string
	Number     int
	Body       string
	Author     string
	AuthorType string // "User" or "Bot"
	Created    time.Time
	Updated    time.Time
	Edits      int // how many times it was edited after creation
}

// Reaction is a recorded reaction, on an issue (CommentID 0) or on one of its comments.
type Reaction struct {
	ID        int64
	Repo      string
	Number    int
	CommentID int64
	Content   string
	User      string
	At        time.Time
}

// Request is one recorded API call.
type Request struct {
	Method string
	Path   string // without the /api/v3 prefix
	Query  string
	Auth   string // "jwt", "token", "none" or "invalid"
	Status int
	At     time.Time
}

// Fault makes the next Times requests matching Method (empty: any) and PathContains fail with
// Status. SecondaryRateLimit answers the way GitHub signals one (403 + Retry-After + message).
type Fault struct {
	Method             string
	PathContains       string
	Status             int
	RetryAfter         time.Duration
	SecondaryRateLimit bool
	// Answer is how a SecondaryRateLimit fault says when to retry (RetryAfter is the wait).
	Answer LimitAnswer
	Times  int
	// Stall holds the request this long, then serves it normally — whether or not the client is
	// still waiting: a request that times out on the client's side may still take effect.
	Stall time.Duration
	// AfterEffect serves the request (it takes effect), then answers Status instead of its
	// result: the front end's answer was lost, the work was done.
	AfterEffect bool
}

// TokenInfo describes a minted or registered token (for assertions on narrowing).
type TokenInfo struct {
	Value          string
	InstallationID int64
	Repos          []string
	Permissions    map[string]string
	Expires        time.Time
}

// New creates a stand-in with a freshly generated App key pair.
func New(opts Options) (*Server, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("sim/github: generate the App's RSA key: %w", err)
	}
	s := &Server{
		appID:         opts.AppID,
		appSlug:       opts.AppSlug,
		key:           key,
		grant:         opts.Grant,
		now:           opts.Now,
		tokenTTL:      opts.TokenTTL,
		log:           opts.Logger,
		nextID:        1000,
		installations: map[string]int64{},
		selected:      map[int64]map[string]bool{},
		repos:         map[string]*repo{},
		users:         map[string]*user{},
		tokens:        map[string]*token{},
		comments:      map[int64]*comment{},
		events:        map[string][]issueEvent{},
	}
	if s.appID == 0 {
		s.appID = 424242
	}
	if s.appSlug == "" {
		s.appSlug = "pocbot"
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.tokenTTL == 0 {
		s.tokenTTL = time.Hour
	}
	if s.grant == nil {
		s.grant = map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read",
			"deployments": "write", "checks": "write", "actions": "write"}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.minter, err = newTokenMinter(opts.TokenFormat); err != nil {
		return nil, err
	}
	s.limiter = &contentLimiter{cfg: opts.ContentLimit.withDefaults(), seen: map[string][]time.Time{}}
	s.bodyUnit = opts.BodyUnit
	s.compareBaseTip = opts.CompareBaseTip
	switch s.searchLag = opts.SearchLag; {
	case s.searchLag == 0:
		s.searchLag = DefaultSearchLag
	case s.searchLag < 0:
		s.searchLag = 0
	}
	return s, nil
}

// Start serves the stand-in on a loopback port until stop is called or ctx ends. url has no
// trailing slash and no /api/v3 prefix (both forms are accepted).
func (s *Server) Start(ctx context.Context) (url string, stop func(), err error) {
	url, stopServe, err := loopback.ServeHTTP(ctx, s, s.log, "sim/github")
	if err != nil {
		return "", nil, err
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stopServe()
		case <-stopped:
		}
	}()
	var once sync.Once
	return url, func() { once.Do(func() { stopServe(); close(stopped) }) }, nil
}

// TB is what ServeFor needs of a test (testing.TB has it).
type TB interface {
	Helper()
	Fatal(args ...any)
	Context() context.Context
	Cleanup(func())
}

// ServeFor starts the stand-in made with opts on loopback (Start: the real client's API and web
// URL both) until the test t ends; it returns the stand-in and its URL.
func ServeFor(t TB, opts Options) (*Server, string) {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s, url
}

// SetNow replaces the clock (tokens and JWTs are checked against it).
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// AppID returns the App's id.
func (s *Server) AppID() int64 { return s.appID }

// AppSlug returns the App's slug; its comments are authored by AppSlug()+"[bot]".
func (s *Server) AppSlug() string { return s.appSlug }

// BotLogin is the login the App's comments carry.
func (s *Server) BotLogin() string { return s.appSlug + "[bot]" }

// AppPrivateKeyPEM returns the App's private key as PKCS#1 PEM (what GitHub hands out).
func (s *Server) AppPrivateKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)})
}

func (s *Server) id() int64 {
	s.nextID++
	return s.nextID
}

func lower(v string) string { return strings.ToLower(v) }

// AddRepo creates repository "owner/name" with the App installed on its owner, and returns the
// installation id (shared by every repository of that owner).
func (s *Server) AddRepo(fullName, defaultBranch string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok {
		panic("sim/github: AddRepo wants owner/name, got " + fullName)
	}
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	if _, ok := s.repos[lower(fullName)]; !ok {
		s.repos[lower(fullName)] = &repo{
			id: s.id(), owner: owner, name: name, defaultBranch: defaultBranch,
			files: map[string]map[string][]byte{}, perms: map[string]string{}, issues: map[int]*issue{},
		}
	}
	inst, ok := s.installations[lower(owner)]
	if !ok {
		inst = s.id()
		s.installations[lower(owner)] = inst
	}
	return inst
}

// Uninstall removes the App's installation from the owner of fullName.
func (s *Server) Uninstall(fullName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, _, _ := strings.Cut(fullName, "/")
	delete(s.installations, lower(owner))
}

// SelectRepositories makes the installation on the owner of fullNames one on selected
// repositories only, those given (GitHub's "Only select repositories"); the others of that owner
// are no longer covered until added (PUT /user/installations/{id}/repositories/{repository_id}).
func (s *Server) SelectRepositories(fullNames ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range fullNames {
		r := s.mustRepo(n)
		inst := s.installations[lower(r.owner)]
		if inst == 0 {
			panic("sim/github: SelectRepositories: the App is not installed on " + r.owner)
		}
		if s.selected[inst] == nil {
			s.selected[inst] = map[string]bool{}
		}
		s.selected[inst][lower(r.fullName())] = true
	}
}

// installedOn is the installation covering r (0 if none): its owner's, unless that one is on
// selected repositories that do not include r.
func (s *Server) installedOn(r *repo) int64 {
	inst := s.installations[lower(r.owner)]
	if sel, ok := s.selected[inst]; ok && !sel[lower(r.fullName())] {
		return 0
	}
	return inst
}

// InstallationID returns the installation covering fullName (0 if none).
func (s *Server) InstallationID(fullName string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.repos[lower(fullName)]; ok {
		return s.installedOn(r)
	}
	owner, _, _ := strings.Cut(fullName, "/")
	return s.installations[lower(owner)]
}

// mustIssue is issue number of fullName and its repository; it panics on an unknown one (a test's
// mistake). Caller holds s.mu.
func (s *Server) mustIssue(fullName string, number int) (*repo, *issue) {
	r := s.mustRepo(fullName)
	is := r.issues[number]
	if is == nil {
		panic(fmt.Sprintf("sim/github: unknown issue %s#%d", fullName, number))
	}
	return r, is
}

func (s *Server) mustRepo(fullName string) *repo {
	r, ok := s.repos[lower(fullName)]
	if !ok {
		panic("sim/github: unknown repository " + fullName + " (AddRepo first)")
	}
	return r
}

func (s *Server) userLocked(login string) *user {
	u, ok := s.users[lower(login)]
	if !ok {
		typ := "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
		u = &user{id: s.id(), login: login, typ: typ}
		s.users[lower(login)] = u
	}
	return u
}

// SetPermission gives login a role on the repository: admin, maintain, write, triage, read or none.
func (s *Server) SetPermission(fullName, login, role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(login)
	s.mustRepo(fullName).perms[lower(login)] = role
}

// AddUser makes login known (a GitHub user with no role anywhere).
func (s *Server) AddUser(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(login)
}

// AddUserKey adds a public SSH key ("ssh-ed25519 AAAA…") to login's GitHub account.
func (s *Server) AddUserKey(login, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userLocked(login)
	u.keys = append(u.keys, sshKey{id: s.id(), key: strings.TrimSpace(key)})
}

// SetFile stores a file on a branch ("" = the default branch).
func (s *Server) SetFile(fullName, branch, path string, content []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	if branch == "" {
		branch = r.defaultBranch
	}
	if r.files[branch] == nil {
		r.files[branch] = map[string][]byte{}
	}
	before := maps.Clone(r.files[branch])
	p := strings.Trim(path, "/")
	r.files[branch][p] = append([]byte(nil), content...)
	s.noteCommitLocked(r, branch, before, "Update "+p, r.owner)
}

// Issue seeds an issue.
type Issue struct {
	Number int    // 0: next free number
	Title  string //
	Body   string
	Author string
	Closed bool
	Labels []string
	// LabeledBy is who added Labels (a "labeled" event each); "": the author, else the owner.
	LabeledBy string
}

// PR seeds a pull request.
type PR struct {
	Number  int
	Title   string
	Author  string
	Closed  bool
	Merged  bool
	Draft   bool
	Fork    bool // head repository is a fork
	HeadSHA string
	Labels  []string
	// LabeledBy is who added Labels (a "labeled" event each); "": the author, else the owner.
	LabeledBy string
}

func (s *Server) addIssueLocked(r *repo, is *issue) int {
	if is.number == 0 {
		r.nextNumber++
		is.number = r.nextNumber
	}
	if is.number > r.nextNumber {
		r.nextNumber = is.number
	}
	if is.author != "" {
		s.userLocked(is.author)
	}
	is.created = s.now()
	r.issues[is.number] = is
	return is.number
}

// AddIssue seeds an issue and returns its number.
func (s *Server) AddIssue(fullName string, in Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := "open"
	if in.Closed {
		st = "closed"
	}
	r := s.mustRepo(fullName)
	n := s.addIssueLocked(r, &issue{
		number: in.Number, title: in.Title, body: in.Body, author: in.Author, state: st, labels: append([]string(nil), in.Labels...),
	})
	s.seedLabelEventsLocked(r, n, in.LabeledBy, in.Author, in.Labels)
	return n
}

// AddPR seeds a pull request and returns its number.
func (s *Server) AddPR(fullName string, in PR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := "open"
	if in.Closed || in.Merged {
		st = "closed"
	}
	sha := in.HeadSHA
	if sha == "" {
		sha = randomHex(20)
	}
	r := s.mustRepo(fullName)
	n := s.addIssueLocked(r, &issue{
		number: in.Number, title: in.Title, author: in.Author, state: st, labels: append([]string(nil), in.Labels...),
		isPR: true, draft: in.Draft, merged: in.Merged, fork: in.Fork, headSHA: sha, headRef: "feature",
	})
	s.seedLabelEventsLocked(r, n, in.LabeledBy, in.Author, in.Labels)
	return n
}

// SetIssueState closes or reopens an issue or PR; merged only applies to PRs (and closes them).
func (s *Server) SetIssueState(fullName string, number int, open, merged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, is := s.mustIssue(fullName, number)
	is.state = "closed"
	if open && !merged {
		is.state = "open"
		is.closedAt = time.Time{}
	} else {
		is.closedAt = s.now()
	}
	is.merged = is.isPR && merged
}

// SetLabels replaces the labels of an issue or PR, as the repository's owner (labeled and
// unlabeled events name the owner as actor).
func (s *Server) SetLabels(fullName string, number int, labels ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, is := s.mustIssue(fullName, number)
	s.setLabelsLocked(r, is, r.owner, labels)
}

// Labels returns the labels of an issue or PR.
func (s *Server) Labels(fullName string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is := s.mustRepo(fullName).issues[number]; is != nil {
		return append([]string(nil), is.labels...)
	}
	return nil
}

// AddComment seeds a comment by author (e.g. the user's "/poc up") and returns its id.
func (s *Server) AddComment(fullName string, number int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, is := s.mustIssue(fullName, number)
	u := s.userLocked(author)
	return s.addCommentLocked(r, is, u.login, u.typ, body).ID
}

func (s *Server) addCommentLocked(r *repo, is *issue, login, typ, body string) *comment {
	now := s.now()
	c := &comment{Comment{ID: s.id(), Repo: r.fullName(), Number: is.number, Body: body,
		Author: login, AuthorType: typ, Created: now, Updated: now}}
	s.comments[c.ID] = c
	is.comments = append(is.comments, c.ID)
	return c
}

// AddToken registers a static token acting as login (e.g. an Actions GITHUB_TOKEN, login
// "github-actions[bot]") with write access to the listed repositories (none: every repository).
func (s *Server) AddToken(value, login string, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userLocked(login)
	t := &token{value: value, login: u.login, typ: u.typ, repos: map[string]bool{},
		perms:   map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read"},
		expires: s.now().Add(100 * 365 * 24 * time.Hour)}
	for _, r := range repos {
		t.repos[lower(r)] = true
	}
	s.tokens[value] = t
}

// Inject queues a fault.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Times == 0 {
		f.Times = 1
	}
	s.faults = append(s.faults, &f)
}

// Comments returns the comments of an issue or PR, oldest first.
func (s *Server) Comments(fullName string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.repos[lower(fullName)]
	if !ok || r.issues[number] == nil {
		return nil
	}
	var out []Comment
	for _, id := range r.issues[number].comments {
		if c, ok := s.comments[id]; ok {
			out = append(out, c.Comment)
		}
	}
	return out
}

// AllComments returns every comment of every repository, oldest first.
func (s *Server) AllComments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Comment, 0, len(s.comments))
	for _, c := range s.comments {
		out = append(out, c.Comment)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Reactions returns the reactions on an issue or PR and on its comments, in order.
func (s *Server) Reactions(fullName string, number int) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Reaction
	for _, re := range s.reactions {
		if strings.EqualFold(re.Repo, fullName) && re.Number == number {
			out = append(out, re)
		}
	}
	return out
}

// Requests returns every recorded call, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Tokens returns the tokens minted or registered so far.
func (s *Server) Tokens() []TokenInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TokenInfo
	for _, t := range s.tokens {
		ti := TokenInfo{Value: t.value, InstallationID: t.installationID, Permissions: map[string]string{}, Expires: t.expires}
		for r := range t.repos {
			ti.Repos = append(ti.Repos, r)
		}
		sort.Strings(ti.Repos)
		for k, v := range t.perms {
			ti.Permissions[k] = v
		}
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Expires.Before(out[j].Expires) })
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// WriteAppKeyFile writes the App's private key to dir/pocbot-app.pem (mode 0600) and returns
// its path, for POC_APP_PRIVATE_KEY_FILE (`bot sim`).
func (s *Server) WriteAppKeyFile(dir string) (string, error) {
	p := filepath.Join(dir, "pocbot-app.pem")
	if err := os.WriteFile(p, s.AppPrivateKeyPEM(), 0o600); err != nil {
		return "", fmt.Errorf("sim/github: write the App key to %s: %w", p, err)
	}
	return p, nil
}
