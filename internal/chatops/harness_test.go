package chatops_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops/opstest"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/repoconfig"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
	"github.com/pocbot/pocbot/internal/sim/syncio"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// harness is the GitHub stand-in and a backend, with GitHub clients, shared by the scenarios of a
// test: on an emulated world (an up takes seconds; a world per scenario would not fit the time
// budget), or, light, on clusterops without a world (opstest: graphs that do nothing, a counted
// store) for the questions that are the bot's replies and decisions, not the engine's.
type harness struct {
	t       *testing.T
	w       *world.World  // nil when light
	fake    *opstest.Fake // nil on a world
	gh      *ghsim.Server
	ghURL   string
	backend *chatops.Backend
	logs    *syncio.Buffer
	log     *slog.Logger
	opens   int
	mu      sync.Mutex
	runID   int
	clients map[string]*github.Client
	// The Actions stdout, step outputs and job summary of the last handler made: each handler
	// writes buffers of its own, since a test's runs may overlap (a handler waiting on a lock
	// writes while the next one starts).
	actions, output, summary *bytes.Buffer
}

// scene is how a scenario starts: one repository with the App installed, its users'
// permissions, issues opened by its first user and its .github/poc.yml, in a world of its own.
type scene struct {
	repo    string
	users   []string // "login:permission"; the first one opens the issues
	issues  []int
	config  string        // .github/poc.yml on the default branch (sceneConfig)
	timeout time.Duration // of the scenario's context; a minute when 0
	world   world.Options
	// light: no world (newLight); world is then unused.
	light bool
}

// open starts the scene: its harness, and a context that ends at the scene's timeout.
func (s scene) open(t *testing.T) (*harness, context.Context) {
	t.Helper()
	var h *harness
	if s.light {
		h = newLight(t)
	} else {
		h = newHarnessIn(t, s.world)
	}
	ctx, cancel := context.WithTimeout(t.Context(), cmp.Or(s.timeout, time.Minute))
	t.Cleanup(cancel)
	if s.repo == "" {
		return h, ctx
	}
	gh := h.gh
	h.repo(s.repo)
	author := ""
	for i, u := range s.users {
		login, perm, _ := strings.Cut(u, ":")
		gh.SetPermission(s.repo, login, perm)
		if i == 0 {
			author = login
		}
	}
	for _, n := range s.issues {
		gh.AddIssue(s.repo, ghsim.Issue{Number: n, Author: author})
	}
	gh.SetFile(s.repo, "", ".github/poc.yml", []byte(sceneConfig(s.config)))
	return h, ctx
}

// sceneConfig is a scene's .github/poc.yml: config, with an ECDSA service-account key unless
// config chooses one. An RSA-4096 key costs one to two seconds of CPU under -race, 13 % of this
// package's; TestServiceAccountKeySetting asks about the key, and a test that writes its own
// poc.yml builds with the default, RSA.
func sceneConfig(config string) string {
	if strings.Contains(config, "service_account_key:") {
		return config
	}
	return "service_account_key: ecdsa\n" + config
}

// sceneBounds are the bounds a scene with config reads from its .github/poc.yml, what a spare
// that a comment's up should claim is built with.
func sceneBounds(t *testing.T, config string) repoconfig.RepoConfig {
	t.Helper()
	b, err := repoconfig.Parse([]byte(sceneConfig(config)))
	if err != nil {
		t.Fatalf("the scene's poc.yml: %v", err)
	}
	return b
}

