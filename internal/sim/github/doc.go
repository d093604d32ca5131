// Package github is the GitHub REST API stand-in used by tests and by `bot demo`.
//
// It owns an emulated GitHub: one GitHub App (id, slug, a freshly generated RSA key pair), its
// installations per repository, repositories (default branch, files per branch), users (public SSH
// keys, permission per repository), issues and pull requests (state, labels, merged, draft, fork),
// comments and reactions. It speaks the real protocol so that the real client libraries
// (go-github, ghinstallation) run against it unchanged:
//
//   - App endpoints require an RS256 JWT signed with the App's private key (iss = app id, iat/exp
//     sane, exp-iat at most 10 minutes), exactly what GitHub checks;
//   - POST /app/installations/{id}/access_tokens mints expiring `ghs_` tokens narrowed to the
//     requested repositories and permissions, refusing anything beyond the installation's grant;
//   - every other call needs a valid, unexpired token whose repositories and permissions cover it,
//     and is refused with GitHub's 401/403/404 bodies otherwise;
//   - paths are accepted with or without the GitHub Enterprise `/api/v3` prefix;
//   - the App manifest flow (manifest.go): the github.com form that registers an App from a
//     manifest and redirects with a one-time code, and POST /app-manifests/{code}/conversions;
//     its contract table (docs.github.com, github/rest-api-description) is in manifest.go.
//
// Everything is recorded (requests, comments, reactions) so tests can assert on what a user would
// see. Faults (5xx, secondary rate limits) can be injected to exercise client retries.
package github
