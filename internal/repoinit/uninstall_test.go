package repoinit

// Uninstall removes what init made, and only that: the environment, the secrets, the variables.

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// Uninstall deletes the `poc` environment when it holds nothing but what init put there, and keeps
// it, naming what keeps it, when it holds anything of someone else's (GitHub would delete that with
// it). Failed on the old code: the environment was left in every case.
func TestUninstallRemovesTheEnvironmentOnlyWhenNothingElseIsInIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		add   func(t *testing.T, f *fixture, c *gh.Client) // what a user put in the environment after init
		keeps []string                                     // what the output names; nil: the environment goes
		vars  []string                                     // pocbot's variables (docs/install.md's long way), deleted either way
	}{
		{name: "made by init", add: func(*testing.T, *fixture, *gh.Client) {}},
		{name: "a foreign secret", keeps: []string{"the secret DEPLOY_TOKEN"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) { f.gh.SetSecret("acme/shop", "poc", "DEPLOY_TOKEN", "x") }},
		{name: "a variable", keeps: []string{"the variable REGION"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) {
				f.gh.SetEnvironmentVariable("acme/shop", "poc", "REGION", "fr-par")
			}},
		// docs/install.md's long way sets POC_APP_ID, POC_STATE_URL, POC_IMAGE_BUCKET and
		// SCW_DEFAULT_PROJECT_ID as the environment's variables (the workflow reads vars.X).
		// Failed on the old code: they kept the environment, named as "which init does not make".
		{name: "pocbot's variables", vars: []string{"POC_APP_ID", "POC_STATE_URL"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) {
				f.gh.SetEnvironmentVariable("acme/shop", "poc", "POC_APP_ID", "7")
				f.gh.SetEnvironmentVariable("acme/shop", "poc", "POC_STATE_URL", "s3://state")
			}},
		{name: "pocbot's variables and a foreign secret", keeps: []string{"the secret DEPLOY_TOKEN"}, vars: []string{"POC_APP_ID"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) {
				f.gh.SetEnvironmentVariable("acme/shop", "poc", "POC_APP_ID", "7")
				f.gh.SetSecret("acme/shop", "poc", "DEPLOY_TOKEN", "x")
			}},
		{name: "required reviewers and a wait timer", keeps: []string{"required reviewers", "a wait timer"},
			add: func(t *testing.T, f *fixture, c *gh.Client) {
				wait := 10
				if _, _, err := c.Repositories.CreateUpdateEnvironment(t.Context(), "acme", "shop", "poc", &gh.CreateUpdateEnvironment{
					WaitTimer: &wait, Reviewers: []*gh.EnvReviewers{{Type: gh.String("User"), ID: gh.Int64(7)}},
					DeploymentBranchPolicy: &gh.BranchPolicy{CustomBranchPolicies: gh.Bool(true), ProtectedBranches: gh.Bool(false)}}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "admins may not bypass", keeps: []string{"administrators may not bypass its protection rules"},
			add: func(t *testing.T, f *fixture, c *gh.Client) {
				if _, _, err := c.Repositories.CreateUpdateEnvironment(t.Context(), "acme", "shop", "poc", &gh.CreateUpdateEnvironment{
					CanAdminsBypass:        gh.Ptr(false),
					DeploymentBranchPolicy: &gh.BranchPolicy{CustomBranchPolicies: gh.Bool(true), ProtectedBranches: gh.Bool(false)}}); err != nil {
					t.Fatal(err)
				}
			}},
		// An App's gate (custom deployment protection rule) is not among the environment's
		// protection_rules: uninstall asks for it. Failed on the old code: deleted with it.
		{name: "an App's deployment protection rule", keeps: []string{"the deployment protection rule of the App"},
			add: func(t *testing.T, f *fixture, c *gh.Client) {
				if _, _, err := c.Repositories.CreateCustomDeploymentProtectionRule(t.Context(), "acme", "shop", "poc",
					&gh.CustomDeploymentProtectionRuleRequest{IntegrationID: gh.Ptr(int64(4242))}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "another deployment branch", keeps: []string{`the deployment rule "release/*"`},
			add: func(t *testing.T, f *fixture, c *gh.Client) {
				if _, _, err := c.Repositories.CreateDeploymentBranchPolicy(t.Context(), "acme", "shop", "poc",
					&gh.DeploymentBranchPolicyRequest{Name: gh.String("release/*"), Type: gh.String("branch")}); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "acme/shop")
			if _, out, err := f.run(t, nil); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			root := f.url + "/"
			c, err := gh.NewClient(gh.WithAuthToken(f.token), gh.WithURLs(&root, nil))
			if err != nil {
				t.Fatal(err)
			}
			tc.add(t, f, c)
			uninstall := func(dryRun bool) string {
				t.Helper()
				var out bytes.Buffer
				if _, err := Uninstall(t.Context(), UninstallConfig{Repo: "acme/shop", APIURL: f.url, Token: f.token, AppKey: f.cfg.AppKey, DryRun: dryRun, Out: &out}); err != nil {
					t.Fatalf("uninstall (dry run %v): %v\n%s", dryRun, err, out.String())
				}
				return out.String()
			}

			plan := uninstall(true)
			if exists, _ := f.gh.Environment("acme/shop", "poc"); !exists {
				t.Fatalf("the dry run deleted the environment:\n%s", plan)
			}
			for _, v := range tc.vars {
				if f.gh.EnvironmentVariable("acme/shop", "poc", v) == "" {
					t.Fatalf("the dry run deleted the variable %s", v)
				}
				if !strings.Contains(plan, "variable "+v) {
					t.Errorf("the plan does not name the variable %s:\n%s", v, plan)
				}
			}
			out := uninstall(false)
			for _, v := range tc.vars {
				if f.gh.EnvironmentVariable("acme/shop", "poc", v) != "" {
					t.Errorf("pocbot's variable %s stayed:\n%s", v, out)
				}
				if strings.Contains(out, "the variable "+v) {
					t.Errorf("the output counts pocbot's variable %s as someone else's:\n%s", v, out)
				}
			}
			exists, _ := f.gh.Environment("acme/shop", "poc")
			if tc.keeps == nil {
				if exists || !strings.Contains(plan, "- would delete the environment poc") || !strings.Contains(out, "- environment poc") {
					t.Fatalf("the environment init made: left %v\nplan:\n%s\nrun:\n%s", exists, plan, out)
				}
				if again := uninstall(false); strings.Contains(again, "environment poc") {
					t.Errorf("the rerun speaks of the deleted environment:\n%s", again)
				}
				return
			}
			if !exists {
				t.Fatalf("the environment holding %v was deleted:\n%s", tc.keeps, out)
			}
			for _, want := range append([]string{"! environment poc kept", "gh api -X DELETE repos/acme/shop/environments/poc", "decide about the environment poc"}, tc.keeps...) {
				if !strings.Contains(out, want) || !strings.Contains(plan, want) {
					t.Errorf("the output (or the plan) does not say %q:\nplan:\n%s\nrun:\n%s", want, plan, out)
				}
			}
			if _, ok := f.gh.Secret("acme/shop", "poc", "POC_STATE_KEY"); ok {
				t.Error("pocbot's secrets stayed in the kept environment")
			}
		})
	}
}

// Uninstall deletes pocbot's secret names where init wrote them, and nowhere else: init writes to
// the environment when the repository can have one, so repository secrets of the same (generic)
// names, such as SCW_ACCESS_KEY, are someone else's unless the repository holds init's
// POC_STATE_KEY (its secrets went there). Failed on the old code: the repository's SCW_ACCESS_KEY
// of another workflow was deleted along with the environment's.
func TestUninstallDeletesRepositorySecretsOnlyWhereInitWroteThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		private     bool // private on GitHub Free: no environments, init writes the repository's secrets
		userSecrets []string
		wantKept    []string // repository secrets left afterwards
	}{
		{name: "environment target: the repository's own SCW secrets stay", userSecrets: []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "DEPLOY_TOKEN"},
			wantKept: []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "DEPLOY_TOKEN"}},
		// Failed on the code that took a repository POC_STATE_KEY for init's mark: another
		// workflow's POC_STATE_KEY made uninstall delete the repository's SCW_ACCESS_KEY too.
		{name: "environment target: a foreign POC_STATE_KEY", userSecrets: []string{"POC_STATE_KEY", "SCW_ACCESS_KEY"},
			wantKept: []string{"POC_STATE_KEY", "SCW_ACCESS_KEY"}},
		{name: "repository target: init's secrets go", private: true, userSecrets: []string{"DEPLOY_TOKEN"}, wantKept: []string{"DEPLOY_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "acme/shop")
			if tc.private {
				f.gh.SetPrivate("acme/shop", true, true)
			}
			if _, out, err := f.run(t, nil); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			for _, n := range tc.userSecrets {
				if !f.gh.SetSecret("acme/shop", "", n, "the user's "+n) {
					t.Fatalf("set the repository secret %s", n)
				}
			}
			var out bytes.Buffer
			if _, err := Uninstall(t.Context(), UninstallConfig{Repo: "acme/shop", APIURL: f.url, Token: f.token, AppKey: f.cfg.AppKey, Out: &out}); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, out.String())
			}
			kept := map[string]bool{}
			for _, n := range tc.wantKept {
				kept[n] = true
				if v, ok := f.gh.Secret("acme/shop", "", n); !ok || v != "the user's "+n {
					t.Errorf("the repository secret %s was deleted (or changed):\n%s", n, out.String())
				}
			}
			required, optional := Secrets()
			for _, n := range append(required, optional...) {
				if _, ok := f.gh.Secret("acme/shop", "", n); ok && !kept[n] {
					t.Errorf("init's repository secret %s stayed:\n%s", n, out.String())
				}
				if _, ok := f.gh.Secret("acme/shop", "poc", n); ok {
					t.Errorf("init's environment secret %s stayed:\n%s", n, out.String())
				}
			}
			var pocbots []string
			for _, n := range tc.wantKept {
				if managedSecret(n) {
					pocbots = append(pocbots, n)
				}
			}
			if len(pocbots) > 0 && !strings.Contains(out.String(), strings.Join(pocbots, ", ")+" of the repository kept") {
				t.Errorf("the output does not name the repository secrets %v it kept:\n%s", pocbots, out.String())
			}
			if _, ok := f.gh.RepoVariable("acme/shop", RecordVariable); ok {
				t.Errorf("init's record stayed:\n%s", out.String())
			}
		})
	}
}

