package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/version"
)

// Mode says how the client authenticates.
type Mode string

// The authentication modes.
const (
	ModeApp   Mode = "app"   // GitHub App installation token: comments carry the App's name
	ModeToken Mode = "token" // the lesser mode: a workflow's GITHUB_TOKEN (comments by github-actions[bot])
)

// Auth is what NewClient needs. Either AppID + PrivateKeyPEM (the App), or Token.
type Auth struct {
	AppID          int64
	PrivateKeyPEM  []byte
	InstallationID int64 // 0: looked up with the App's JWT (GET /repos/{owner}/{repo}/installation)
	Token          string
	Owner, Repo    string
	BaseURL        string            // API root; "" = https://api.github.com; GHE: https://HOST/api/v3
	Transport      http.RoundTripper // nil = http.DefaultTransport
	Retry          RetryPolicy
	Logger         *slog.Logger
	// OnToken, when set, sees every installation token as it is minted (the first and each
	// refresh), so that the caller can mask it in the Actions log (::add-mask::).
	OnToken func(token string)
	// Now is the clock deciding when a token needs replacing; nil = time.Now.
	Now func() time.Time
	// JobToken says Token is the workflow job's own GITHUB_TOKEN used on purpose (a pull
	// request's job asking for its kubeconfig), not the lesser mode of the bot: no warning.
	JobToken bool
}

// Mode is the mode these settings select.
func (a Auth) Mode() Mode {
	if a.AppID != 0 {
		return ModeApp
	}
	return ModeToken
}

// String never prints the key or the token.
func (a Auth) String() string {
	return fmt.Sprintf("github.Auth{mode: %s, app: %d, installation: %d, repo: %s/%s, api: %s}",
		a.Mode(), a.AppID, a.InstallationID, a.Owner, a.Repo, a.BaseURL)
}

// AuthFromEnv reads the App's settings (POC_APP_ID, POC_APP_PRIVATE_KEY as PEM text or
// POC_APP_PRIVATE_KEY_FILE), falling back to GITHUB_TOKEN, plus GITHUB_REPOSITORY and
// GITHUB_API_URL. The installation id is left for the caller (it comes from the event).
func AuthFromEnv(getenv func(string) string) (Auth, error) {
	a := Auth{BaseURL: strings.TrimRight(strings.TrimSpace(getenv("GITHUB_API_URL")), "/")}
	if full := strings.TrimSpace(getenv("GITHUB_REPOSITORY")); full != "" {
		owner, repo, ok := strings.Cut(full, "/")
		if !ok || owner == "" || repo == "" {
			return Auth{}, fmt.Errorf("github: GITHUB_REPOSITORY=%q is not owner/name", full)
		}
		a.Owner, a.Repo = owner, repo
	}
	env := settings.Env(getenv)
	idText, keyText, keyFile := env.String("app-id"), env.Raw("app-private-key"), env.String("app-private-key-file")
	switch {
	case idText != "":
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || id <= 0 {
			return Auth{}, fmt.Errorf("github: POC_APP_ID=%q is not a GitHub App id (a positive number, shown on the App's settings page)", idText)
		}
		a.AppID = id
		switch {
		case strings.TrimSpace(keyText) != "":
			// Secrets pasted through some UIs arrive with literal "\n"; PEM needs real newlines.
			if !strings.Contains(keyText, "\n") && strings.Contains(keyText, `\n`) {
				keyText = strings.ReplaceAll(keyText, `\n`, "\n")
			}
			a.PrivateKeyPEM = []byte(keyText)
		case keyFile != "":
			b, err := os.ReadFile(keyFile)
			if err != nil {
				return Auth{}, fmt.Errorf("github: read POC_APP_PRIVATE_KEY_FILE: %w", err)
			}
			a.PrivateKeyPEM = b
		default:
			return Auth{}, fmt.Errorf("github: POC_APP_ID is set but neither POC_APP_PRIVATE_KEY (PEM text) nor POC_APP_PRIVATE_KEY_FILE is: add the App's private key as a secret")
		}
	case strings.TrimSpace(keyText) != "" || keyFile != "":
		return Auth{}, fmt.Errorf("github: the App's private key is set but POC_APP_ID is not: add the App id")
	case strings.TrimSpace(getenv("GITHUB_TOKEN")) != "":
		a.Token = strings.TrimSpace(getenv("GITHUB_TOKEN"))
	default:
		return Auth{}, fmt.Errorf("github: no GitHub credentials: set POC_APP_ID and POC_APP_PRIVATE_KEY (or POC_APP_PRIVATE_KEY_FILE) for the App, or GITHUB_TOKEN for the lesser mode")
	}
	// POC_RECORD_DIR: every exchange under the retries and the authentication, as GitHub sees it.
	rt, err := record.Wrap(getenv, record.GitHub, nil)
	if err != nil {
		return Auth{}, err
	}
	a.Transport = rt
	return a, nil
}

