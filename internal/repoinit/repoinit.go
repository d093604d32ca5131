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
// plan. No secret value is ever printed. It never ships what it did not write: a branch of its name
// holding anything else is refused (branch.go), and what it writes is recorded, signed, in a
// repository variable (record.go), by which uninstall deletes it and nothing else.
package repoinit

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	gh "github.com/google/go-github/v88/github"
	"golang.org/x/crypto/nacl/box"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Branch is the branch of init's pull request.
const Branch = "pocbot-init"

// Files the pull request adds (PRWorkflowPath with Config.PRWorkflow).
const (
	WorkflowPath   = ".github/workflows/poc.yml"
	ConfigPath     = ".github/poc.yml"
	PRWorkflowPath = ".github/workflows/poc-pr.yml"
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
	// PRWorkflow adds the pull requests' end-to-end workflow (deploy/workflow/poc-pr.yml) to the
	// pull request; an existing one on the default branch is the user's and is never proposed over.
	PRWorkflow bool
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
	rec         *record         // what init wrote on earlier runs, and now
	store       *recordStore    // where rec is kept (RecordVariable)
	openPR      *gh.PullRequest // init's open pull request (checkBranch)
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
	if err := r.loadRecord(ctx); err != nil {
		return r.rep, err
	}
	// A branch of init's name holding what init did not write is refused before anything is
	// written.
	if r.openPR, err = r.checkBranch(ctx, repo.GetDefaultBranch()); err != nil {
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
	return SecretsPath(r.owner, r.name, r.secretsEnv())
}

// secretsEnv is the environment the secrets go to ("": the repository's secrets).
func (r *runner) secretsEnv() string {
	if r.rep.Target == "repository secrets" {
		return ""
	}
	return r.cfg.Env
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
	var toWrite []string
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
		toWrite = append(toWrite, n)
	}
	for _, n := range optionalSecrets {
		if !have[n] && values[n] != "" {
			toWrite = append(toWrite, n)
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
	if len(toWrite) == 0 {
		return nil
	}
	if r.cfg.DryRun {
		for _, n := range toWrite {
			fmt.Fprintf(r.out, "+ would write secret %s to the %s (and record it in the repository variable %s)\n", n, r.rep.Target, RecordVariable)
		}
		return nil
	}
	// Recorded before they are written: a run cut in between leaves a record naming a secret
	// that may not exist (uninstall skips it), never a secret of init's that uninstall would keep.
	for _, n := range toWrite {
		r.rec.addSecret(n, r.secretsEnv())
	}
	if err := r.saveRecord(ctx); err != nil {
		return err
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
	sort.SliceStable(toWrite, func(i, j int) bool { return toWrite[i] == "POC_STATE_KEY" && toWrite[j] != "POC_STATE_KEY" })
	for _, n := range toWrite {
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