// Uninstall believes only a record init wrote: one a writer or an administrator planted (naming
// the repository's own SCW_ACCESS_KEY as init's: register row variable-writers, whichever role
// GitHub lets write variables), or any record when the App's key is not given, deletes no secret;
// the output says why.
func TestUninstallIgnoresARecordItCannotCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		plant  string // the planter's role
		appKey bool
		want   string
	}{
		{name: "planted by a writer", plant: "write", appKey: true, want: "its MAC does not verify"},
		{name: "planted by an administrator", plant: "admin", appKey: true, want: "its MAC does not verify"},
		{name: "no App key", appKey: false, want: "no App private key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "acme/shop")
			if _, out, err := f.run(t, nil); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			f.gh.SetSecret("acme/shop", "", "SCW_ACCESS_KEY", "another workflow's")
			if tc.plant != "" {
				f.gh.SetPermission("acme/shop", "mallory", tc.plant)
				root := f.url + "/"
				c, err := gh.NewClient(gh.WithAuthToken(f.gh.AddUserToken("mallory")), gh.WithURLs(&root, nil))
				if err != nil {
					t.Fatal(err)
				}
				forged := `{"record":{"repository":"acme/shop","secrets":[{"name":"SCW_ACCESS_KEY"}]},"mac":"AAAA"}`
				if _, err := c.Actions.UpdateRepoVariable(t.Context(), "acme", "shop", &gh.ActionsVariable{Name: RecordVariable, Value: forged}); err != nil {
					t.Fatal(err)
				}
			}
			cfg := UninstallConfig{Repo: "acme/shop", APIURL: f.url, Token: f.token}
			if tc.appKey {
				cfg.AppKey = f.cfg.AppKey
			}
			var out bytes.Buffer
			cfg.Out = &out
			if _, err := Uninstall(t.Context(), cfg); err != nil {
				t.Fatalf("uninstall: %v\n%s", err, out.String())
			}
			if v, ok := f.gh.Secret("acme/shop", "", "SCW_ACCESS_KEY"); !ok || v != "another workflow's" {
				t.Errorf("the repository's SCW_ACCESS_KEY was deleted:\n%s", out.String())
			}
			if _, ok := f.gh.Secret("acme/shop", "poc", "POC_STATE_KEY"); !ok {
				t.Errorf("a secret was deleted on a record uninstall could not check:\n%s", out.String())
			}
			if !strings.Contains(out.String(), tc.want) {
				t.Errorf("the output does not say %q:\n%s", tc.want, out.String())
			}
			if _, ok := f.gh.RepoVariable("acme/shop", RecordVariable); !ok {
				t.Errorf("uninstall deleted a record it could not check")
			}
		})
	}
}

