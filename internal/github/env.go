package github

import (
	"fmt"
	"net/url"
	"strings"
)

const (
	// DefaultAPIURL is GitHub.com's REST API root.
	DefaultAPIURL = "https://api.github.com"
	// DefaultWebURL is GitHub.com's web root (GITHUB_SERVER_URL on GitHub.com).
	DefaultWebURL = "https://github.com"
	// DefaultEnvironment is the repository's GitHub environment that holds pocbot's secrets.
	DefaultEnvironment = "poc"
)

// ActionsEnv is what a GitHub Actions job tells its steps about the run.
type ActionsEnv struct {
	EventName   string // GITHUB_EVENT_NAME
	EventPath   string // GITHUB_EVENT_PATH
	Repository  string // GITHUB_REPOSITORY, "owner/name"
	Owner, Repo string // split from Repository
	APIURL      string // GITHUB_API_URL, no trailing slash; GHE: https://host/api/v3
	ServerURL   string // GITHUB_SERVER_URL, no trailing slash
	RunID       string // GITHUB_RUN_ID
	OutputPath  string // GITHUB_OUTPUT
	SummaryPath string // GITHUB_STEP_SUMMARY
	InActions   bool   // GITHUB_ACTIONS == "true"
}

// EnvFromActions reads the standard Actions variables. Only GITHUB_REPOSITORY is required (every
// bot operation is about one repository); the URLs default to GitHub.com.
func EnvFromActions(getenv func(string) string) (ActionsEnv, error) {
	e := ActionsEnv{
		EventName:   getenv("GITHUB_EVENT_NAME"),
		EventPath:   getenv("GITHUB_EVENT_PATH"),
		Repository:  strings.TrimSpace(getenv("GITHUB_REPOSITORY")),
		APIURL:      strings.TrimRight(strings.TrimSpace(getenv("GITHUB_API_URL")), "/"),
		ServerURL:   strings.TrimRight(strings.TrimSpace(getenv("GITHUB_SERVER_URL")), "/"),
		RunID:       getenv("GITHUB_RUN_ID"),
		OutputPath:  getenv("GITHUB_OUTPUT"),
		SummaryPath: getenv("GITHUB_STEP_SUMMARY"),
		InActions:   getenv("GITHUB_ACTIONS") == "true",
	}
	if e.APIURL == "" {
		e.APIURL = DefaultAPIURL
	}
	if e.ServerURL == "" {
		e.ServerURL = DefaultWebURL
	}
	for name, v := range map[string]string{"GITHUB_API_URL": e.APIURL, "GITHUB_SERVER_URL": e.ServerURL} {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return ActionsEnv{}, fmt.Errorf("github: %s=%q is not an http(s) URL: set it to the API root (e.g. %s or https://HOST/api/v3)", name, v, DefaultAPIURL)
		}
	}
	if e.Repository == "" {
		return ActionsEnv{}, fmt.Errorf("github: GITHUB_REPOSITORY is not set: run inside GitHub Actions or export GITHUB_REPOSITORY=owner/name")
	}
	owner, repo, ok := strings.Cut(e.Repository, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return ActionsEnv{}, fmt.Errorf("github: GITHUB_REPOSITORY=%q is not owner/name", e.Repository)
	}
	e.Owner, e.Repo = owner, repo
	return e, nil
}

// RunURL links to the workflow run, or "" outside Actions.
func (e ActionsEnv) RunURL() string {
	if e.RunID == "" {
		return ""
	}
	return e.ServerURL + "/" + e.Repository + "/actions/runs/" + e.RunID
}
