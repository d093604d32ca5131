// Package repoinit sets a repository up to run pocbot (`bot init`): the App's installation on it,
// the secrets the workflow reads — in the `poc` environment (deployments from the default branch
// only) where the repository can have environments, otherwise as repository secrets (a private
// repository on GitHub Free has none), each sealed to the repository's public key (libsodium sealed
// box, golang.org/x/crypto/nacl/box) — and a pull request adding the workflow, pinned to the
// Action's commit, and `.github/poc.yml`.
//
// It converges: what exists is kept (a secret's value cannot be read back, so an existing secret is
// never rewritten, and the state key is generated only when its secret is missing), and a rerun
// after a failure finishes what the failed run started. With DryRun it only reads and prints the
// plan. No secret value is ever printed.
package repoinit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"

	gh "github.com/google/go-github/v88/github"
	"golang.org/x/crypto/nacl/box"

	"github.com/pocbot/pocbot/deploy"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// cronRE is the schedule line of the workflow template.
var cronRE = regexp.MustCompile(`(?m)^(\s+- cron: )"[^"]*"`)

// Branch is the branch of init's pull request.
const Branch = "pocbot-init"

// Files the pull request adds.
const (
	WorkflowPath = ".github/workflows/poc.yml"
	ConfigPath   = ".github/poc.yml"
)

// Secret names the workflow reads (deploy/workflow/poc.yml). Optional ones are written only when given.
var (
	requiredSecrets = []string{"POC_APP_ID", "POC_APP_PRIVATE_KEY", "POC_STATE_URL", "POC_STATE_KEY", "POC_IMAGE_BUCKET",
		"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "SCW_DEFAULT_PROJECT_ID"}
	optionalSecrets = []string{"POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"}
)

// Secrets lists every secret name init manages: the required ones, then the optional ones.
func Secrets() (required, optional []string) {
	return append([]string(nil), requiredSecrets...), append([]string(nil), optionalSecrets...)
}

// Config is one run of init.
type Config struct {
	Repo      string // OWNER/REPO
	Env       string // the environment that holds the secrets (default poc)
	APIURL    string // https://api.github.com (a stand-in in tests)
	WebURL    string // https://github.com, for the links printed
	Token     string // a repository admin's token (never printed)
	AppID     int64  // the App to install (POC_APP_ID)
	AppKey    []byte // its private key, PEM (POC_APP_PRIVATE_KEY)
	ActionRef string // what the workflow's uses: pins, "OWNER/REPO@<40-hex sha> # vX.Y.Z"
	Cron      string // the workflow's schedule ("" keeps the template's)
	// Values are the secrets' values by name, for those to write; a missing POC_STATE_KEY is
	// generated. POC_APP_ID and POC_APP_PRIVATE_KEY come from AppID and AppKey.
	Values map[string]string
	DryRun bool
	// IAM, when set, makes the Scaleway identities whose keys are missing from the secrets
	// (instead of taking SCW_ACCESS_KEY and SCW_SECRET_KEY from Values).
	IAM *IAM
	// Buckets are the Object Storage buckets to make (with versioning and the lifecycle rule that
	// expires noncurrent versions); none for file:// state.
	Buckets []Bucket
	Out     io.Writer
	// Transport is the HTTP transport (nil: http.DefaultTransport).
	Transport http.RoundTripper
}

// Report says what init found and did.
type Report struct {
	Target   string   // "environment poc" or "repository secrets"
	Written  []string // secrets written (names)
	Kept     []string // secrets already there
	PR       int      // the open pull request (0: none needed)
	PRURL    string
	Changes  int  // mutating requests made (0 on a converged repository)
	UpToDate bool // the default branch already has the workflow and configuration
}

type runner struct {
	cfg         Config
	c           *gh.Client
	owner, name string
	rep         *Report
	out         io.Writer
}

// Run converges the repository. On error, what was done stays done and the error says what to do;
// a rerun continues from there.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	owner, name, err := splitRepo("init", cfg.Repo)
	if err != nil {
		return nil, err
	}
	defaults(&cfg.Env, &cfg.Out, &cfg.Transport)
	if cfg.WebURL == "" {
		cfg.WebURL = github.DefaultWebURL
	}
	if cfg.Token == "" {
		return nil, errors.New("init: no GitHub token (GH_TOKEN, GITHUB_TOKEN or `gh auth token`)")
	}
	if !validActionRef(cfg.ActionRef) {
		return nil, fmt.Errorf("init: the Action reference %q is not OWNER/REPO@<40-hex commit SHA> # vX.Y.Z: give --action with a release tag's commit", cfg.ActionRef)
	}
	c, err := client(cfg.Transport, cfg.Token, cfg.APIURL)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, c: c, owner: owner, name: name, rep: &Report{}, out: cfg.Out}
	if cfg.DryRun {
		fmt.Fprintf(r.out, "Plan for %s (dry run: nothing is changed):\n", cfg.Repo)
	}
	repo, resp, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return nil, fmt.Errorf("init: read %s with your token: %w (is the token a repository admin's? GH_TOKEN, GITHUB_TOKEN or `gh auth login`)", cfg.Repo, err)
	}
	if err := r.checkScopes(resp.Header); err != nil {
		return r.rep, err
	}
	if err := r.app(ctx, repo); err != nil {
		return r.rep, err
	}
	if err := r.target(ctx, repo); err != nil {
		return r.rep, err
	}
	if err := r.buckets(ctx); err != nil {
		return r.rep, err
	}
	if err := r.secrets(ctx); err != nil {
		return r.rep, err
	}
	if err := r.pullRequest(ctx, repo.GetDefaultBranch()); err != nil {
		return r.rep, err
	}
	if err := r.policyHint(ctx); err != nil {
		return r.rep, err
	}
	return r.rep, nil
}