// A 404 to the environment's DELETE is not proof that it is gone: GitHub answers 404 where a
// token may not act. Uninstall reads the environment back, and says it is still there, and what to
// do, instead of "- environment poc". Failed on the old code: uninstall reported the environment
// deleted, and it stayed with pocbot's secrets.
func TestUninstallReadsTheEnvironmentBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	if _, out, err := f.run(t, nil); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	target, err := url.Parse(f.url)
	if err != nil {
		t.Fatal(err)
	}
	fwd := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/repos/acme/shop/environments/poc") {
			http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
			return
		}
		fwd.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	var out bytes.Buffer
	_, err = Uninstall(t.Context(), UninstallConfig{Repo: "acme/shop", APIURL: proxy.URL, Token: f.token, AppKey: f.cfg.AppKey, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "still there") {
		t.Fatalf("uninstall whose environment delete was answered 404 = %v; want an error saying it is still there\n%s", err, out.String())
	}
	if exists, _ := f.gh.Environment("acme/shop", "poc"); !exists {
		t.Fatal("the proxy let the delete through: nothing was tested")
	}
	if strings.Contains(out.String(), "- environment poc") {
		t.Errorf("uninstall says it deleted the environment:\n%s", out.String())
	}
	t.Logf("uninstall: %v", err)
}
