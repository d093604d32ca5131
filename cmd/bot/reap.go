package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
)

// envGitHubCreds are the variables whose presence says "GitHub settings are given".
var envGitHubCreds = []string{"POC_APP_ID", "POC_APP_PRIVATE_KEY", "POC_APP_PRIVATE_KEY_FILE", "GITHUB_TOKEN"}

func reapCommand() *command {
	var (
		repository, keepLabel string
		dryRun, noOrphans     bool
		grace, budget, warn   time.Duration
		parkFor               time.Duration
		maxTeardowns          int
	)
	return &command{
		name: "reap",
		summary: "the schedule: destroy expired clusters and those whose issue / PR is closed, warn once before expiry, " +
			"sweep orphans; prints a table of decisions (exit 1 when a teardown failed: it is retried next run)",
		env: envList(envWorld, envGitHubCreds, []string{"GITHUB_API_URL"}),
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.String(&repository, "repository", "GITHUB_REPOSITORY", "",
				"owner/name: only this repository's clusters; with GitHub settings, also check their issues and comment")
			e.Setting(&dryRun, "reap-dry-run")
			e.Setting(&grace, "reap-grace")
			e.Setting(&maxTeardowns, "reap-max-teardowns")
			e.Setting(&budget, "reap-budget")
			// These two default to the repository's .github/poc.yml, read at run time: the flag's own
			// default is "unset" (-1, ""), its name, variable and help are the table's.
			wb, kl := settings.Lookup("warn_before"), settings.Lookup("keep_label")
			e.SettingWith(&warn, wb.Name, time.Duration(-1), wb.Help+" (default: "+wb.RepoKey+" of .github/poc.yml, else "+wb.Default+"; 0: none)")
			e.SettingWith(&keepLabel, kl.Name, "", kl.Help+" (default: "+kl.RepoKey+" of .github/poc.yml, else "+kl.Default+")")
			e.Setting(&noOrphans, "reap-no-orphans")
			pf := settings.Lookup("park_for")
			e.SettingWith(&parkFor, pf.Name, time.Duration(-1), pf.Help+" (default: "+pf.RepoKey+" of .github/poc.yml, else 0: delete)")
		},
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			if maxTeardowns < 0 || budget < 0 || grace <= 0 {
				return errors.New("reap: --max-teardowns and --budget must be ≥ 0 and --grace > 0")
			}
			w, err := a.openWorld(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			spec := provision.DefaultSpec()
			spec.ImageBucket = w.bucketName
			cfg := reaper.Config{Ops: w.ops, Repository: strings.TrimSpace(repository), Spec: spec, Grace: grace,
				MaxTeardowns: maxTeardowns, Budget: budget, DryRun: dryRun, Log: a.log,
				RunID: a.getenv("GITHUB_RUN_ID"), WarnBefore: repoconfig.Default().WarnBefore, KeepLabel: repoconfig.Default().KeepLabel}
			if !noOrphans {
				cfg.Inventory = w.driver
				cfg.Pool, cfg.Parked = &poolstore.Pool{Store: w.ops.Store}, w.driver
			}
			gh, err := a.reapGitHub(ctx, cfg.Repository)
			if err != nil {
				return err
			}
			if gh != nil {
				cfg.Issues = gh
				rc, err := repoConfig(ctx, gh)
				if err != nil {
					return err
				}
				cfg.WarnBefore, cfg.KeepLabel, cfg.ParkFor = rc.WarnBefore, rc.KeepLabel, rc.ParkFor
				cfg.ShareParked = rc.ShareParkedWorkers
				cfg.PauseSchedule, cfg.MaxPaused = rc.PauseSchedule, rc.MaxPaused
			} else {
				cfg.ShareParked = a.shareParked()
				a.log.Info("no GitHub settings: expired clusters only, no issue checks, no comments")
			}
			if warn >= 0 {
				cfg.WarnBefore = warn
			}
			if parkFor >= 0 {
				cfg.ParkFor = parkFor
			}
			if keepLabel != "" {
				cfg.KeepLabel = keepLabel
			}
			rep, err := reaper.Run(ctx, cfg)
			if gh != nil && !dryRun && err == nil {
				if n, berr := updateBoard(ctx, w.ops.Store, gh, cfg.Repository, rep, a.clock()); berr != nil {
					a.log.Warn("could not update the POC clusters issue", "err", berr)
				} else {
					a.log.Info("POC clusters issue updated", "issue", n)
				}
			}
			if werr := rep.WriteTable(a.stdout); werr != nil && err == nil {
				err = werr
			}
			if err != nil {
				return err
			}
			if n := rep.Failed(); n > 0 {
				return fmt.Errorf("reap: %d teardowns or sweeps failed (see the table); the next run retries them", n)
			}
			return nil
		},
	}
}

// reapGitHub returns the GitHub client of the repository, or nil when no GitHub settings are given
// at all (an operator's reap against a bucket). Settings given in part are an error, not a
// silent fallback: a workflow with a broken secret must not quietly stop checking issues.
func (a *app) reapGitHub(ctx context.Context, repository string) (*github.Client, error) {
	given := false
	for _, k := range envGitHubCreds {
		given = given || strings.TrimSpace(a.getenv(k)) != ""
	}
	if !given {
		return nil, nil
	}
	auth, err := github.AuthFromEnv(a.getenv)
	if err != nil {
		return nil, err
	}
	if repository == "" {
		return nil, errors.New("reap: GitHub settings are given but no repository: set --repository owner/name (GITHUB_REPOSITORY)")
	}
	owner, name, ok := strings.Cut(repository, "/")
	if !ok || owner == "" || name == "" {
		return nil, fmt.Errorf("reap: --repository %q is not owner/name", repository)
	}
	auth.Owner, auth.Repo, auth.Logger = owner, name, a.log
	return github.NewClient(ctx, auth)
}

// repoConfig reads .github/poc.yml from the default branch; a missing file means the defaults.
func repoConfig(ctx context.Context, gh *github.Client) (repoconfig.RepoConfig, error) {
	data, err := gh.RepoFile(ctx, repoconfig.Path, "")
	if errors.Is(err, github.ErrNotFound) {
		return repoconfig.Default(), nil
	}
	if err != nil {
		return repoconfig.RepoConfig{}, fmt.Errorf("read %s of the default branch: %w", repoconfig.Path, err)
	}
	rc, err := repoconfig.Parse(data)
	if err != nil {
		return repoconfig.RepoConfig{}, fmt.Errorf("%s of the default branch: %w", repoconfig.Path, err)
	}
	return rc, nil
}
