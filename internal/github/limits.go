package github

// GitHub's secondary limits on content creation ("Rate limits for the REST API", About secondary
// rate limits: "no more than 80 content-generating requests per minute and no more than 500
// content-generating requests per hour"), per App installation. Every comment, edit, reaction and
// label change of the bot is one; chatops budgets the status comment's edits under them.
const (
	ContentPerMinute = 80
	ContentPerHour   = 500
)
