package main

import (
	"errors"
	"fmt"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/wiring"
)

// What the commands that set an installation up, check it or remove it (init, doctor, uninstall)
// share: where it lives on GitHub, and the App's credentials from a person's shell.

// githubFlags are where an installation lives on GitHub: the repository, the environment that
// holds its secrets, GitHub's API.
type githubFlags struct{ repo, env, apiURL string }

// define adds --repo (read from the variable repoEnv, "" for none; repoHelp says what it names),
// --env and --api-url.
func (g *githubFlags) define(e *envFlags, repoEnv, repoHelp string) {
	e.String(&g.repo, "repo", repoEnv, "", repoHelp)
	e.String(&g.env, "env", "", github.DefaultEnvironment, "GitHub environment that holds the secrets (where the repository can have environments)")
	e.String(&g.apiURL, "api-url", "GITHUB_API_URL", github.DefaultAPIURL, "GitHub's API URL")
}

// required refuses an empty --repo for verb.
func (g *githubFlags) required(verb string) error {
	if g.repo == "" {
		return errors.New(verb + ": --repo OWNER/REPO is required")
	}
	return nil
}

// iamAdmin is the Scaleway IAM access of `init --iam` and `uninstall --iam`: this shell's SCW_*
// credentials, an administrator's; verb names the command in the error.
func (a *app) iamAdmin(verb string) (*repoinit.IAM, error) {
	client, err := wiring.ScalewayClient(a.getenv)
	if err != nil {
		return nil, fmt.Errorf("%s --iam: %w", verb, err)
	}
	return &repoinit.IAM{Client: client, ProjectID: a.env().String("scw-project"),
		OrganizationID: a.env().String("scw-organization")}, nil
}

// appAuth reads the App's credentials (POC_APP_ID and its key) from a person's shell, where
// GITHUB_TOKEN is the person's token, not the App's, and GITHUB_REPOSITORY not the target.
func (a *app) appAuth() (github.Auth, error) {
	return github.AuthFromEnv(func(k string) string {
		if k == "GITHUB_TOKEN" || k == "GITHUB_REPOSITORY" {
			return ""
		}
		return a.getenv(k)
	})
}
