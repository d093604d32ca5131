package repoinit

import (
	"bytes"
	"strings"
	"testing"
)

// Uninstall deletes pocbot's secret names where init wrote them, and nowhere else: init writes to
// the environment when the repository can have one, so repository secrets of the same (generic)
// names, such as SCW_ACCESS_KEY, are someone else's unless the repository holds init's
// POC_STATE_KEY (its secrets went there). Failed on the old code: the repository's SCW_ACCESS_KEY
// of another workflow was deleted along with the environment's.
func TestUninstallDeletesRepositorySecretsOnlyWhereInitWroteThem(t *testing.T) {
	for _, tc := range []struct {
		name        string
		private     bool // private on GitHub Free: no environments, init writes the repository's secrets
		userSecrets []string
		wantKept    []string // repository secrets left afterwards
	}{
		{name: "environment target: the repository's own SCW secrets stay", userSecrets: []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "DEPLOY_TOKEN"},
			wantKept: []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "DEPLOY_TOKEN"}},
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
			if _, err := Uninstall(t.Context(), UninstallConfig{Repo: "acme/shop", APIURL: f.url, Token: f.token, Out: &out}); err != nil {
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
			if !tc.private && !strings.Contains(out.String(), "SCW_ACCESS_KEY, SCW_SECRET_KEY of the repository kept") {
				t.Errorf("the output does not name the repository secrets it kept:\n%s", out.String())
			}
		})
	}
}
