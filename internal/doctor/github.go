package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/repoinit"
)

// GitHub is what the GitHub checks need.
type GitHub struct {
	Repo      string // OWNER/REPO
	Env       string // the secrets' environment (poc)
	APIURL    string
	Token     string // a repository admin's token ("": the checks that need it are skipped)
	AppID     int64
	AppKey    []byte
	Transport http.RoundTripper
}

// Checks are the GitHub items: the App's installation and permissions, the secrets, the workflow.
func (g GitHub) Checks() []Check {
	if g.Transport == nil {
		g.Transport = http.DefaultTransport
	}
	owner, name, _ := strings.Cut(g.Repo, "/")
	if g.Env == "" {
		g.Env = github.DefaultEnvironment
	}
	return []Check{
		func(ctx context.Context) []Item { // App
			if g.AppID == 0 || len(g.AppKey) == 0 {
				return one("App installation", Skip, "no App credentials given", "set POC_APP_ID and POC_APP_PRIVATE_KEY (or _FILE) to check the App")
			}
			c, err := github.AppREST(g.Transport, g.AppID, g.AppKey, g.APIURL)
			if errors.Is(err, github.ErrAppKey) {
				return one("App installation", Fail, fmt.Sprintf("App %d: the private key is not a PEM RSA key", g.AppID), "give the key downloaded from the App's settings page")
			}
			if err != nil {
				return one("App installation", Fail, err.Error(), "check GITHUB_API_URL")
			}
			in, resp, err := c.Apps.GetRepositoryInstallation(ctx, owner, name)
			if err != nil {
				if resp != nil && resp.StatusCode == http.StatusNotFound {
					return one("App installation", Fail, fmt.Sprintf("App %d is not installed on %s", g.AppID, g.Repo), "install it on the repository (https://github.com/apps/<slug>/installations/new), then rerun")
				}
				return one("App installation", Fail, fmt.Sprintf("App %d: %v", g.AppID, err), "check POC_APP_ID and the key belong to the same App")
			}
			items := one("App installation", OK, fmt.Sprintf("App %d installed on %s (installation %d)", g.AppID, g.Repo, in.GetID()), "")
			missing, prMissing := missingPermissions(github.BotPermissions(), in.GetPermissions())
			if len(missing) > 0 {
				return append(items, one("App permissions", Fail, "the installation lacks "+strings.Join(missing, ", "), "grant them in the App's settings (Permissions), then accept the new permissions on the installation")...)
			}
			if len(prMissing) > 0 {
				return append(items, one("App permissions", Warn, "the installation lacks "+strings.Join(prMissing, ", ")+": "+withoutOptional(prMissing),
					"accept the App's new permissions on the installation (Settings → GitHub Apps → pocbot → Review request), or grant them in the App's settings")...)
			}
			return append(items, one("App permissions", OK, "issues, pull requests, metadata, contents, deployments, checks, actions as the bot needs", "")...)
		},
		func(ctx context.Context) []Item { // secrets and workflow
			if g.Token == "" {
				return append(one("secrets", Skip, "no GitHub token", "set GH_TOKEN (a repository admin's) or log in with gh"),
					one("workflow", Skip, "no GitHub token", "set GH_TOKEN or log in with gh")...)
			}
			c, _, err := github.NewREST(github.Bearer(g.Transport, g.Token), g.APIURL)
			if err != nil {
				return one("secrets", Fail, err.Error(), "check GITHUB_API_URL")
			}
			repo, _, err := c.Repositories.Get(ctx, owner, name)
			if err != nil {
				return one("GitHub access", Fail, fmt.Sprintf("read %s: %v", g.Repo, err), "use a token of a repository admin (GH_TOKEN, GITHUB_TOKEN or gh auth login)")
			}
			items, envOK := g.secrets(ctx, c, owner, name)
			return append(items, g.workflows(ctx, c, owner, name, repo.GetDefaultBranch(), envOK)...)
		},
	}
}

