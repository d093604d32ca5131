package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

func init() {
	var (
		repo, env, apiURL          string
		dryRun, withIAM, withBucks bool
	)
	register(&command{
		name: "uninstall",
		summary: "remove what init made: the repository's secrets, with --iam the Scaleway identities, with --buckets the emptied buckets; " +
			"refuses while a cluster's state exists (/poc down them first); --dry-run prints the plan; a rerun finishes an interrupted one",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.String(&repo, "repo", "", "", "OWNER/REPO to remove pocbot from (required)")
			e.String(&env, "env", "", "poc", "GitHub environment that holds the secrets")
			e.String(&apiURL, "api-url", "GITHUB_API_URL", "https://api.github.com", "GitHub's API URL")
			e.Bool(&dryRun, "dry-run", "", false, "print the plan; change nothing")
			e.Bool(&withIAM, "iam", "", false, "also delete the IAM applications pocbot and pocbot-presign, their policies and keys (shared by every repository of the project: for the last one), with this shell's SCW_* credentials (IAMManager)")
			e.Bool(&withBucks, "buckets", "", false, "also empty (every version) and delete the state and image buckets (shared by every repository of the project: for the last one)")
		},
		env: append([]string{"POC_IMAGE_BUCKET", "SCW_DEFAULT_ORGANIZATION_ID"}, envStore...),
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			if repo == "" {
				return errors.New("uninstall: --repo OWNER/REPO is required")
			}
			if strings.TrimSpace(a.getenv(statestore.EnvStateURL)) == "" {
				return errors.New("uninstall: POC_STATE_URL is not set: it is needed to check that no cluster is up (give the value of the repository's POC_STATE_URL secret)")
			}
			token, _, err := repoinit.GitHubToken(ctx, a.getenv, nil)
			if err != nil {
				return fmt.Errorf("uninstall: %w", err)
			}
			cfg := repoinit.UninstallConfig{Repo: repo, Env: env, APIURL: apiURL, Token: token, DryRun: dryRun, Out: a.stdout,
				Clusters: func(ctx context.Context) ([]string, error) {
					s, err := a.openStore(ctx)
					if err != nil {
						return nil, err
					}
					defer s.Close()
					// Unverified: any state object there, authentic or not, stops the uninstall.
					hs, err := s.ListUnverified(ctx)
					var names []string
					for _, h := range hs {
						names = append(names, h.Cluster)
					}
					return names, err
				}}
			if withIAM {
				client, err := wiring.ScalewayClient(a.getenv)
				if err != nil {
					return fmt.Errorf("uninstall --iam: %w", err)
				}
				cfg.IAM = &repoinit.IAM{Client: client, OrganizationID: strings.TrimSpace(a.getenv("SCW_DEFAULT_ORGANIZATION_ID"))}
				if cfg.IAM.OrganizationID == "" {
					return errors.New("uninstall --iam: set SCW_DEFAULT_ORGANIZATION_ID")
				}
			}
			if withBucks {
				cfg.Buckets, err = initBuckets(ctx, a.getenv, map[string]string{"POC_STATE_URL": a.getenv(statestore.EnvStateURL), "POC_IMAGE_BUCKET": a.getenv("POC_IMAGE_BUCKET")})
				if err != nil {
					return fmt.Errorf("uninstall --buckets: %w", err)
				}
			}
			n, err := repoinit.Uninstall(ctx, cfg)
			if err != nil {
				return err
			}
			if !dryRun && n == 0 {
				a.printf("Nothing left to remove from %s.\n", repo)
			}
			return nil
		},
	})
}
