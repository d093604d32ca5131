package repoinit

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
)

const testRef = "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"

type fixture struct {
	gh    *ghsim.Server
	url   string
	token string
	cfg   Config
}

func newFixture(t *testing.T, repo string) *fixture {
	t.Helper()
	return newFixtureWith(t, repo, ghsim.Options{})
}

// newFixtureWith is newFixture on a stand-in shaped by o (a register row's reading).
func newFixtureWith(t *testing.T, repo string, o ghsim.Options) *fixture {
	t.Helper()
	s, url := githubtest.Serve(t, o)
	s.AddRepo(repo, "main")
	s.SetPermission(repo, "ada", "admin")
	tok := s.AddUserToken("ada")
	f := &fixture{gh: s, url: url, token: tok}
	f.cfg = Config{Repo: repo, APIURL: url, Token: tok, AppID: s.AppID(), AppKey: s.AppPrivateKeyPEM(), ActionRef: testRef,
		Values: map[string]string{
			"POC_STATE_URL": "s3://acme-poc-state?region=fr-par", "POC_IMAGE_BUCKET": "acme-poc-images",
			"SCW_ACCESS_KEY": "SCWAAAAAAAAAAAAAAAAA", "SCW_SECRET_KEY": "11111111-2222-3333-4444-555555555555",
			"SCW_DEFAULT_PROJECT_ID": "66666666-7777-8888-9999-000000000000",
		}}
	return f
}

// writes counts the mutating requests the stand-in received from index from on.
func (f *fixture) writes(from int) (n int, list []string) {
	for _, r := range f.gh.Requests()[from:] {
		if r.Method != http.MethodGet {
			n++
			list = append(list, r.Method+" "+r.Path)
		}
	}
	return n, list
}

func (f *fixture) run(t *testing.T, mut func(*Config)) (*Report, string, error) {
	t.Helper()
	cfg := f.cfg
	var out bytes.Buffer
	cfg.Out = &out
	if mut != nil {
		mut(&cfg)
	}
	rep, err := Run(t.Context(), cfg)
	return rep, out.String(), err
}

func noSecretIn(t *testing.T, out string, cfg Config, extra ...string) {
	t.Helper()
	for _, v := range append(extra, cfg.Values["SCW_SECRET_KEY"], string(cfg.AppKey)[40:80]) {
		if v != "" && strings.Contains(out, v) {
			t.Errorf("the output holds a secret value:\n%s", out)
		}
	}
}

// First run: environment with the default branch only, every secret sealed and readable by the
// workflow, a pull request with the pinned workflow; the second run changes nothing, and neither
// does a run after the merge.
func TestInitConvergesAndSecondRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	rep, out, err := f.run(t, nil)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if rep.Target != "environment poc" || rep.PR == 0 {
		t.Fatalf("report %+v\n%s", rep, out)
	}
	if ok, branches := f.gh.Environment("acme/shop", "poc"); !ok || len(branches) != 1 || branches[0] != "main" {
		t.Errorf("environment poc: exists %v, branches %v; want deployments from main only", ok, branches)
	}
	for name, want := range f.cfg.Values {
		if got, ok := f.gh.Secret("acme/shop", "poc", name); !ok || got != want {
			t.Errorf("secret %s: %q (set %v), want the given value", name, got, ok)
		}
	}
	key, ok := f.gh.Secret("acme/shop", "poc", "POC_STATE_KEY")
	if !ok || !strings.HasPrefix(key, "base64key://") || len(key) < 50 {
		t.Errorf("POC_STATE_KEY %v: want a generated base64key://", ok)
	}
	if got, _ := f.gh.Secret("acme/shop", "poc", "POC_APP_PRIVATE_KEY"); got != string(f.cfg.AppKey) {
		t.Error("POC_APP_PRIVATE_KEY is not the App's key")
	}
	noSecretIn(t, out, f.cfg, key)
	wf, ok := f.gh.File("acme/shop", Branch, WorkflowPath)
	if !ok || !strings.Contains(string(wf), "uses: "+testRef) || strings.Contains(string(wf), "vars.") || !strings.Contains(string(wf), "environment: poc") {
		t.Errorf("workflow on %s: %v\n%s", Branch, ok, wf)
	}

	before := len(f.gh.Requests())
	rep2, out2, err := f.run(t, nil)
	if err != nil {
		t.Fatalf("second init: %v\n%s", err, out2)
	}
	if n, list := f.writes(before); n != 0 || rep2.Changes != 0 || len(rep2.Written) != 0 || rep2.PR != rep.PR {
		t.Errorf("the second init changed things: %d writes %v, report %+v\n%s", n, list, rep2, out2)
	}
	if got, _ := f.gh.Secret("acme/shop", "poc", "POC_STATE_KEY"); got != key {
		t.Error("the second init replaced the state key: every state written with the old one would be lost")
	}

	if err := f.gh.MergePR("acme/shop", rep.PR); err != nil {
		t.Fatal(err)
	}
	before = len(f.gh.Requests())
	rep3, out3, err := f.run(t, nil)
	if err != nil || !rep3.UpToDate {
		t.Fatalf("init after the merge: %v, %+v\n%s", err, rep3, out3)
	}
	if n, list := f.writes(before); n != 0 {
		t.Errorf("init after the merge wrote %v", list)
	}
}

