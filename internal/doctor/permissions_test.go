package doctor

import (
	"strings"
	"testing"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
)

// The App item names what the installation lacks: a permission every command needs fails, one of
// the pull requests' clusters (deployments, checks, actions) warns. Failed on the old code: an
// installation without deployments showed ✓.
func TestDoctorChecksTheAppsPermissions(t *testing.T) {
	base := map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read"}
	all := map[string]string{"deployments": "write", "checks": "write", "actions": "write"}
	for k, v := range base {
		all[k] = v
	}
	prs := map[string]string{"deployments": "write", "checks": "write", "actions": "read"}
	for k, v := range base {
		prs[k] = v
	}
	noIssues := map[string]string{"pull_requests": "write", "metadata": "read", "contents": "read"}
	for _, tc := range []struct {
		name  string
		grant map[string]string
		want  []string
	}{
		{"all", all, []string{"✓ App permissions", "deployments, checks, actions"}},
		{"before pull-request clusters", base, []string{"! App permissions", "deployments:write (has none)", "checks:write (has none)", "actions:write (has none)", "no kubeconfig", "no refill"}},
		{"before the refill dispatch", prs, []string{"! App permissions", "actions:write (has read)", "no refill"}},
		{"without issues", noIssues, []string{"✗ App permissions", "issues:write (has none)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := githubtest.Serve(t, ghsim.Options{Grant: tc.grant})
			s.AddRepo("acme/shop", "main")
			g := GitHub{Repo: "acme/shop", APIURL: url, AppID: s.AppID(), AppKey: s.AppPrivateKeyPEM()}
			var out strings.Builder
			Run(t.Context(), g.Checks()[0]).Render(&out)
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the checklist lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
