package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/repoinit"
)

func uninstallCommand() *command {
	var (
		gf                         githubFlags
		dryRun, withIAM, withBucks bool
	)
	return &command{
		name: "uninstall",
		summary: "remove what init made (its record, the repository variable POCBOT_INIT, checked with the App's key, says what): the secrets it wrote and its environment (kept when it holds anything else), with --iam the Scaleway identities, with --buckets the emptied buckets; " +
			"refuses while a cluster's state exists (/poc down them first); --dry-run prints the plan; a rerun finishes an interrupted one",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			gf.define(e, "", "OWNER/REPO to remove pocbot from (required)")
			e.Bool(&dryRun, "dry-run", "", false, "print the plan; change nothing")
			e.Bool(&withIAM, "iam", "", false, "also delete this repository's API keys on the project's IAM applications (pocbot-PROJECT, pocbot-presign-PROJECT), and an application with its policies once no other repository or project uses it, with this shell's SCW_* credentials (IAMManager)")
			e.Bool(&withBucks, "buckets", "", false, "also empty (every version) and delete the state and image buckets (shared by every repository of the project: for the last one)")
		},
		env: append([]string{"POC_APP_ID", "POC_APP_PRIVATE_KEY", "POC_APP_PRIVATE_KEY_FILE", "POC_IMAGE_BUCKET", "SCW_DEFAULT_ORGANIZATION_ID"}, envStore...),
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			if err := gf.required("uninstall"); err != nil {
				return err
			}
			if !a.env().Given("state-url") {
				return errors.New("uninstall: POC_STATE_URL is not set: it is needed to check that no cluster is up (give the value of the repository's POC_STATE_URL secret)")
			}
			token, _, err := repoinit.GitHubToken(ctx, a.getenv, nil)
			if err != nil {
				return fmt.Errorf("uninstall: %w", err)
			}
			cfg := repoinit.UninstallConfig{Repo: gf.repo, Env: gf.env, APIURL: gf.apiURL, Token: token, DryRun: dryRun, Out: a.stdout,
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
			// The App's key checks init's record of what it wrote (no key: no secret is deleted).
			if auth, err := a.appAuth(); err == nil {
				cfg.AppKey = auth.PrivateKeyPEM
			} else if !strings.Contains(err.Error(), "no GitHub credentials") {
				return fmt.Errorf("uninstall: %w", err)
			}
			if withIAM {
				if cfg.IAM, err = a.iamAdmin("uninstall"); err != nil {
					return err
				}
				if cfg.IAM.OrganizationID == "" {
					return errors.New("uninstall --iam: set SCW_DEFAULT_ORGANIZATION_ID")
				}
			}
			if withBucks {
				cfg.Buckets, err = initBuckets(ctx, a.getenv, map[string]string{"POC_STATE_URL": a.env().Raw("state-url"), "POC_IMAGE_BUCKET": a.env().Raw("image-bucket")})
				if err != nil {
					return fmt.Errorf("uninstall --buckets: %w", err)
				}
			}
			n, err := repoinit.Uninstall(ctx, cfg)
			if err != nil {
				return err
			}
			if !dryRun && n == 0 {
				a.printf("Nothing left to remove from %s.\n", gf.repo)
			}
			return nil
		},
	}
}
