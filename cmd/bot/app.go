package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/appsetup"
	"github.com/pocbot/pocbot/internal/github"
)

func appCreateCommand() *command {
	var cfg appsetup.Config
	return &command{
		name: "create",
		summary: "register the GitHub App from its manifest: open the printed local page, confirm on GitHub; " +
			"the private key is written to --key-file (mode 0600) and the gh commands to store it are printed",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.String(&cfg.Owner, "owner", "", "", "organization that will own the App (empty: your own account)")
			e.String(&cfg.Name, "name", "", "pocbot", "the App's name (unique on GitHub, at most 34 characters)")
			e.String(&cfg.KeyFile, "key-file", "", "pocbot-app.private-key.pem", "where to write the App's private key (never overwritten)")
			e.String(&cfg.Repository, "repo", "", "", "OWNER/REPO the printed gh commands target (empty: the current directory's repository)")
			e.String(&cfg.Env, "env", "", github.DefaultEnvironment, "GitHub environment that holds pocbot's secrets")
			e.String(&cfg.Listen, "listen", "", "127.0.0.1:0", "local address of the page GitHub redirects back to")
			e.String(&cfg.WebURL, "github-url", "", github.DefaultWebURL, "GitHub's web URL (GitHub Enterprise Server, or a stand-in)")
			e.String(&cfg.APIURL, "api-url", "", github.DefaultAPIURL, "GitHub's API URL")
			e.Duration(&cfg.Timeout, "timeout", "", time.Hour, "how long to wait for GitHub's redirect (its code lives one hour)")
		},
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			cfg.Out = a.stdout
			cfg.Ready = func(u string) {
				fmt.Fprintf(a.stderr, "Open %s in your browser: it posts the App's manifest to GitHub, which asks you to confirm.\n", u)
			}
			_, err := appsetup.Run(ctx, cfg)
			return err
		},
	}
}
