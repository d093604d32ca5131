// Package commands owns the text side of pocbot: the grammar of `/poc …` comments, the
// authorization policy (which GitHub permission each verb needs), cluster names derived from a
// repository and an issue number, the markdown of every reply the bot posts (sticky status
// comment, notifications, help, refusals, cost, status, plan, teardown results) and a secret
// scanner (Redact / ContainsSecret) used on every body and log line.
//
// It is pure logic on purpose: it imports no SDK and, of pocbot, only the settings table (flags,
// rules, durations), the lifecycle vocabulary (phases, refusal kinds) and the repository
// configuration's path, so it can be fuzzed and golden-tested;
// internal/chatops feeds it plain view structs (UpView, StatusView, CostView, …) whose money
// figures are already formatted strings.
package commands
