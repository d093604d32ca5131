// Package pocbot holds what programs read of the repository's root: the Action's definition
// (action.yml), whose run step maps the workflow's inputs to the bot's environment. The Actions
// stand-in of `bot sim` (internal/sim/actions) reads it so that its runs get exactly what the
// Action gives.
package pocbot

import _ "embed"

// ActionYAML is action.yml.
//
//go:embed action.yml
var ActionYAML []byte
