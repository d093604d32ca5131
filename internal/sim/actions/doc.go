// Package actions plays GitHub Actions for pocbot's workflow in the emulated world (`bot sim`), so
// that the installation can be tried by hand to its end: `bot init`, merging its pull request, and
// a `/poc up` comment answered by the bot, with the secrets init wrote and nothing else.
//
// When a user comments on an issue of a repository of the GitHub stand-in whose default branch
// holds the workflow (.github/workflows/poc.yml), the Runner runs the workflow's pocbot step as
// the Action runs it: `bot handle` with the step's inputs — secrets and variables resolved from
// the job's environment, then the repository — mapped to the bot's variables by action.yml's run
// step, and the event as GITHUB_EVENT_PATH.
//
// # Contract
//
//	| behaviour | source |
//	|---|---|
//	| an issue comment (issue_comment, created) runs the workflow of the default branch, not of any other | github/docs content/actions/reference/workflows-and-actions/events-that-trigger-workflows.md (issue_comment: "This event will only trigger a workflow run if the workflow file exists on the default branch") |
//	| the job runs only when its if: holds: the workflow's own condition, a comment containing /poc by a user who is not a Bot (evaluated as written in deploy/workflow/poc.yml, not as a general expression) | deploy/workflow/poc.yml; github/docs "Evaluate expressions in workflows" (contains: "This function is not case sensitive"; "GitHub ignores case when comparing strings") |
//	| ${{ secrets.X }}: the job's environment's secret, else the repository's; missing: empty | github/docs "Using secrets in GitHub Actions" (environment secrets are available to jobs that reference the environment; a secret not set reads as an empty string) |
//	| ${{ vars.X }}: the job's environment's variable; missing: empty | github/docs "Store information in variables" (the vars context); repository and organization variables: not modelled |
//	| ${{ inputs.X || 'd' }}: 'd' (no workflow_dispatch here) | github/docs "Contexts" (inputs is empty for other events) |
//	| the inputs reach the bot as action.yml's run step maps them (env:); an input the step does not give is action.yml's default | action.yml at the same commit (ActionYAML); github/docs "Metadata syntax for GitHub Actions" (inputs.<input_id>.default: used when the input is not specified in the workflow file) |
//	| the runs happen one at a time, in the order of the comments | simplification: GitHub runs them in parallel (the workflow has no concurrency group); the bot serializes on a cluster's lock in the state bucket |
//	| a run is cut after its job's timeout-minutes: the bot job's in deploy/workflow/poc.yml unless the Runner is given one; GitHub's 360 minutes when a workflow sets none | github/docs "Workflow syntax for GitHub Actions" (jobs.<job_id>.timeout-minutes: "Default: 360"); deploy/workflow/poc.yml |
//	| action.yml is read once, the same for the bot's job and a pull request's job: its inputs' defaults, its outputs, its run step's env mapping | action.yml at the same commit (ActionYAML); github/docs "Metadata syntax for GitHub Actions" (inputs, outputs.<output_id>.value, runs.steps[*].env) |
//
// # Pull requests (prs.go)
//
//	| behaviour | source |
//	|---|---|
//	| a pull request's event runs the default branch's pocbot workflow as pull_request_target when its on.pull_request_target.types lists the action | github/docs events-that-trigger-workflows.md (pull_request_target: the workflow of the base branch runs) |
//	| the same event runs the pull request's end-to-end workflow as pull_request, from the branch's version of the file, when its types list the action | github/docs events-that-trigger-workflows.md (pull_request: GITHUB_SHA is the merge commit, whose workflow runs) |
//	| a repository_dispatch runs the default branch's workflow when on.repository_dispatch.types lists its event_type | github/docs events-that-trigger-workflows.md (repository_dispatch: the workflow file must be on the default branch) |
//	| the end-to-end job's if: is deploy/workflow/poc-pr.yml's condition, evaluated as written there (templateIf), not as a general expression | deploy/workflow/poc-pr.yml |
//	| a step's $GITHUB_OUTPUT is NAME=value lines and NAME<<DELIMITER blocks; the Action's outputs are action.yml's outputs.<id>.value of the run step's outputs | github/docs "Workflow commands for GitHub Actions" (Setting an output parameter, Multiline strings); action.yml |
//	| a job waits JobStart before it runs | simplification: the time GitHub takes to start a job is an assumption (register row job-start) |
//
// Not played: schedule and workflow_dispatch events; the Action's download and verification of a
// release (the Runner runs the binary that runs `bot sim`).
package actions