// BotPermissions is what the installation token is narrowed to: the App manifest's set
// (deploy/app-manifest.json): issues and pull requests write, contents and metadata read, for
// the pull requests' clusters deployments and checks write (the deployment, the answer to a job's
// kubeconfig request), and actions write (the run that asks is read; a claim dispatches the warm
// pool's refill).
func BotPermissions() *gh.InstallationPermissions {
	p := prPermissions()
	p.Actions = gh.String("write")
	return p
}

// prPermissions is what an installation made before the refill dispatch (actions: write) grants:
// the pull requests' clusters' permissions (deployments and checks write, actions read).
func prPermissions() *gh.InstallationPermissions {
	p := basePermissions()
	p.Deployments, p.Checks, p.Actions = gh.String("write"), gh.String("write"), gh.String("read")
	return p
}

// basePermissions is what an installation made before deployments and checks were asked for
// grants: a token narrowed to more is refused (422), so the bot falls back to this set.
func basePermissions() *gh.InstallationPermissions {
	return &gh.InstallationPermissions{
		Issues: gh.String("write"), PullRequests: gh.String("write"),
		Metadata: gh.String("read"), Contents: gh.String("read"),
	}
}

// newGitHub builds a go-github client on hc rooted at base: the default for GitHub.com, the
// Enterprise form (WithEnterpriseURLs) for …/api/v3, and base as-is otherwise (a stand-in).
func newGitHub(hc *http.Client, base string, more ...gh.ClientOptionsFunc) (*gh.Client, string, error) {
	opts := append([]gh.ClientOptionsFunc{gh.WithHTTPClient(hc), gh.WithUserAgent(version.UserAgent())}, more...)
	if base != "" && base != DefaultAPIURL {
		u, err := url.Parse(base)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, "", fmt.Errorf("github: API URL %q is not an http(s) URL", base)
		}
		if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/api/v3") {
			upload := strings.TrimSuffix(strings.TrimRight(base, "/"), "/api/v3") + "/api/uploads/"
			opts = append(opts, gh.WithEnterpriseURLs(base, upload))
		} else {
			u.Path = strings.TrimRight(u.Path, "/") + "/"
			root := u.String()
			opts = append(opts, gh.WithURLs(&root, nil))
		}
	}
	c, err := gh.NewClient(opts...)
	if err != nil {
		return nil, "", fmt.Errorf("github: API URL %q: %w", base, err)
	}
	return c, strings.TrimRight(c.BaseURL(), "/"), nil
}

// NewClient authenticates and returns a client bound to Auth.Owner/Auth.Repo. In App mode it
// looks up the installation when needed and mints the installation token at once, so that bad
// credentials fail here with a clear error rather than at the first comment.
func NewClient(ctx context.Context, a Auth) (*Client, error) {
	if a.Owner == "" || a.Repo == "" {
		return nil, fmt.Errorf("github: no repository to act on: set GITHUB_REPOSITORY=owner/name")
	}
	log := a.Logger
	if log == nil {
		log = slog.Default()
	}
	base := a.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rt := &retryTransport{next: base, policy: a.Retry.withDefaults()}
	c := &Client{owner: a.Owner, repo: a.Repo, log: log, mode: a.Mode(), self: &selfCache{}, retry: rt.policy}

	if a.Mode() == ModeToken {
		if a.Token == "" {
			return nil, fmt.Errorf("github: neither App credentials nor a token were given")
		}
		if !a.JobToken {
			log.Warn("github: running in the lesser mode with GITHUB_TOKEN: comments are posted by github-actions[bot] and the workflow's token permissions apply; configure POC_APP_ID and POC_APP_PRIVATE_KEY to act as the App")
		}
		hc := &http.Client{Transport: &tokenTransport{next: rt, token: a.Token}}
		gc, _, err := newGitHub(hc, a.BaseURL, ownRateLimits)
		if err != nil {
			return nil, err
		}
		c.gh = gc
		return c, nil
	}

	// ghinstallation signs the App's JWT; go-github (v88, the major version ghinstallation uses: one copy linked) makes the calls.
	appClient, err := AppREST(rt, a.AppID, a.PrivateKeyPEM, a.BaseURL)
	if errors.Is(err, ErrAppKey) {
		return nil, fmt.Errorf("github: %w (POC_APP_PRIVATE_KEY)", err)
	}
	if err != nil {
		return nil, err
	}
	src, inst, lacking, err := installationToken(ctx, a, appClient, log)
	if err != nil {
		return nil, err
	}
	if len(lacking) > 0 {
		c.lacking = lacking
		log.Warn("github: the App's installation has not granted deployments and checks write and actions read: pull requests get no deployment and their workflows no kubeconfig until the owner accepts the App's new permissions", "installation", inst)
	}
	gc, _, err := newGitHub(&http.Client{Transport: &installationTransport{next: rt, tokens: src}}, a.BaseURL, ownRateLimits)
	if err != nil {
		return nil, err
	}
	c.gh, c.installationID, c.tokens = gc, inst, src
	c.app = appClient // GET /app (the App's slug: its comments' author) needs the JWT
	return c, nil
}