// newHarnessIn starts a world with o's quotas, stock and faults, and a backend on it.
func newHarnessIn(t *testing.T, o world.Options) *harness {
	t.Helper()
	ctx := t.Context()
	// Every log line the handler, clusterops and the engine write, for the secret scan.
	logs := &syncio.Buffer{}
	if testing.Verbose() {
		logs.Tee = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	o.Dir, o.TimeFactor, o.S3 = t.TempDir(), 0.005, "versitygw"
	w, err := world.Start(ctx, o)
	if err != nil {
		t.Fatalf("start the world: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	p := worldtest.New(t, w, worldtest.Options{Log: log})
	h := &harness{t: t, w: w, gh: w.GitHub, ghURL: w.GitHubURL, logs: logs, log: log, clients: map[string]*github.Client{}}
	h.backend = &chatops.Backend{Ops: p.Ops, Spec: p.Spec} // the parts wiring.Open made, as `bot handle` has them
	return h
}

// newLight is a harness without a world: the GitHub stand-in, and clusterops on a counted store
// whose graphs do nothing (opstest). Its clusters have no address and no node: what a test of it
// asks is the bot's decision and its replies.
func newLight(t *testing.T) *harness {
	t.Helper()
	logs := &syncio.Buffer{}
	if testing.Verbose() {
		logs.Tee = os.Stderr
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	gh, url := githubtest.Serve(t, ghsim.Options{Logger: log})
	f := opstest.New(t)
	f.Ops.Log, f.Ops.LockWait = log, time.Minute // as a world's (worldtest): runs at once take turns
	spec := provision.DefaultSpec()
	spec.ImageBucket = "pocbot-images"
	h := &harness{t: t, fake: f, gh: gh, ghURL: url, logs: logs, log: log, clients: map[string]*github.Client{}}
	h.backend = &chatops.Backend{Ops: f.Ops, Spec: spec}
	return h
}

// repo seeds a repository with the App installed and returns its installation id.
func (h *harness) repo(full string) int64 { return h.gh.AddRepo(full, "main") }

func (h *harness) client(full string) *github.Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.clients[full]; ok {
		return c
	}
	owner, name, _ := strings.Cut(full, "/")
	c, err := github.NewClient(h.t.Context(), github.Auth{AppID: h.gh.AppID(), PrivateKeyPEM: h.gh.AppPrivateKeyPEM(),
		Owner: owner, Repo: name, BaseURL: h.ghURL, Logger: h.log})
	if err != nil {
		h.t.Fatalf("github client for %s: %v", full, err)
	}
	h.clients[full] = c
	return c
}

// handler is what `bot handle` builds for one run: a fresh run id, the shared backend.
func (h *harness) handler(full string) *chatops.Handler {
	h.mu.Lock()
	h.runID++
	id := h.runID
	h.actions, h.output, h.summary = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	actions := &github.Actions{Stdout: h.actions, Output: h.output, Summary: h.summary}
	h.mu.Unlock()
	env := github.ActionsEnv{Repository: full, APIURL: h.ghURL, ServerURL: "https://github.com", RunID: strconv.Itoa(1000 + id), InActions: true}
	env.Owner, env.Repo, _ = strings.Cut(full, "/")
	return &chatops.Handler{
		GitHub:  h.client(full),
		Env:     env,
		Actions: actions,
		Open: func(context.Context) (*chatops.Backend, error) {
			h.mu.Lock()
			h.opens++
			h.mu.Unlock()
			return h.backend, nil
		},
		AppSlug:        h.gh.AppSlug(),
		Log:            h.log,
		Started:        time.Now(),
		StickyInterval: 100 * time.Millisecond,
		RefillWorkflow: "poc.yml", // as bot handle sets it
	}
}

// handlerWaiting is h.handler whose runs wait lockWait for a cluster lock another run holds.
func (h *harness) handlerWaiting(full string, lockWait time.Duration) *chatops.Handler {
	backend := *h.backend
	ops := *backend.Ops
	ops.LockWait = lockWait
	backend.Ops = &ops
	hd := h.handler(full)
	hd.Open = func(context.Context) (*chatops.Backend, error) { return &backend, nil }
	return hd
}

func (h *harness) handle(ctx context.Context, ev github.Event) (chatops.Outcome, error) {
	return h.handler(ev.FullName()).Handle(ctx, ev)
}

// comment seeds a comment on the stand-in and returns the issue_comment event GitHub would send,
// decoded from a payload of the real shape.
func (h *harness) comment(full string, number int, isPR bool, login, body string, labels ...string) github.Event {
	h.t.Helper()
	typ := "User"
	if strings.HasSuffix(login, "[bot]") {
		typ = "Bot"
	}
	id := h.gh.AddComment(full, number, login, body)
	owner, name, _ := strings.Cut(full, "/")
	// The account's immutable id, as GitHub puts it in sender.id (the requester is bound to it).
	user := map[string]any{"login": login, "id": h.gh.UserID(login), "type": typ}
	issue := map[string]any{"number": number, "state": "open", "labels": labelsJSON(labels), "user": user,
		"title": "POC", "html_url": "https://github.com/" + full + "/issues/" + strconv.Itoa(number)}
	if isPR {
		issue["pull_request"] = map[string]any{"url": "https://api.github.com/repos/" + full + "/pulls/" + strconv.Itoa(number)}
	}
	payload := map[string]any{
		"action": "created",
		"issue":  issue,
		"comment": map[string]any{"id": id, "body": body, "user": user, "author_association": "OWNER",
			"created_at": time.Now().UTC().Format(time.RFC3339)},
		"repository":   map[string]any{"id": 7, "name": name, "full_name": full, "owner": map[string]any{"login": owner}, "default_branch": "main"},
		"sender":       user,
		"installation": map[string]any{"id": h.gh.InstallationID(full)},
	}
	return h.decode("issue_comment", payload)
}

// prEvent is a pull_request_target event of the real shape.
func (h *harness) prEvent(full string, number int, action, label string, fork, draft, merged bool, sender string, labels ...string) github.Event {
	h.t.Helper()
	owner, name, _ := strings.Cut(full, "/")
	head := full
	if fork {
		head = "mallory/" + name
	}
	state := "open"
	if action == "closed" {
		state = "closed"
	}
	h.gh.AddUser(sender)
	user := map[string]any{"login": sender, "id": h.gh.UserID(sender), "type": "User"}
	repo := map[string]any{"id": 7, "name": name, "full_name": full, "owner": map[string]any{"login": owner}}
	payload := map[string]any{
		"action": action,
		"number": number,
		"pull_request": map[string]any{"number": number, "state": state, "draft": draft, "merged": merged, "labels": labelsJSON(labels),
			"head": map[string]any{"sha": "abc123", "repo": map[string]any{"full_name": head}},
			"base": map[string]any{"repo": repo}},
		"repository":   repo,
		"sender":       user,
		"installation": map[string]any{"id": h.gh.InstallationID(full)},
	}
	if label != "" {
		payload["label"] = map[string]any{"name": label}
	}
	return h.decode("pull_request_target", payload)
}

func (h *harness) decode(name string, payload map[string]any) github.Event {
	h.t.Helper()
	data, err := json.Marshal(payload)
	if err != nil {
		h.t.Fatal(err)
	}
	ev, err := github.DecodeEvent(name, data)
	if err != nil {
		h.t.Fatalf("decode %s: %v", name, err)
	}
	return ev
}

func labelsJSON(names []string) []map[string]any {
	out := []map[string]any{}
	for _, n := range names {
		out = append(out, map[string]any{"name": n})
	}
	return out
}

// botComments are the comments the App wrote on an issue.
func (h *harness) botComments(full string, number int) []ghsim.Comment {
	var out []ghsim.Comment
	for _, c := range h.gh.Comments(full, number) {
		if c.AuthorType == "Bot" {
			out = append(out, c)
		}
	}
	return out
}

// reactions lists the reaction contents on a comment, in order.
func (h *harness) reactions(full string, number int, commentID int64) []string {
	var out []string
	for _, r := range h.gh.Reactions(full, number) {
		if r.CommentID == commentID {
			out = append(out, r.Content)
		}
	}
	return out
}

// ecdsaKey is a public key of a type age cannot encrypt to (a user who has only such keys is told
// which types work).
const ecdsaKey = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV9U2JsAp7pVGpcLTT3Pc="

// sshUser makes an ed25519 key pair: the public half goes to GitHub, the identity opens age files.
func sshUser(t *testing.T) (string, age.Identity) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	id, err := agessh.NewEd25519Identity(priv)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(spub))), id
}