// secrets checks the secrets the workflow reads; envOK says whether they are the environment's
// (false: the repository's).
func (g GitHub) secrets(ctx context.Context, c *gh.Client, owner, name string) (items []Item, envOK bool) {
	have := map[string]bool{}
	where := "environment " + g.Env
	list := func(env string) (bool, error) { // env "": the repository's
		names, found, err := repoinit.SecretNames(ctx, c, repoinit.SecretsPath(owner, name, env))
		for _, n := range names {
			have[strings.ToUpper(n)] = true
		}
		return found, err
	}
	var err error
	envOK, err = list(g.Env)
	if err != nil {
		return one("secrets", Fail, fmt.Sprintf("list the secrets of environment %s: %v", g.Env, err), "use a repository admin's token"), envOK
	}
	if _, err := list(""); err != nil {
		return one("secrets", Fail, fmt.Sprintf("list the repository's secrets: %v", err), "use a repository admin's token"), envOK
	}
	if !envOK {
		where = "repository secrets"
	}
	required, optional := repoinit.Secrets()
	var missing []string
	for _, n := range required {
		if !have[n] {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return one("secrets", Fail, fmt.Sprintf("missing in the %s: %s", where, strings.Join(missing, ", ")),
			fmt.Sprintf("rerun `bot init --repo %s` with the values in its environment (it writes only what is missing), or: gh secret set NAME --repo %s%s",
				g.Repo, g.Repo, map[bool]string{true: " --env " + g.Env, false: ""}[envOK])), envOK
	}
	detail := fmt.Sprintf("%d required secrets in the %s", len(required), where)
	if !have[optional[0]] || !have[optional[1]] {
		return one("secrets", Warn, detail+"; no presigning key (kubeconfig links are signed with the bot's own key)", "create the read-only presigning key (docs/install.md) and rerun bot init with POC_PRESIGN_ACCESS_KEY and POC_PRESIGN_SECRET_KEY"), envOK
	}
	return one("secrets", OK, detail, ""), envOK
}

func level(p *string) int {
	if p == nil {
		return 0
	}
	return map[string]int{"read": 1, "write": 2, "admin": 3}[*p]
}

func str(p *string) string {
	if p == nil {
		return "none"
	}
	return *p
}

// withoutOptional says what the bot cannot do without the optional permissions missing: the pull
// requests' clusters' (deployments, checks, actions read), and the warm pool's refill dispatched
// after a claim (actions write; the schedule still refills).
func withoutOptional(missing []string) string {
	var out []string
	if slices.ContainsFunc(missing, func(m string) bool { return !strings.HasPrefix(m, "actions:write (has read)") }) {
		out = append(out, "pull requests get no deployment and their workflows no kubeconfig")
	}
	if slices.ContainsFunc(missing, func(m string) bool { return strings.HasPrefix(m, "actions:") }) {
		out = append(out, "a claim of a warm spare dispatches no refill (the schedule refills the pool)")
	}
	return strings.Join(out, "; ")
}

// missingPermissions compares what the installation grants with what the bot asks: missing are
// the permissions every command needs, prMissing those of the pull requests' clusters (their
// deployment, their jobs' kubeconfig), which an installation made before them lacks until its
// owner accepts them.
func missingPermissions(want, have *gh.InstallationPermissions) (missing, prMissing []string) {
	for _, p := range []struct {
		name       string
		want, have *string
		pr         bool
	}{{"issues", want.Issues, have.Issues, false}, {"pull_requests", want.PullRequests, have.PullRequests, false},
		{"metadata", want.Metadata, have.Metadata, false}, {"contents", want.Contents, have.Contents, false},
		{"deployments", want.Deployments, have.Deployments, true}, {"checks", want.Checks, have.Checks, true}, {"actions", want.Actions, have.Actions, true}} {
		if p.want == nil || level(p.have) >= level(p.want) {
			continue
		}
		m := fmt.Sprintf("%s:%s (has %s)", p.name, *p.want, str(p.have))
		if p.pr {
			prMissing = append(prMissing, m)
		} else {
			missing = append(missing, m)
		}
	}
	return missing, prMissing
}