// A private repository on GitHub Free has no environments: the secrets go to the repository, the
// workflow has no environment, and init says so.
func TestInitPrivateFreeRepositoryUsesRepositorySecrets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "solo/tool")
	f.gh.SetPrivate("solo/tool", true, true)
	rep, out, err := f.run(t, nil)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if rep.Target != "repository secrets" || !strings.Contains(out, "cannot have environments") {
		t.Fatalf("target %q\n%s", rep.Target, out)
	}
	if v, ok := f.gh.Secret("solo/tool", "", "SCW_ACCESS_KEY"); !ok || v != f.cfg.Values["SCW_ACCESS_KEY"] {
		t.Error("SCW_ACCESS_KEY is not a repository secret")
	}
	wf, _ := f.gh.File("solo/tool", Branch, WorkflowPath)
	if strings.Contains(string(wf), "environment: poc") {
		t.Error("the workflow names an environment the repository cannot have")
	}
	before := len(f.gh.Requests())
	if _, out, err := f.run(t, nil); err != nil {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if n, list := f.writes(before); n != 0 {
		t.Errorf("the second init wrote %v", list)
	}
}

// --dry-run reads only and prints the plan.
func TestInitDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	_, out, err := f.run(t, func(c *Config) { c.DryRun = true })
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if n, list := f.writes(0); n != 0 {
		t.Errorf("the dry run wrote %v", list)
	}
	for _, want := range []string{"would write secret SCW_SECRET_KEY", "would open a pull request", "would create or update environment poc"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	noSecretIn(t, out, f.cfg)
}

