// Package deploy carries the files a repository gets from `bot init`: the workflow
// (workflow/poc.yml, the pinned Action), optionally the pull requests' end-to-end workflow
// (workflow/poc-pr.yml) and the repository's configuration (poc.example.yml,
// generated from internal/settings). They are the same files docs/install.md tells to copy.
package deploy

import _ "embed"

// Workflow is deploy/workflow/poc.yml: its Action reference is a placeholder (PlaceholderRef).
//
//go:embed workflow/poc.yml
var Workflow string

// PRWorkflow is deploy/workflow/poc-pr.yml, a pull request's own end-to-end job on its cluster
// (`bot init --pr-workflow`): its Action reference is the same placeholder (PlaceholderRef).
//
//go:embed workflow/poc-pr.yml
var PRWorkflow string

// RepoConfig is deploy/poc.example.yml, every setting at its default.
//
//go:embed poc.example.yml
var RepoConfig string

// PlaceholderRef is the Action reference of Workflow that `bot init` replaces with the pinned one.
const PlaceholderRef = "pocbot/pocbot@0000000000000000000000000000000000000000 # v0.1.0: replace with the release's commit SHA"
