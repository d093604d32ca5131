package repoinit

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Token scopes. A classic token (a personal access token, ghp_, or an OAuth app's such as the gh
// CLI's, gho_) carries OAuth scopes, and GitHub answers them in X-OAuth-Scopes on every response
// (docs "Scopes for OAuth apps"). init needs:
//   - repo: secrets and environments ("need the repo scope"), a private repository;
//   - workflow: .github/workflows/poc.yml through the contents API (GitHub answers 404 without
//     it). A default `gh auth login` with the SSH protocol grants repo, read:org and gist only.
//
// init reads the scopes on its first answer and stops before it writes anything when one is
// missing, naming it and the `gh auth refresh -s …` that adds it. A fine-grained token
// (github_pat_) has no scopes and its permissions cannot be read beforehand: init goes on, and
// says what it needs. Adding the repository to an App installation on selected repositories
// takes a classic personal access token whatever the scopes (addToInstallation says so).

// neededScopes are the scopes init needs of a classic token, with what each is for.
var neededScopes = []struct{ scope, why string }{
	{"repo", "secrets, environments and private repositories"},
	{"workflow", "writing " + WorkflowPath + " through the contents API"},
}

// scopeHeld says whether granted holds scope (neither repo nor workflow is implied by another).
func scopeHeld(granted []string, scope string) bool { return slices.Contains(granted, scope) }

// tokenScopes reads X-OAuth-Scopes: classic is false when the header is absent (a fine-grained
// token's or an App's answer).
func tokenScopes(h http.Header) (scopes []string, classic bool) {
	v, ok := h[http.CanonicalHeaderKey("X-OAuth-Scopes")]
	if !ok {
		return nil, false
	}
	for _, s := range strings.Split(strings.Join(v, ","), ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopes = append(scopes, s)
		}
	}
	return scopes, true
}

// missingScopes is what a classic token with granted lacks for init, in neededScopes' order.
func missingScopes(granted []string) []string {
	var out []string
	for _, n := range neededScopes {
		if !scopeHeld(granted, n.scope) {
			out = append(out, n.scope)
		}
	}
	return out
}

// scopeError says what is missing, what for, and the fix: for gh's login, `gh auth refresh`;
// for a token in GH_TOKEN or GITHUB_TOKEN, a new one with the scopes.
func scopeError(repo string, granted, missing []string) error {
	var why []string
	for _, n := range neededScopes {
		if slices.Contains(missing, n.scope) {
			why = append(why, fmt.Sprintf("%s (%s)", n.scope, n.why))
		}
	}
	have := "none"
	if len(granted) > 0 {
		have = strings.Join(granted, ", ")
	}
	return fmt.Errorf("init: your GitHub token lacks the scope %s; it has %s. Nothing was written to %s. "+
		"Add it to gh's login with `gh auth refresh -h github.com -s %s` and run `bot init` again "+
		"(a token in GH_TOKEN or GITHUB_TOKEN: make one with these scopes at https://github.com/settings/tokens)",
		strings.Join(why, " and "), have, repo, strings.Join(missing, ","))
}

// fineGrainedNote is what init says of a token whose permissions it cannot read beforehand.
const fineGrainedNote = "! the token has no OAuth scopes (a fine-grained token?): its permissions cannot be checked beforehand. " +
	"init needs, on the repository: Administration read, Contents, Environments, Pull requests, Secrets and Workflows read and write; " +
	"adding the repository to an App installation on selected repositories takes a classic token (repo scope)\n"

// checkScopes stops init before anything is written when the token's scopes fall short (a dry
// run says so and goes on, writing nothing anyway).
func (r *runner) checkScopes(h http.Header) error {
	granted, classic := tokenScopes(h)
	if !classic {
		fmt.Fprint(r.out, fineGrainedNote)
		return nil
	}
	missing := missingScopes(granted)
	if len(missing) == 0 {
		fmt.Fprintf(r.out, "✓ the token's scopes cover init (%s)\n", strings.Join(granted, ", "))
		return nil
	}
	err := scopeError(r.cfg.Repo, granted, missing)
	if r.cfg.DryRun {
		fmt.Fprintf(r.out, "! would stop here: %v\n", err)
		return nil
	}
	return err
}