// splitRepo reads repo as OWNER/REPO; verb names the command in the error.
func splitRepo(verb, repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("%s: --repo %q is not OWNER/REPO", verb, repo)
	}
	return owner, name, nil
}

// defaults fills what init and uninstall default alike: the secrets' environment, the output and
// the HTTP transport.
func defaults(env *string, out *io.Writer, rt *http.RoundTripper) {
	if *env == "" {
		*env = github.DefaultEnvironment
	}
	if *out == nil {
		*out = io.Discard
	}
	if *rt == nil {
		*rt = http.DefaultTransport
	}
}

// client is the installer's GitHub client: requests on rt carrying token, for the API at apiURL.
func client(rt http.RoundTripper, token, apiURL string) (*gh.Client, error) {
	c, _, err := github.NewREST(github.Bearer(rt, token), apiURL)
	if err != nil {
		return nil, fmt.Errorf("init: %w", err)
	}
	return c, nil
}

func validActionRef(ref string) bool {
	uses, comment, _ := strings.Cut(ref, " # ")
	repo, sha, ok := strings.Cut(uses, "@")
	if !ok || strings.Count(repo, "/") != 1 || len(sha) != 40 || strings.TrimSpace(comment) == "" {
		return false
	}
	for _, ch := range sha {
		if !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'f') {
			return false
		}
	}
	return true
}

// app checks that the App is installed on the repository (its own JWT asks). An App installed on
// the owner's selected repositories only takes this one in without a browser (addToInstallation).
func (r *runner) app(ctx context.Context, repo *gh.Repository) error {
	if r.cfg.AppID == 0 || len(r.cfg.AppKey) == 0 {
		return errors.New("init: no App: set POC_APP_ID and POC_APP_PRIVATE_KEY (or POC_APP_PRIVATE_KEY_FILE) of an existing App, or register one first with `bot app create`")
	}
	ac, err := github.AppREST(r.cfg.Transport, r.cfg.AppID, r.cfg.AppKey, r.cfg.APIURL)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	app, _, err := ac.Apps.Get(ctx, "")
	if err != nil {
		return fmt.Errorf("init: authenticate as App %d: %w (do POC_APP_ID and the key belong to the same App?)", r.cfg.AppID, err)
	}
	if _, resp, err := ac.Apps.GetRepositoryInstallation(ctx, r.owner, r.name); err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			if added, err := r.addToInstallation(ctx, ac, app, repo); added || err != nil {
				return err
			}
			return fmt.Errorf("init: the App %s is not installed on %s/%s: install it (one click, GitHub requires the browser) at %s/apps/%s/installations/new, choose %s, then rerun `bot init --repo %s/%s`",
				app.GetSlug(), r.owner, r.name, strings.TrimRight(r.cfg.WebURL, "/"), app.GetSlug(), r.name, r.owner, r.name)
		}
		return fmt.Errorf("init: find the App's installation on %s/%s: %w", r.owner, r.name, err)
	}
	fmt.Fprintf(r.out, "✓ App %s (id %d) is installed on %s/%s\n", app.GetSlug(), r.cfg.AppID, r.owner, r.name)
	return nil
}

