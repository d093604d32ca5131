// Package appsetup registers pocbot's GitHub App with GitHub's App manifest flow
// (https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
// a page on localhost posts the manifest to GitHub, GitHub redirects the browser back with a
// one-time code, and the code is exchanged (POST /app-manifests/{code}/conversions, go-github's
// CompleteAppManifest) for the App's id, slug and private key. The key is written to a file with
// mode 0600 and never printed; what to run next (`gh secret set`, `gh variable set`, the install
// URL) is.
//
// The manifest asks for exactly the permissions the installation token is narrowed to
// (github.BotPermissions) and no webhook: the bot runs from Actions workflows, not from webhooks.
package appsetup

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/github"
)

// Manifest is the App manifest (the keys GitHub documents for the manifest flow).
type Manifest struct {
	Name               string            `json:"name"`
	URL                string            `json:"url"`
	Description        string            `json:"description"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	RedirectURL        string            `json:"redirect_url,omitempty"`
}

// DefaultManifest is pocbot's App: private, no webhook, the permissions its installation token is
// narrowed to. deploy/app-manifest.json is this value (a test keeps them equal).
func DefaultManifest(name string) Manifest {
	if name == "" {
		name = "pocbot"
	}
	perms := map[string]string{}
	p := github.BotPermissions()
	for k, v := range map[string]*string{"issues": p.Issues, "pull_requests": p.PullRequests, "metadata": p.Metadata, "contents": p.Contents,
		"deployments": p.Deployments, "checks": p.Checks, "actions": p.Actions} {
		if v != nil {
			perms[k] = *v
		}
	}
	return Manifest{
		Name:               name,
		URL:                "https://github.com/pocbot/pocbot",
		Description:        "Throw-away Talos Kubernetes clusters on Scaleway from /poc comments.",
		Public:             false,
		DefaultPermissions: perms,
	}
}

// Config is one run of the flow.
type Config struct {
	Owner      string // organization that will own the App; "" for the user's own account
	Name       string // App name (default pocbot)
	WebURL     string // https://github.com (a stand-in in tests)
	APIURL     string // https://api.github.com (a stand-in in tests)
	KeyFile    string // where the private key goes (mode 0600; an existing file is not overwritten)
	Listen     string // local address of the page, default 127.0.0.1:0
	Repository string // OWNER/REPO the printed gh lines target ("" = the current repository)
	Env        string // GitHub environment the secrets go to (default poc)
	Timeout    time.Duration
	// Ready is called with the local page's URL once it listens (print it, open a browser).
	Ready func(pageURL string)
	Out   io.Writer // the next steps
}

// Result is what the conversion returned (the key is in KeyFile only).
type Result struct {
	AppID   int64
	Slug    string
	KeyFile string
	HTMLURL string
}

// Run serves the page, waits for GitHub's redirect, exchanges the code and writes the key.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("app create: listen on %s for GitHub's redirect: %w", cfg.Listen, err)
	}
	base := "http://" + ln.Addr().String()
	state, err := randomState()
	if err != nil {
		return nil, err
	}
	m := DefaultManifest(cfg.Name)
	m.RedirectURL = base + "/callback"
	manifestJSON, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	f := &flow{cfg: cfg, state: state, action: manifestAction(cfg.WebURL, cfg.Owner, state), manifest: manifestJSON, done: make(chan flowOutcome, 1)}
	srv := &http.Server{Handler: f.handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()
	if cfg.Ready != nil {
		cfg.Ready(base + "/")
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("app create: no redirect from GitHub within %s (the manifest code lives one hour): %w", cfg.Timeout, ctx.Err())
	case o := <-f.done:
		if o.err != nil {
			return nil, o.err
		}
		if cfg.Out != nil {
			printNext(cfg.Out, cfg, o.res)
		}
		return o.res, nil
	}
}

// withDefaults fills the defaults of cfg and refuses a run that could overwrite a key.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.WebURL == "" {
		cfg.WebURL = github.DefaultWebURL
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Env == "" {
		cfg.Env = github.DefaultEnvironment
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Hour // GitHub's code lives one hour
	}
	if cfg.KeyFile == "" {
		return cfg, errors.New("app create: no key file given (--key-file)")
	}
	if _, err := os.Stat(cfg.KeyFile); err == nil {
		return cfg, fmt.Errorf("app create: %s already exists: move it away or give another --key-file (an App key is never overwritten)", cfg.KeyFile)
	}
	return cfg, nil
}

// manifestAction is where the page posts the manifest: the new-App form of the user's account
// or of the organization owner, with the flow's state.
func manifestAction(webURL, owner, state string) string {
	action := strings.TrimRight(webURL, "/") + "/settings/apps/new"
	if owner != "" {
		action = strings.TrimRight(webURL, "/") + "/organizations/" + url.PathEscape(owner) + "/settings/apps/new"
	}
	return action + "?state=" + url.QueryEscape(state)
}

// flow is one run's local web side: the page that posts the manifest, and the callback GitHub
// redirects to with the code.
type flow struct {
	cfg      Config
	state    string
	action   string
	manifest []byte
	done     chan flowOutcome // the first outcome only
}

type flowOutcome struct {
	res *Result
	err error
}

func (f *flow) finish(o flowOutcome) {
	select {
	case f.done <- o:
	default:
	}
}

func (f *flow) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		writePage(w, f.action, string(f.manifest), cmpOr(f.cfg.Owner, "your account"))
	})
	mux.HandleFunc("GET /callback", f.callback)
	return mux
}

func (f *flow) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		// Not our flow (a stale tab, or someone else's redirect): refuse, keep waiting.
		http.Error(w, "state does not match this run of `bot app create`: start again from the page it printed", http.StatusBadRequest)
		return
	}
	code := q.Get("code")
	if code == "" {
		http.Error(w, "no code in GitHub's redirect", http.StatusBadRequest)
		f.finish(flowOutcome{err: errors.New("app create: GitHub redirected without a code")})
		return
	}
	res, err := convert(r.Context(), f.cfg, code)
	if err != nil {
		http.Error(w, "pocbot could not finish: "+err.Error(), http.StatusBadGateway)
		f.finish(flowOutcome{err: err})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprintf(w, "<!doctype html><title>pocbot</title><p>The App <b>%s</b> is registered. Return to your terminal.</p>", html.EscapeString(res.Slug))
	f.finish(flowOutcome{res: res})
}

func convert(ctx context.Context, cfg Config, code string) (*Result, error) {
	c, _, err := github.NewREST(http.DefaultTransport, cfg.APIURL)
	if err != nil {
		return nil, fmt.Errorf("app create: %w", err)
	}
	ac, _, err := c.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("app create: exchange the manifest code (POST /app-manifests/{code}/conversions): %w", err)
	}
	if ac.GetPEM() == "" || ac.GetID() == 0 {
		return nil, errors.New("app create: GitHub's conversion answer has no App id or private key")
	}
	// O_EXCL: never replace a key another run wrote meanwhile.
	f, err := os.OpenFile(cfg.KeyFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("app create: write the private key of App %d: %w (download a new key from the App's settings page)", ac.GetID(), err)
	}
	if _, err := f.WriteString(ac.GetPEM()); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("app create: write the private key to %s: %w", cfg.KeyFile, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("app create: write the private key to %s: %w", cfg.KeyFile, err)
	}
	return &Result{AppID: ac.GetID(), Slug: ac.GetSlug(), KeyFile: cfg.KeyFile, HTMLURL: ac.GetHTMLURL()}, nil
}

func printNext(w io.Writer, cfg Config, r *Result) {
	repo := ""
	if cfg.Repository != "" {
		repo = " --repo " + cfg.Repository
	}
	fmt.Fprintf(w, "Registered the GitHub App %s (id %d); its private key is in %s (mode 0600).\n\n", r.Slug, r.AppID, r.KeyFile)
	fmt.Fprintf(w, "Next, in the repository that will run pocbot (environment %q, see docs/install.md):\n\n", cfg.Env)
	fmt.Fprintf(w, "  gh variable set POC_APP_ID --env %s%s --body %d\n", cfg.Env, repo, r.AppID)
	fmt.Fprintf(w, "  gh secret set POC_APP_PRIVATE_KEY --env %s%s < %s\n", cfg.Env, repo, r.KeyFile)
	// rm, not shred: shred is not on macOS, and overwriting in place does not reach an SSD's
	// or a copy-on-write file system's old blocks anyway.
	fmt.Fprintf(w, "  rm %s   # once the secret is set: the key stays in GitHub only\n\n", r.KeyFile)
	fmt.Fprintf(w, "Then install the App on that repository: %s/apps/%s/installations/new\n", strings.TrimRight(cfg.WebURL, "/"), r.Slug)
}

func randomState() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("app create: random state: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func cmpOr(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// writePage writes the page that posts the manifest to GitHub at once (the button is there when
// scripts are off). Every value is HTML-escaped (html.EscapeString escapes the five characters that
// matter, so each value stays inside its element or double-quoted attribute). It is not a
// html/template: text/template's by-name method calls keep every exported method of every linked
// type in the binary (the linker's dead-method elimination gives up), about 15 MB of the release
// binary (cmd/bot/lean_test.go).
func writePage(w io.Writer, action, manifest, owner string) {
	_, _ = fmt.Fprintf(w, `<!doctype html>
<html><head><meta charset="utf-8"><title>pocbot: register the GitHub App</title></head>
<body>
<p>Registering the pocbot GitHub App for %s. GitHub will ask you to confirm.</p>
<form id="register" method="post" action="%s">
<input type="hidden" name="manifest" value="%s">
<button type="submit">Register the App on GitHub</button>
</form>
<script>document.getElementById("register").submit();</script>
</body></html>
`, html.EscapeString(owner), html.EscapeString(action), html.EscapeString(manifest))
}
