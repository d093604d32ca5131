package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/version"
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

// usesRE is a pinned pocbot step: uses: OWNER/REPO@<40 hex> # vX.Y.Z
var usesRE = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)@(\S+)\s*(#\s*(\S+))?`)

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
			var missing []string
			want := github.BotPermissions()
			have := in.GetPermissions()
			for _, p := range []struct {
				name       string
				want, have *string
			}{{"issues", want.Issues, have.Issues}, {"pull_requests", want.PullRequests, have.PullRequests}, {"metadata", want.Metadata, have.Metadata}, {"contents", want.Contents, have.Contents}} {
				if p.want != nil && level(p.have) < level(p.want) {
					missing = append(missing, fmt.Sprintf("%s:%s (has %s)", p.name, *p.want, str(p.have)))
				}
			}
			if len(missing) > 0 {
				return append(items, one("App permissions", Fail, "the installation lacks "+strings.Join(missing, ", "), "grant them in the App's settings (Permissions), then accept the new permissions on the installation")...)
			}
			return append(items, one("App permissions", OK, "issues, pull requests, metadata, contents as the bot needs", "")...)
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
			items := g.secrets(ctx, c, owner, name)
			return append(items, g.workflow(ctx, c, owner, name, repo.GetDefaultBranch())...)
		},
	}
}

func (g GitHub) secrets(ctx context.Context, c *gh.Client, owner, name string) []Item {
	have := map[string]bool{}
	where := "environment " + g.Env
	list := func(env string) (bool, error) { // env "": the repository's
		names, found, err := repoinit.SecretNames(ctx, c, repoinit.SecretsPath(owner, name, env))
		for _, n := range names {
			have[strings.ToUpper(n)] = true
		}
		return found, err
	}
	envOK, err := list(g.Env)
	if err != nil {
		return one("secrets", Fail, fmt.Sprintf("list the secrets of environment %s: %v", g.Env, err), "use a repository admin's token")
	}
	if _, err := list(""); err != nil {
		return one("secrets", Fail, fmt.Sprintf("list the repository's secrets: %v", err), "use a repository admin's token")
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
				g.Repo, g.Repo, map[bool]string{true: " --env " + g.Env, false: ""}[envOK]))
	}
	detail := fmt.Sprintf("%d required secrets in the %s", len(required), where)
	if !have[optional[0]] || !have[optional[1]] {
		return one("secrets", Warn, detail+"; no presigning key (kubeconfig links are signed with the bot's own key)", "create the read-only presigning key (docs/install.md) and rerun bot init with POC_PRESIGN_ACCESS_KEY and POC_PRESIGN_SECRET_KEY")
	}
	return one("secrets", OK, detail, "")
}

func (g GitHub) workflow(ctx context.Context, c *gh.Client, owner, name, branch string) []Item {
	fc, _, resp, err := c.Repositories.GetContents(ctx, owner, name, repoinit.WorkflowPath, &gh.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return one("workflow", Fail, fmt.Sprintf("no %s on %s (issue_comment and schedule run only from the default branch)", repoinit.WorkflowPath, branch),
				fmt.Sprintf("merge the pull request `bot init --repo %s` opened (rerun init to open it)", g.Repo))
		}
		return one("workflow", Fail, err.Error(), "use a repository admin's token")
	}
	text, err := fc.GetContent()
	if err != nil {
		return one("workflow", Fail, err.Error(), "")
	}
	for _, m := range usesRE.FindAllStringSubmatch(text, -1) {
		if !strings.HasSuffix(m[1], "/pocbot") {
			continue
		}
		if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(m[2]) {
			return one("workflow pin", Fail, fmt.Sprintf("uses: %s@%s is not pinned by commit SHA", m[1], m[2]),
				"pin the commit SHA of a release tag, with the tag as a comment (uses: pocbot/pocbot@<sha> # vX.Y.Z): the SHA pins the binary's bytes")
		}
		v := m[4]
		if v == "" {
			return one("workflow pin", Warn, fmt.Sprintf("uses: %s@%s has no version comment", m[1], m[2][:12]), "add # vX.Y.Z after the SHA so Dependabot can bump it")
		}
		if cur := version.String(); strings.HasPrefix(cur, "v") && cur != v {
			return one("workflow pin", Warn, fmt.Sprintf("pinned to %s (%s), this bot is %s", v, m[2][:12], cur), "upgrade: accept Dependabot's bump of the SHA, or pin the SHA of "+cur+"'s tag")
		}
		return one("workflow pin", OK, fmt.Sprintf("%s@%s # %s on %s", m[1], m[2][:12], v, branch), "")
	}
	return one("workflow pin", Fail, fmt.Sprintf("%s on %s does not use the pocbot Action", repoinit.WorkflowPath, branch), "rerun `bot init` to propose the workflow")
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