// addToInstallation adds the repository to the App's installation on its owner, when there is one
// (an installation on selected repositories): PUT /user/installations/{id}/repositories/{repo id}
// with the admin's token, so that a second repository takes no browser trip. It reports false,
// nil when the owner has no installation (the browser is then the only way).
func (r *runner) addToInstallation(ctx context.Context, ac *gh.Client, app *gh.App, repo *gh.Repository) (bool, error) {
	var inst *gh.Installation
	opts := &gh.ListOptions{PerPage: 100}
	for inst == nil {
		list, resp, err := ac.Apps.ListInstallations(ctx, opts)
		if err != nil {
			return false, fmt.Errorf("init: list the App %s's installations (GET /app/installations): %w", app.GetSlug(), err)
		}
		for _, i := range list {
			if strings.EqualFold(i.GetAccount().GetLogin(), r.owner) {
				inst = i
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	if inst == nil {
		return false, nil
	}
	if r.cfg.DryRun {
		fmt.Fprintf(r.out, "+ would add %s/%s to the App %s's installation on %s (id %d)\n", r.owner, r.name, app.GetSlug(), r.owner, inst.GetID())
		return true, nil
	}
	if _, _, err := r.c.Apps.AddRepository(ctx, inst.GetID(), repo.GetID()); err != nil {
		return false, fmt.Errorf("init: add %s/%s to the App %s's installation on %s (PUT /user/installations/%d/repositories/%d): %w "+
			"(GitHub takes a classic token with the repo scope of a repository admin here; or add the repository in the browser at %s/settings/installations/%d, then rerun)",
			r.owner, r.name, app.GetSlug(), r.owner, inst.GetID(), repo.GetID(), err, strings.TrimRight(r.cfg.WebURL, "/"), inst.GetID())
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "✓ added %s/%s to the App %s's installation on %s (id %d): no browser needed\n", r.owner, r.name, app.GetSlug(), r.owner, inst.GetID())
	return true, nil
}

// environmentConfig is what GET …/environments/{e} answers that init's PUT must carry back.
type environmentConfig struct {
	Policy *struct {
		Custom bool `json:"custom_branch_policies"`
	} `json:"deployment_branch_policy"`
	CanAdminsBypass *bool `json:"can_admins_bypass"`
	Rules           []struct {
		Type              string `json:"type"`
		WaitTimer         int    `json:"wait_timer"`
		PreventSelfReview bool   `json:"prevent_self_review"`
		Reviewers         []struct {
			Type     string `json:"type"`
			Reviewer struct {
				ID int64 `json:"id"`
			} `json:"reviewer"`
		} `json:"reviewers"`
	} `json:"protection_rules"`
}

// putLimitedToChosenBranches is the PUT body that limits the environment to custom deployment
// branches. The PUT states the environment's whole configuration: an existing one's wait timer,
// required reviewers (with prevent_self_review) and can_admins_bypass are sent back, so that init
// changes its deployment branches only and never widens who may approve or skip them.
func (cur environmentConfig) putLimitedToChosenBranches() map[string]any {
	body := map[string]any{"deployment_branch_policy": map[string]bool{"protected_branches": false, "custom_branch_policies": true}}
	if cur.CanAdminsBypass != nil {
		body["can_admins_bypass"] = *cur.CanAdminsBypass
	}
	for _, rule := range cur.Rules {
		switch rule.Type {
		case "wait_timer":
			body["wait_timer"] = rule.WaitTimer
		case "required_reviewers":
			var list []map[string]any
			for _, rv := range rule.Reviewers {
				list = append(list, map[string]any{"type": rv.Type, "id": rv.Reviewer.ID})
			}
			body["reviewers"] = list
			body["prevent_self_review"] = rule.PreventSelfReview
		}
	}
	return body
}

// target decides where the secrets go: the environment (created or updated to deploy from the
// default branch only) when the repository can have it, otherwise the repository's secrets.
func (r *runner) target(ctx context.Context, repo *gh.Repository) error {
	env := r.cfg.Env
	path := fmt.Sprintf("repos/%s/%s/environments/%s", r.owner, r.name, url.PathEscape(env))
	var cur environmentConfig
	resp, err := r.do(ctx, http.MethodGet, path, nil, &cur)
	exists := err == nil
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return fmt.Errorf("init: read environment %s of %s: %w", env, r.cfg.Repo, err)
	}
	if !exists && repo.GetPrivate() {
		// A previous init that found no environments left the state key in the repository's
		// secrets: keep to that choice without asking GitHub to create the environment again.
		r.rep.Target = "repository secrets"
		have, err := r.existingSecrets(ctx)
		if err != nil {
			return err
		}
		if have["POC_STATE_KEY"] {
			fmt.Fprintf(r.out, "✓ the secrets are the repository's (a previous init found no environments on %s)\n", r.cfg.Repo)
			return nil
		}
		r.rep.Target = ""
	}
	if !exists || cur.Policy == nil || !cur.Policy.Custom {
		if r.cfg.DryRun {
			fmt.Fprintf(r.out, "+ would create or update environment %s (deployments from %s only), or use repository secrets if the repository cannot have environments\n", env, repo.GetDefaultBranch())
			r.rep.Target = "environment " + env
			return nil
		}
		body := cur.putLimitedToChosenBranches()
		resp, err := r.do(ctx, http.MethodPut, path, body, nil)
		if err != nil {
			if repo.GetPrivate() && resp != nil && (resp.StatusCode == http.StatusUnprocessableEntity || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
				r.rep.Target = "repository secrets"
				fmt.Fprintf(r.out, "! %s is private and cannot have environments on its plan (GitHub Free): the secrets go to the repository's secrets, readable by any workflow of the repository\n", r.cfg.Repo)
				return nil
			}
			return fmt.Errorf("init: create environment %s on %s: %w", env, r.cfg.Repo, err)
		}
		r.rep.Changes++
		fmt.Fprintf(r.out, "+ environment %s: deployments from chosen branches only\n", env)
	}
	r.rep.Target = "environment " + env
	var pol struct {
		Policies []struct {
			Name string `json:"name"`
		} `json:"branch_policies"`
	}
	if exists || !r.cfg.DryRun {
		if _, err := r.do(ctx, http.MethodGet, path+"/deployment-branch-policies", nil, &pol); err != nil {
			return fmt.Errorf("init: read the deployment branches of environment %s: %w", env, err)
		}
	}
	for _, p := range pol.Policies {
		if p.Name == repo.GetDefaultBranch() {
			fmt.Fprintf(r.out, "✓ environment %s deploys from %s\n", env, p.Name)
			return nil
		}
	}
	if r.cfg.DryRun {
		fmt.Fprintf(r.out, "+ would let environment %s deploy from %s only\n", env, repo.GetDefaultBranch())
		return nil
	}
	if _, err := r.do(ctx, http.MethodPost, path+"/deployment-branch-policies", map[string]string{"name": repo.GetDefaultBranch(), "type": "branch"}, nil); err != nil {
		return fmt.Errorf("init: let environment %s deploy from %s: %w", env, repo.GetDefaultBranch(), err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ environment %s deploys from %s only\n", env, repo.GetDefaultBranch())
	return nil
}

func (r *runner) secretsPath() string {
	if r.rep.Target == "repository secrets" {
		return SecretsPath(r.owner, r.name, "")
	}
	return SecretsPath(r.owner, r.name, r.cfg.Env)
}

// SecretsPath is the API path of the Actions secrets of the environment env of owner/name, or
// with env "" of the repository.
func SecretsPath(owner, name, env string) string {
	if env == "" {
		return fmt.Sprintf("repos/%s/%s/actions/secrets", owner, name)
	}
	return fmt.Sprintf("repos/%s/%s/environments/%s/secrets", owner, name, url.PathEscape(env))
}

// SecretNames lists the names of the Actions secrets under path (SecretsPath), every page, as
// GitHub gives them (upper-cased). found is false, with no error, where GitHub answers 404: no
// such environment.
func SecretNames(ctx context.Context, c *gh.Client, path string) (names []string, found bool, err error) {
	for page := 1; page < 100; page++ {
		var list struct {
			Secrets []struct {
				Name string `json:"name"`
			} `json:"secrets"`
		}
		req, err := c.NewRequest(ctx, http.MethodGet, fmt.Sprintf("%s?per_page=100&page=%d", path, page), nil)
		if err != nil {
			return nil, false, err
		}
		resp, err := c.Do(req, &list)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		for _, s := range list.Secrets {
			names = append(names, s.Name)
		}
		if len(list.Secrets) < 100 {
			break
		}
	}
	return names, true, nil
}

// existingSecrets is the set of the secrets' names where init writes them; in a dry run, an
// environment not made yet has none.
func (r *runner) existingSecrets(ctx context.Context) (map[string]bool, error) {
	names, found, err := SecretNames(ctx, r.c, r.secretsPath())
	if err == nil && !found && !r.cfg.DryRun {
		err = errors.New("GitHub answers 404 Not Found")
	}
	if err != nil {
		return nil, fmt.Errorf("init: list the %s of %s: %w", r.rep.Target, r.cfg.Repo, err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[strings.ToUpper(n)] = true
	}
	return have, nil
}

func (r *runner) secrets(ctx context.Context) error {
	have, err := r.existingSecrets(ctx)
	if err != nil {
		return err
	}
	values := map[string]string{}
	for k, v := range r.cfg.Values {
		values[k] = v
	}
	values["POC_APP_ID"] = fmt.Sprint(r.cfg.AppID)
	values["POC_APP_PRIVATE_KEY"] = string(r.cfg.AppKey)
	if err := r.iamValues(ctx, have, values); err != nil {
		return err
	}
	var missing []string
	var todo []string
	for _, n := range requiredSecrets {
		if have[n] {
			continue
		}
		if values[n] == "" && n == "POC_STATE_KEY" {
			k, err := statestore.NewKeyURL()
			if err != nil {
				return fmt.Errorf("init: %w", err)
			}
			values[n] = k
		}
		if values[n] == "" {
			missing = append(missing, n)
		}
		todo = append(todo, n)
	}
	for _, n := range optionalSecrets {
		if !have[n] && values[n] != "" {
			todo = append(todo, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("init: the %s of %s lack %s and no value was given: set them in the environment of `bot init` (see `bot init --help`) and rerun",
			r.rep.Target, r.cfg.Repo, strings.Join(missing, ", "))
	}
	for _, n := range append(append([]string(nil), requiredSecrets...), optionalSecrets...) {
		if have[n] {
			r.rep.Kept = append(r.rep.Kept, n)
			fmt.Fprintf(r.out, "✓ secret %s is set (kept: a secret cannot be read back, so init never replaces one)\n", n)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if r.cfg.DryRun {
		for _, n := range todo {
			fmt.Fprintf(r.out, "+ would write secret %s to the %s\n", n, r.rep.Target)
		}
		return nil
	}
	var key struct {
		KeyID string `json:"key_id"`
		Key   string `json:"key"`
	}
	if _, err := r.do(ctx, http.MethodGet, r.secretsPath()+"/public-key", nil, &key); err != nil {
		return fmt.Errorf("init: read the public key of the %s: %w", r.rep.Target, err)
	}
	raw, err := base64.StdEncoding.DecodeString(key.Key)
	if err != nil || len(raw) != 32 {
		return fmt.Errorf("init: the public key of the %s is not 32 base64 bytes", r.rep.Target)
	}
	var pub [32]byte
	copy(pub[:], raw)
	// The state key first: when it is written, every later run keeps it.
	sort.SliceStable(todo, func(i, j int) bool { return todo[i] == "POC_STATE_KEY" && todo[j] != "POC_STATE_KEY" })
	for _, n := range todo {
		sealed, err := box.SealAnonymous(nil, []byte(values[n]), &pub, rand.Reader)
		if err != nil {
			return fmt.Errorf("init: seal secret %s: %w", n, err)
		}
		body := map[string]string{"encrypted_value": base64.StdEncoding.EncodeToString(sealed), "key_id": key.KeyID}
		if _, err := r.do(ctx, http.MethodPut, r.secretsPath()+"/"+n, body, nil); err != nil {
			return fmt.Errorf("init: write secret %s to the %s of %s: %w (rerun: secrets already written are kept)", n, r.rep.Target, r.cfg.Repo, err)
		}
		r.rep.Changes++
		r.rep.Written = append(r.rep.Written, n)
		fmt.Fprintf(r.out, "+ secret %s written to the %s\n", n, r.rep.Target)
	}
	return nil
}

// WorkflowFile is the workflow init proposes: deploy/workflow/poc.yml pinned to actionRef, reading
// every value from secrets (init writes them all as secrets), and without the environment when
// the secrets are the repository's.
func WorkflowFile(actionRef string, environment bool, cron string) []byte {
	w := strings.Replace(deploy.Workflow, deploy.PlaceholderRef, actionRef, 1)
	if cron != "" {
		w = cronRE.ReplaceAllString(w, "${1}\""+cron+"\"")
	}
	w = strings.ReplaceAll(w, "${{ vars.", "${{ secrets.")
	if !environment {
		w = strings.Replace(w, "    environment: poc\n", "", 1)
	}
	return []byte(w)
}

// pullRequest proposes the workflow and the configuration unless the default branch has them.
func (r *runner) pullRequest(ctx context.Context, base string) error {
	want := map[string][]byte{
		WorkflowPath: WorkflowFile(r.cfg.ActionRef, r.rep.Target != "repository secrets", r.cfg.Cron),
		ConfigPath:   []byte(deploy.RepoConfig),
	}
	paths := []string{WorkflowPath, ConfigPath}
	onBase := 0
	for _, p := range paths {
		if b, _, ok, err := r.file(ctx, base, p); err != nil {
			return err
		} else if ok && (p == ConfigPath || bytes.Equal(b, want[p])) {
			onBase++ // an existing configuration is the user's: never proposed over
		}
	}
	if onBase == len(paths) {
		r.rep.UpToDate = true
		fmt.Fprintf(r.out, "✓ %s has the pinned workflow and .github/poc.yml\n", base)
		return nil
	}
	prs, _, err := r.c.PullRequests.List(ctx, r.owner, r.name, &gh.PullRequestListOptions{State: "open", Head: r.owner + ":" + Branch})
	if err != nil {
		return fmt.Errorf("init: list pull requests of %s: %w", r.cfg.Repo, err)
	}
	if len(prs) > 0 && !r.cfg.DryRun {
		// Bring the branch up to date (a rerun with another --action), then point at it.
		if err := r.putFiles(ctx, base, paths, want, false); err != nil {
			return err
		}
		r.rep.PR, r.rep.PRURL = prs[0].GetNumber(), prs[0].GetHTMLURL()
		fmt.Fprintf(r.out, "✓ pull request #%d adds the workflow: merge it (%s)\n", r.rep.PR, r.rep.PRURL)
		return nil
	}
	if r.cfg.DryRun {
		if len(prs) > 0 {
			fmt.Fprintf(r.out, "✓ pull request #%d is open: merge it\n", prs[0].GetNumber())
		} else {
			fmt.Fprintf(r.out, "+ would open a pull request from %s adding %s (uses: %s) and %s\n", Branch, WorkflowPath, r.cfg.ActionRef, ConfigPath)
		}
		return nil
	}
	if err := r.putFiles(ctx, base, paths, want, true); err != nil {
		return err
	}
	body := "Adds pocbot's workflow, pinned to the Action's commit (`" + r.cfg.ActionRef + "`), and `.github/poc.yml` with every setting at its default.\n\n" +
		"The secrets it reads are in the " + r.rep.Target + " (written by `bot init`). Merge, then comment `/poc up` on an issue. `bot doctor --repo " + r.cfg.Repo + "` checks the installation."
	pr, _, err := r.c.PullRequests.Create(ctx, r.owner, r.name, &gh.NewPullRequest{Title: gh.String("pocbot: add the /poc workflow"), Head: gh.String(Branch), Base: gh.String(base), Body: gh.String(body)})
	if err != nil {
		return fmt.Errorf("init: open the pull request from %s to %s: %w (rerun: the branch is kept)", Branch, base, err)
	}
	r.rep.Changes++
	r.rep.PR, r.rep.PRURL = pr.GetNumber(), pr.GetHTMLURL()
	fmt.Fprintf(r.out, "+ pull request #%d adds the workflow and .github/poc.yml: merge it, then comment /poc up on an issue (%s)\n", pr.GetNumber(), pr.GetHTMLURL())
	return nil
}

// putFiles writes the files to the init branch (created from base when missing).
func (r *runner) putFiles(ctx context.Context, base string, paths []string, want map[string][]byte, create bool) error {
	if _, resp, err := r.c.Git.GetRef(ctx, r.owner, r.name, "heads/"+Branch); err != nil {
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			return fmt.Errorf("init: read branch %s: %w", Branch, err)
		}
		head, _, err := r.c.Git.GetRef(ctx, r.owner, r.name, "heads/"+base)
		if err != nil {
			return fmt.Errorf("init: read branch %s: %w", base, err)
		}
		if _, _, err := r.c.Git.CreateRef(ctx, r.owner, r.name, gh.CreateRef{Ref: "refs/heads/" + Branch, SHA: head.GetObject().GetSHA()}); err != nil {
			return fmt.Errorf("init: create branch %s: %w", Branch, err)
		}
		r.rep.Changes++
	}
	for _, p := range paths {
		cur, sha, ok, err := r.file(ctx, Branch, p)
		if err != nil {
			return err
		}
		if ok && (p == ConfigPath || bytes.Equal(cur, want[p])) {
			continue
		}
		opts := &gh.RepositoryContentFileOptions{Message: gh.String("pocbot: add " + p), Content: want[p], Branch: gh.String(Branch)}
		if ok {
			opts.SHA = gh.String(sha)
		}
		if _, _, err := r.c.Repositories.CreateFile(ctx, r.owner, r.name, p, opts); err != nil {
			return fmt.Errorf("init: write %s on branch %s: %w (rerun to finish)", p, Branch, err)
		}
		r.rep.Changes++
	}
	return nil
}

// file reads a file of a branch: content, blob sha, whether it exists.
func (r *runner) file(ctx context.Context, branch, path string) ([]byte, string, bool, error) {
	fc, _, resp, err := r.c.Repositories.GetContents(ctx, r.owner, r.name, path, &gh.RepositoryContentGetOptions{Ref: branch})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, "", false, nil
		}
		return nil, "", false, fmt.Errorf("init: read %s on %s: %w", path, branch, err)
	}
	s, err := fc.GetContent()
	if err != nil {
		return nil, "", false, fmt.Errorf("init: decode %s on %s: %w", path, branch, err)
	}
	return []byte(s), fc.GetSHA(), true, nil
}

// do sends one JSON request on a path relative to the API root.
func (r *runner) do(ctx context.Context, method, path string, body, out any) (*gh.Response, error) {
	req, err := r.c.NewRequest(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	return r.c.Do(req, out)
}

// ResolveAction is the Action reference of a release: "OWNER/REPO@<commit sha> # TAG", the commit
// the tag points at (through an annotated tag's object when it is one), read with the user's token.
func ResolveAction(ctx context.Context, apiURL, token, actionRepo, tag string, rt http.RoundTripper) (string, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	c, err := client(rt, token, apiURL)
	if err != nil {
		return "", err
	}
	owner, name, _ := strings.Cut(actionRepo, "/")
	ref, _, err := c.Git.GetRef(ctx, owner, name, "tags/"+tag)
	if err != nil {
		return "", fmt.Errorf("init: find the tag %s of %s: %w (give --action OWNER/REPO@<commit SHA> # %s)", tag, actionRepo, err, tag)
	}
	sha := ref.GetObject().GetSHA()
	if ref.GetObject().GetType() == "tag" {
		t, _, err := c.Git.GetTag(ctx, owner, name, sha)
		if err != nil {
			return "", fmt.Errorf("init: read the annotated tag %s of %s: %w", tag, actionRepo, err)
		}
		sha = t.GetObject().GetSHA()
	}
	out := actionRepo + "@" + sha + " # " + tag
	if !validActionRef(out) {
		return "", fmt.Errorf("init: the tag %s of %s points at %q, not a commit SHA", tag, actionRepo, sha)
	}
	return out, nil
}
