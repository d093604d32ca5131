package repoinit

import (
	"bytes"
	"strings"
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// Uninstall deletes the `poc` environment when it holds nothing but what init put there, and keeps
// it, naming what keeps it, when it holds anything of someone else's (GitHub would delete that with
// it). Failed on the old code: the environment was left in every case.
func TestUninstallRemovesTheEnvironmentOnlyWhenNothingElseIsInIt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		add   func(t *testing.T, f *fixture, c *gh.Client) // what a user put in the environment after init
		keeps []string                                     // what the output names; nil: the environment goes
	}{
		{name: "made by init", add: func(*testing.T, *fixture, *gh.Client) {}},
		{name: "a foreign secret", keeps: []string{"the secret DEPLOY_TOKEN"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) { f.gh.SetSecret("acme/shop", "poc", "DEPLOY_TOKEN", "x") }},
		{name: "a variable", keeps: []string{"the variable REGION"},
			add: func(t *testing.T, f *fixture, _ *gh.Client) {
				f.gh.SetEnvironmentVariable("acme/shop", "poc", "REGION", "fr-par")
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
				if _, err := Uninstall(t.Context(), UninstallConfig{Repo: "acme/shop", APIURL: f.url, Token: f.token, DryRun: dryRun, Out: &out}); err != nil {
					t.Fatalf("uninstall (dry run %v): %v\n%s", dryRun, err, out.String())
				}
				return out.String()
			}

			plan := uninstall(true)
			if exists, _ := f.gh.Environment("acme/shop", "poc"); !exists {
				t.Fatalf("the dry run deleted the environment:\n%s", plan)
			}
			out := uninstall(false)
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