// installationToken finds the App's installation on a's repository (unless a names it) and mints
// its first token, scoped to the repository, with the bot's permissions, or with the base set
// when the installation predates the optional ones (lacking names them).
func installationToken(ctx context.Context, a Auth, appClient *gh.Client, log *slog.Logger) (src *installationTokens, inst int64, lacking []string, err error) {
	find := func() (int64, error) {
		in, resp, err := appClient.Apps.GetRepositoryInstallation(ctx, a.Owner, a.Repo)
		if err != nil {
			return 0, apiError(fmt.Sprintf("find the App's installation on %s/%s (is the App installed there, and are POC_APP_ID and the key from the same App?)", a.Owner, a.Repo), resp, err)
		}
		return in.GetID(), nil
	}
	now := a.Now
	if now == nil {
		now = time.Now
	}
	tokens := func(id int64, perms *gh.InstallationPermissions) *installationTokens {
		return &installationTokens{app: appClient, id: id, now: now, onMint: a.OnToken,
			opts: &gh.InstallationTokenOptions{Repositories: []string{a.Repo}, Permissions: perms}}
	}
	// mint makes installation id's first token with the bot's permissions. An installation may
	// predate the optional ones this version asks for (GitHub answers 422 to a token narrowed
	// beyond the grant, OpenAPI apps/create-installation-access-token): then it asks for the
	// older sets, newest first, and the optional calls say what to accept (lacking).
	mint := func(id int64) (*installationTokens, []string, error) {
		src := tokens(id, BotPermissions())
		_, err := src.Token(ctx)
		if !unprocessable(err) {
			return src, nil, err
		}
		for _, older := range []struct {
			perms   *gh.InstallationPermissions
			lacking []string
		}{{prPermissions(), []string{PermDispatch}}, {basePermissions(), []string{PermDeployments, PermChecks, PermActions, PermDispatch}}} {
			o := tokens(id, older.perms)
			_, oerr := o.Token(ctx)
			if oerr == nil {
				return o, older.lacking, nil
			}
			if !unprocessable(oerr) {
				break
			}
		}
		return src, nil, err
	}
	inst = a.InstallationID
	if inst == 0 {
		if inst, err = find(); err != nil {
			return nil, 0, nil, err
		}
	}
	src, lacking, err = mint(inst)
	if err != nil && a.InstallationID != 0 && mintRefusedForID(err) {
		// The payload's installation id is a hint (a redelivered or hand-made event may carry a
		// stale or foreign one): ask GitHub which installation holds the repository.
		found, ferr := find()
		if ferr != nil {
			return nil, inst, nil, fmt.Errorf("github: installation %d from the event was refused (%v), and looking up %s/%s's installation failed: %w", inst, err, a.Owner, a.Repo, ferr)
		}
		log.Warn("github: the event's installation id was refused; using the repository's installation instead",
			"event_installation", inst, "installation", found, "refusal", err.Error())
		inst = found
		src, lacking, err = mint(found)
	}
	if err != nil {
		return nil, inst, nil, fmt.Errorf("github: mint an installation token for %s/%s (installation %d): check that the App is installed on the repository with issues and pull requests write, contents and metadata read: %w", a.Owner, a.Repo, inst, err)
	}
	return src, inst, lacking, nil
}

// ownRateLimits leaves rate limits to the retry transport (retry.go): go-github would otherwise
// refuse, without sending it, every request of the client until a secondary limit it saw ends,
// so that a status edit told to give up at once (WithoutRateLimitWait) would make the
// notification that follows fail instead of waiting its turn.
var ownRateLimits = gh.WithDisableRateLimitCheck()

type tokenTransport struct {
	next  http.RoundTripper
	token string
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}

// NewREST is a go-github client on rt for the API at base, read as the bot's own client reads
// GITHUB_API_URL ("" is GitHub.com, …/api/v3 GitHub Enterprise Server), with pocbot's User-Agent;
// root is the API's root without its trailing slash (what ghinstallation's AppsTransport takes as
// BaseURL). For the installer and the doctor, which act with a person's token or the App's JWT.
func NewREST(rt http.RoundTripper, base string) (c *gh.Client, root string, err error) {
	return newGitHub(&http.Client{Transport: rt}, base)
}

// ErrAppKey is an App private key that is not a PEM RSA key.
var ErrAppKey = errors.New("the App's private key is not a PEM RSA key")

// AppREST is NewREST authenticated as the App itself (its JWT, signed with key): for GET /app and
// the App's installations. A key that does not parse is ErrAppKey.
func AppREST(rt http.RoundTripper, appID int64, key []byte, base string) (*gh.Client, error) {
	atr, err := ghinstallation.NewAppsTransport(rt, appID, key)
	if err != nil {
		// The library's message may quote parse details, never the key itself.
		return nil, fmt.Errorf("App %d: %w: %w", appID, ErrAppKey, err)
	}
	c, root, err := NewREST(atr, base)
	if err != nil {
		return nil, err
	}
	atr.BaseURL = root
	return c, nil
}

// Bearer is next with every request carrying token as its bearer.
func Bearer(next http.RoundTripper, token string) http.RoundTripper {
	return &tokenTransport{next: next, token: token}
}
