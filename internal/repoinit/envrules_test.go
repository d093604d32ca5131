package repoinit

import (
	"testing"

	gh "github.com/google/go-github/v88/github"
)

// An existing poc environment with a wait timer and required reviewers but no deployment branch
// policy: init limits it to the default branch and keeps the rest (a PUT states the whole
// configuration, so init sends them back). Failed on the old code: they were cleared; and, once
// the stand-in modelled them, prevent_self_review fell back to false and can_admins_bypass to
// true (init widened who could approve or skip the environment's rules).
func TestInitKeepsTheEnvironmentsProtectionRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	root := f.url + "/"
	c, err := gh.NewClient(gh.WithAuthToken(f.token), gh.WithURLs(&root, nil))
	if err != nil {
		t.Fatal(err)
	}
	wait := 15
	if _, _, err := c.Repositories.CreateUpdateEnvironment(t.Context(), "acme", "shop", "poc", &gh.CreateUpdateEnvironment{
		WaitTimer: &wait, Reviewers: []*gh.EnvReviewers{{Type: gh.String("User"), ID: gh.Int64(7)}},
		PreventSelfReview: gh.Ptr(true), CanAdminsBypass: gh.Ptr(false)}); err != nil {
		t.Fatal(err)
	}
	if _, out, err := f.run(t, nil); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	env, _, err := c.Repositories.GetEnvironment(t.Context(), "acme", "shop", "poc")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range env.ProtectionRules {
		got[r.GetType()] = true
		if r.GetType() == "wait_timer" && r.GetWaitTimer() != wait {
			t.Errorf("wait timer %d, want %d", r.GetWaitTimer(), wait)
		}
		if r.GetType() == "required_reviewers" && !r.GetPreventSelfReview() {
			t.Error("prevent_self_review is false after init, want true (as the user set it)")
		}
	}
	if env.CanAdminsBypass == nil || *env.CanAdminsBypass {
		t.Errorf("can_admins_bypass %v after init, want false (as the user set it)", env.CanAdminsBypass)
	}
	if !got["wait_timer"] || !got["required_reviewers"] || !got["branch_policy"] {
		t.Errorf("the environment's protection rules after init: %v, want the wait timer, the reviewers and the branch policy", got)
	}
	if _, branches := f.gh.Environment("acme/shop", "poc"); len(branches) != 1 || branches[0] != "main" {
		t.Errorf("deployment branches %v, want main", branches)
	}
}
