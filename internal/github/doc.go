// Package github owns pocbot's conversation with GitHub, and nothing else: it reads the
// Actions environment and the triggering event (normalized into Event), authenticates as the
// GitHub App (ghinstallation signs the App's JWT; go-github v88's Apps.CreateInstallationToken
// mints the installation token, narrowed to one repository and the bot's permissions, and mints
// it again before it expires; an installation id from the event that GitHub refuses falls back to
// the repository's installation) or, in the lesser mode, with the workflow's GITHUB_TOKEN. Rate
// limits are waited out up to a bound (RetryPolicy), as GitHub's "Rate limits for the REST API"
// says, and while one runs no write of the process is sent (GitHub's limits on content creation,
// ContentPerMinute and ContentPerHour, are per installation); a comment creation answered with a
// 5xx is looked for by its hidden post marker before it is sent again. It offers the few
// calls the bot makes: collaborator permission, reactions, comments (create, edit, find by
// hidden marker, a throttled sticky editor), issue/PR state and labels, users' public SSH keys,
// and files of the default branch. It also writes the Actions workflow commands and files
// (groups, masks, step outputs, job summary).
//
// It knows nothing of Scaleway, clusters or the /poc grammar: internal/chatops decides what to
// do with an Event, internal/commands what to say.
package github
