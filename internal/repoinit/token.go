package repoinit

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// TokenSource names where the GitHub token came from (never the token).
type TokenSource string

// GitHubToken reads the user's GitHub token as the gh CLI does: GH_TOKEN, then GITHUB_TOKEN, then
// `gh auth token` (gh's own stored login). ghAuthToken is nil for the real gh.
func GitHubToken(ctx context.Context, getenv func(string) string, ghAuthToken func(context.Context) (string, error)) (string, TokenSource, error) {
	for _, v := range []string{"GH_TOKEN", "GITHUB_TOKEN"} {
		if t := strings.TrimSpace(getenv(v)); t != "" {
			return t, TokenSource(v), nil
		}
	}
	if ghAuthToken == nil {
		ghAuthToken = ghCLI
	}
	t, err := ghAuthToken(ctx)
	if err != nil {
		return "", "", fmt.Errorf("no GitHub token: set GH_TOKEN (a token of a repository admin) or log in with `gh auth login`: %w", err)
	}
	if t = strings.TrimSpace(t); t == "" {
		return "", "", errors.New("no GitHub token: `gh auth token` printed nothing; run `gh auth login` or set GH_TOKEN")
	}
	return t, "gh auth token", nil
}

func ghCLI(ctx context.Context) (string, error) {
	if _, err := exec.LookPath("gh"); err != nil {
		return "", errors.New("GH_TOKEN and GITHUB_TOKEN are unset and the gh CLI is not installed")
	}
	out, err := exec.CommandContext(ctx, "gh", "auth", "token").Output()
	if err != nil {
		return "", fmt.Errorf("`gh auth token` failed (not logged in?): %w", err)
	}
	return string(out), nil
}
