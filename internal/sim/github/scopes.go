package github

import (
	"net/http"
	"slices"
	"strings"
)

// What a person's token may do by its kind and scopes (the contract rows are in doc.go, under
// "Token scopes"). Installation tokens and the static tokens of AddToken have no scopes: their
// permissions decide (requireToken).

// classic says whether t is a classic token with OAuth scopes (a PAT or an OAuth app's).
func (t *token) classic() bool { return t.user && t.kind != TokenFineGrained }

// scopeImplies lists what a scope grants besides itself (docs "Scopes for OAuth apps": repo
// covers public_repo, repo:status, repo_deployment, repo:invite, security_events).
var scopeImplies = map[string][]string{
	"repo": {"public_repo", "repo:status", "repo_deployment", "repo:invite", "security_events"},
}

// hasScope says whether a classic token holds scope, itself or through a broader one.
func (t *token) hasScope(scope string) bool {
	for _, have := range t.scopes {
		if have == scope || slices.Contains(scopeImplies[have], scope) {
			return true
		}
	}
	return false
}

// oauthScopes sets X-OAuth-Scopes on every answer to a classic token, as GitHub does ("lists
// the scopes your token has authorized"); other tokens get none.
func (c *call) oauthScopes() {
	if c.tok != nil && c.tok.classic() {
		c.w.Header().Set("X-OAuth-Scopes", strings.Join(c.tok.scopes, ", "))
	}
}

// scopesAllow refuses what a classic token's scopes do not reach on r, the way GitHub hides it
// (404): a private repository without repo; any write without repo or public_repo; secrets and
// environments without repo. It reports whether the request may go on.
func (s *Server) scopesAllow(c *call, r *repo) bool {
	t := c.tok
	if t == nil || !t.classic() {
		return true
	}
	seg := c.seg
	adminPath := len(seg) >= 4 && (seg[3] == "environments" || seg[3] == "actions" && len(seg) >= 5 && seg[4] == "secrets")
	switch {
	case r.private && !t.hasScope("repo"),
		isContentWrite(c.r.Method) && !t.hasScope("public_repo"),
		adminPath && !t.hasScope("repo"):
		c.fail(http.StatusNotFound, "Not Found")
		return false
	}
	return true
}

// workflowPath says whether path is a GitHub Actions workflow file.
func workflowPath(path string) bool { return strings.HasPrefix(path, ".github/workflows/") }

// mayWriteWorkflow says whether the token may create or update the workflow file path with data
// on r: a classic token needs the workflow scope, a fine-grained one the Workflows permission,
// unless "the same file (with both the same path and contents) exists on another branch" (docs
// "Scopes for OAuth apps", workflow). Installation tokens here carry no workflows permission.
func (s *Server) mayWriteWorkflow(t *token, r *repo, branch, path string, data []byte) bool {
	switch {
	case t.classic() && t.hasScope("workflow"), t.user && t.kind == TokenFineGrained && t.workflows:
		return true
	}
	for b, files := range r.files {
		if old, ok := files[path]; ok && b != branch && string(old) == string(data) {
			return true
		}
	}
	return false
}

// classicOnly refuses a call GitHub serves to classic personal access tokens only (with the
// repo scope): an OAuth app's token or a fine-grained one is answered 403.
func (s *Server) classicOnly(c *call) bool {
	if c.tok.user && c.tok.kind == TokenPAT && c.tok.hasScope("repo") {
		return true
	}
	c.fail(http.StatusForbidden, "Resource not accessible by personal access token")
	return false
}
