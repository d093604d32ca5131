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
//   - paths are accepted with or without the GitHub Enterprise `/api/v3` prefix.
//
// Everything is recorded (requests, comments, reactions) so tests can assert on what a user would
// see. Faults (5xx, secondary rate limits) can be injected to exercise client retries.
//
// # Contract: identities, label events, comment authors (issue 11)
//
// Each behaviour names its source. (OpenAPI operation ids are those of github/rest-api-description,
// api.github.com description; docs pages as of 2026.)
//
//	behaviour                                              | source
//	-------------------------------------------------------|---------------------------------------------------------------
//	GET /user/{account_id} → the account's current login   | operation users/get-by-id; https://docs.github.com/en/rest/users/users#get-a-user-using-their-id; go-github v66 github/users.go GetByID ("user/%d")
//	GET /users/{username} → id of the account holding it   | operation users/get-by-username; same docs page
//	RenameUser: id, keys, repository roles, comments and   | https://docs.github.com/en/account-and-profile/setting-up-and-managing-your-personal-account-on-github/managing-personal-account-settings/changing-your-github-username
//	  events follow the account; the old login is free at  |   ("After changing your username, your old username becomes available for anyone else to claim")
//	  once for a new account (new id)                      |
//	GET /repos/{o}/{r}/issues/{n}/events, oldest first,    | operation issues/list-events; https://docs.github.com/en/rest/using-the-rest-api/issue-event-types#labeled
//	  paginated: "labeled"/"unlabeled" with actor and      |   (labeled/unlabeled carry actor and label {name, color}); needs issues read
//	  label.name; only label changes are recorded          |   source silent on other event kinds here: not modelled
//	label changes through POST/DELETE …/labels are events  | same page; actor = the token's identity (the App's bot login for an App token)
//	  by the caller; seeded labels (AddIssue/AddPR) are by |   seeding is test set-up: LabeledBy, else the author, else the owner
//	  LabeledBy; SetLabels by the repository's owner       |
//	the owner login of a repository has role admin         | https://docs.github.com/en/account-and-profile/setting-up-and-managing-your-personal-account-on-github/managing-user-account-settings/permission-levels-for-a-personal-account-repository (user-owned repositories; organisations: source silent, same reading)
//	comments made with an App installation token are by    | actions/create-github-app-token README ("Configure git CLI for an app's bot user": login "<app-slug>[bot]", its id at /users/<slug>[bot]); GET /app (operation apps/get-authenticated) gives the slug
//	  "<slug>[bot]", type Bot                              |
//	performed_via_github_app on comments: not served       | go-github v66 IssueComment has no such field (github/issues_comments.go), so the bot cannot read it; it identifies its comments by login (source silent: not modelled)
//	OnRequest hooks run after a request is served and      | test device, not GitHub behaviour (lets a test rename a user in the middle of a run)
//	  before the client gets the response                  |
package github