// Failures say what to do and leave what a rerun finishes.
func TestInitFailuresSayWhatToDo(t *testing.T) {
	t.Parallel()
	t.Run("App not installed", func(t *testing.T) {
		f := newFixture(t, "acme/shop")
		f.gh.Uninstall("acme/shop")
		_, _, err := f.run(t, nil)
		if err == nil || !strings.Contains(err.Error(), "/installations/new") || !strings.Contains(err.Error(), "rerun") {
			t.Fatalf("err = %v; want the install link and rerun", err)
		}
		if n, list := f.writes(0); n != 0 {
			t.Errorf("wrote %v before the App was installed", list)
		}
	})
	t.Run("missing value, then given", func(t *testing.T) {
		f := newFixture(t, "acme/shop")
		_, _, err := f.run(t, func(c *Config) {
			c.Values = map[string]string{"POC_STATE_URL": "s3://x"}
		})
		if err == nil || !strings.Contains(err.Error(), "SCW_ACCESS_KEY") {
			t.Fatalf("err = %v; want the missing secrets named", err)
		}
		if _, _, err := f.run(t, nil); err != nil {
			t.Fatalf("the rerun with the values did not finish: %v", err)
		}
	})
	t.Run("not an admin", func(t *testing.T) {
		f := newFixture(t, "acme/shop")
		f.gh.SetPermission("acme/shop", "ada", "write")
		_, _, err := f.run(t, nil)
		if err == nil || !strings.Contains(err.Error(), "environment") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("action not pinned by SHA", func(t *testing.T) {
		f := newFixture(t, "acme/shop")
		_, _, err := f.run(t, func(c *Config) { c.ActionRef = "pocbot/pocbot@v1.2.3" })
		if err == nil || !strings.Contains(err.Error(), "40-hex") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestGitHubTokenReadsAsGhDoes(t *testing.T) {
	t.Parallel()
	gh := func(context.Context) (string, error) { return "from-gh\n", nil }
	noGh := func(context.Context) (string, error) { return "", errors.New("not logged in") }
	for _, tc := range []struct {
		env  map[string]string
		gh   func(context.Context) (string, error)
		want string
		src  TokenSource
	}{
		{map[string]string{"GH_TOKEN": "a", "GITHUB_TOKEN": "b"}, gh, "a", "GH_TOKEN"},
		{map[string]string{"GITHUB_TOKEN": "b"}, gh, "b", "GITHUB_TOKEN"},
		{map[string]string{}, gh, "from-gh", "gh auth token"},
		{map[string]string{}, noGh, "", ""},
	} {
		tok, src, err := GitHubToken(t.Context(), func(k string) string { return tc.env[k] }, tc.gh)
		if tok != tc.want || src != tc.src || (tc.want == "") != (err != nil) {
			t.Errorf("env %v: %q from %q, err %v; want %q from %q", tc.env, tok, src, err, tc.want, tc.src)
		}
	}
}

func TestResolveAction(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	f.gh.AddRepo("pocbot/pocbot", "main")
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	f.gh.SetTag("pocbot/pocbot", "v1.2.3", sha)
	got, err := ResolveAction(t.Context(), f.url, f.token, "pocbot/pocbot", "v1.2.3", nil)
	if err != nil || got != "pocbot/pocbot@"+sha+" # v1.2.3" {
		t.Fatalf("ResolveAction = %q, %v", got, err)
	}
	if _, err := ResolveAction(t.Context(), f.url, f.token, "pocbot/pocbot", "v9.9.9", nil); err == nil || !strings.Contains(err.Error(), "--action") {
		t.Fatalf("an unknown tag: %v", err)
	}
}

// TestInitChecksScopesFirst: a classic token without the workflow scope (gh's default login over
// SSH: repo, read:org, gist) or without repo stops init before it writes anything, naming what
// is missing and the `gh auth refresh -s …` that adds it; a dry run says the same and goes on.
// A fine-grained token has no scopes to read: init says what it needs and goes on.
func TestInitChecksScopesFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		tok     ghsim.UserToken
		dry     bool
		stop    string // "" when init goes on
		missing string
	}{
		{"gh's default login", ghsim.UserToken{Kind: ghsim.TokenOAuth, Scopes: []string{"gist", "read:org", "repo"}}, false, "workflow", "-s workflow`"},
		{"public_repo only", ghsim.UserToken{Scopes: []string{"public_repo", "workflow"}}, false, "repo", "-s repo`"},
		{"no scopes", ghsim.UserToken{}, false, "repo", "-s repo,workflow`"},
		{"dry run without workflow", ghsim.UserToken{Kind: ghsim.TokenOAuth, Scopes: []string{"repo"}}, true, "", "would stop here"},
		{"fine-grained", ghsim.UserToken{Kind: ghsim.TokenFineGrained, Workflows: true}, false, "", "fine-grained token?"},
		{"repo and workflow", ghsim.UserToken{Kind: ghsim.TokenOAuth, Scopes: []string{"repo", "workflow", "read:org"}}, false, "", "scopes cover init"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "acme/shop")
			tok := f.gh.AddUserTokenWith("ada", tc.tok)
			_, out, err := f.run(t, func(c *Config) { c.Token, c.DryRun = tok, tc.dry })
			if n, list := f.writes(0); tc.stop != "" && n != 0 {
				t.Errorf("%d writes before stopping: %v", n, list)
			}
			switch {
			case tc.stop == "" && err != nil:
				t.Fatalf("init stopped: %v\n%s", err, out)
			case tc.stop != "" && (err == nil || !strings.Contains(err.Error(), "lacks the scope "+tc.stop) ||
				!strings.Contains(err.Error(), "gh auth refresh -h github.com "+tc.missing) || !strings.Contains(err.Error(), "Nothing was written")):
				t.Fatalf("err = %v, want it to name %s and the fix %q", err, tc.stop, tc.missing)
			case tc.stop == "" && !strings.Contains(out, tc.missing):
				t.Errorf("the output does not say %q:\n%s", tc.missing, out)
			}
		})
	}
}