// masks lists the values registered with ::add-mask:: during the last handled event.
func (h *harness) masks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, l := range strings.Split(h.actions.String(), "\n") {
		if v, ok := strings.CutPrefix(l, "::add-mask::"); ok {
			out = append(out, v)
		}
	}
	return out
}

// live lists the emulator's resources owned by a cluster; light, the resources its state records.
func (h *harness) live(name string) []string {
	if h.w != nil {
		return worldtest.Live(h.w, name)
	}
	_, st, err := h.backend.Ops.Load(h.t.Context(), name)
	if err != nil {
		return nil
	}
	var out []string
	for n, rec := range st.Resources {
		out = append(out, rec.Kind+" "+n)
	}
	return out
}

// calls counts what the run asked of the cloud: the emulator's Scaleway calls; light, the steps
// the graphs ran.
func (h *harness) calls() int {
	if h.w != nil {
		return h.w.Scaleway.CallCount()
	}
	return h.fake.Steps()
}

// answered handles login's comment body on repo#number, which must succeed, and returns the
// App's last comment there (its reply).
func (h *harness) answered(ctx context.Context, t *testing.T, repo string, number int, login, body string, labels ...string) string {
	t.Helper()
	out, err := h.handle(ctx, h.comment(repo, number, false, login, body, labels...))
	if err != nil || !out.OK {
		t.Fatalf("%s by %s: outcome %+v, err %v", body, login, out, err)
	}
	own := ownComments(h, repo, number)
	if len(own) == 0 {
		t.Fatalf("%s by %s: no reply", body, login)
	}
	return own[len(own)-1].Body
}

// holds fails t for each of wants that body lacks.
func holds(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, body)
		}
	}
}
