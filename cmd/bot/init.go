package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pocbot/pocbot/internal/appsetup"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/schedule"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/version"
	"github.com/pocbot/pocbot/internal/wiring"
)

// initValueEnv are the variables whose values `bot init` writes as secrets when they are missing.
var initValueEnv = []string{"POC_STATE_URL", "POC_STATE_KEY", "POC_IMAGE_BUCKET", "SCW_ACCESS_KEY", "SCW_SECRET_KEY",
	"SCW_DEFAULT_PROJECT_ID", "POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"}

// initOptions are the flags of `bot init`.
type initOptions struct {
	githubFlags
	action, webURL                string
	appName, appOwner, appKeyFile string
	dryRun, makeIAM, prWorkflow   bool
	interval                      time.Duration
}

func initCommand() *command {
	var o initOptions
	return &command{
		name: "init",
		summary: "set a repository up: the App's installation, the secrets (sealed, in the poc environment or the repository's), " +
			"a pull request adding the pinned workflow and .github/poc.yml; converges, --dry-run prints the plan; " +
			"the GitHub token is read as gh does (GH_TOKEN, GITHUB_TOKEN, then `gh auth token`)",
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			o.githubFlags.define(e, "", "OWNER/REPO to set up (required)")
			e.String(&o.action, "action", "", "", "the Action the workflow pins: OWNER/REPO@<commit SHA> # vX.Y.Z (default: this release's tag on pocbot/pocbot)")
			e.String(&o.webURL, "github-url", "", github.DefaultWebURL, "GitHub's web URL, for the links printed")
			e.Bool(&o.dryRun, "dry-run", "", false, "print the plan; change nothing")
			e.Bool(&o.prWorkflow, "pr-workflow", "", false, "also propose .github/workflows/poc-pr.yml: the pull requests' end-to-end job on their cluster (deploy/workflow/poc-pr.yml; set its env: before merging)")
			e.Setting(&o.interval, "schedule_interval")
			e.String(&o.appName, "app-name", "", "pocbot", "without POC_APP_ID: the name of the GitHub App to register (unique on all of GitHub, at most 34 characters)")
			e.String(&o.appOwner, "app-owner", "", "", "without POC_APP_ID: the organization that will own the App (you must be its owner or an App manager); empty: your account")
			e.String(&o.appKeyFile, "app-key-file", "", "pocbot-app.private-key.pem", "without POC_APP_ID: where the new App's private key is written (mode 0600, never overwritten)")
			e.Bool(&o.makeIAM, "iam", "", false, "make the bot's Scaleway IAM application for the project (pocbot-PROJECT), its policy and this repository's API key (and the read-only presigning ones) with this shell's SCW_* credentials, an administrator's (IAMManager), instead of writing SCW_ACCESS_KEY/SCW_SECRET_KEY as the bot's key")
		},
		env: append([]string{"POC_APP_ID", "POC_APP_PRIVATE_KEY", "POC_APP_PRIVATE_KEY_FILE"}, initValueEnv...),
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error { return a.initRepo(ctx, o) },
	}
}

// initRepo is `bot init`: without an App, it registers one and stops; with one, it converges the
// repository (repoinit.Run).
func (a *app) initRepo(ctx context.Context, o initOptions) error {
	if err := o.required("init"); err != nil {
		return err
	}
	token, src, err := repoinit.GitHubToken(ctx, a.getenv, nil)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	auth, err := a.appAuth()
	if err != nil && !strings.Contains(err.Error(), "no GitHub credentials") {
		return fmt.Errorf("init: %w", err)
	}
	if auth.AppID == 0 {
		return a.initRegisterApp(ctx, o)
	}
	action := o.action
	if action == "" {
		action, err = defaultActionRef(ctx, o.apiURL, token)
		if err != nil {
			return err
		}
	}
	cron, err := schedule.Cron(o.interval, 7)
	if err != nil {
		return fmt.Errorf("init: --schedule-interval: %w", err)
	}
	values := initValues(a.getenv, o.makeIAM)
	var ids *repoinit.IAM
	if o.makeIAM {
		if ids, err = a.iamAdmin("init"); err != nil {
			return err
		}
	}
	buckets, err := initBuckets(ctx, a.getenv, values)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "init: GitHub token from %s\n", src)
	rep, err := repoinit.Run(ctx, repoinit.Config{Repo: o.repo, Env: o.env, APIURL: o.apiURL, WebURL: o.webURL, Token: token,
		AppID: auth.AppID, AppKey: auth.PrivateKeyPEM, ActionRef: action, Cron: cron, PRWorkflow: o.prWorkflow, Values: values, IAM: ids, Buckets: buckets, DryRun: o.dryRun, Out: a.stdout})
	if err != nil {
		return err
	}
	switch {
	case o.dryRun:
	case rep.UpToDate && rep.Changes == 0:
		a.printf("\n%s is set up; nothing changed. `bot doctor --repo %s` checks it.\n", o.repo, o.repo)
	case rep.PR != 0:
		a.printf("\nNext: merge pull request #%d (%s), then comment /poc up on an issue.\n", rep.PR, rep.PRURL)
	}
	return nil
}

// initRegisterApp registers a GitHub App when init has none (GitHub's one browser confirmation);
// then the user installs it on the repository and runs init again with its id and key.
func (a *app) initRegisterApp(ctx context.Context, o initOptions) error {
	if o.dryRun {
		a.printf("+ would register the GitHub App %q through the manifest flow (one confirmation in the browser), then stop: install it and run init again\n", o.appName)
		return nil
	}
	res, err := appsetup.Run(ctx, appsetup.Config{Owner: o.appOwner, Name: o.appName, WebURL: o.webURL, APIURL: o.apiURL, KeyFile: o.appKeyFile, Repository: o.repo,
		Ready: func(u string) {
			fmt.Fprintf(a.stderr, "No POC_APP_ID: registering a GitHub App. Open %s in your browser: it posts the App's manifest to GitHub, which asks you to confirm.\n", u)
		}})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	a.printf("+ GitHub App %s registered (id %d); its private key is in %s (mode 0600, never printed)\n\n", res.Slug, res.AppID, res.KeyFile)
	a.printf("Next: install it on %s (GitHub asks for this click): %s/apps/%s/installations/new\nthen run init again with the App:\n\n  POC_APP_ID=%d POC_APP_PRIVATE_KEY_FILE=%s bot init --repo %s …\n\nA second repository needs no new App: give the same POC_APP_ID and key.\n",
		o.repo, strings.TrimRight(o.webURL, "/"), res.Slug, res.AppID, res.KeyFile, o.repo)
	return nil
}

// initValues are the values init writes as secrets: the set variables of initValueEnv, less the
// administrator's Scaleway keys when init makes the bot's own (--iam).
func initValues(getenv func(string) string, makeIAM bool) map[string]string {
	values := map[string]string{}
	for _, k := range initValueEnv {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			values[k] = v
		}
	}
	if makeIAM {
		// These are the administrator's: never the bot's secrets.
		for _, k := range []string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY", "POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"} {
			delete(values, k)
		}
	}
	return values
}

// defaultActionRef is the Action's reference for this build: a release resolves its own tag on
// pocbot/pocbot to the tag's commit (which holds the release's sums); a development build has no
// tag and asks for --action.
func defaultActionRef(ctx context.Context, apiURL, token string) (string, error) {
	v := version.String()
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(v) {
		return "", fmt.Errorf("init: this bot (%s) is not a release: give --action 'pocbot/pocbot@<commit SHA> # vX.Y.Z', the commit of a release tag (git ls-remote https://github.com/pocbot/pocbot 'refs/tags/vX.Y.Z*', the ^{} line for an annotated tag)", v)
	}
	return repoinit.ResolveAction(ctx, apiURL, token, repoinit.ActionRepo, v, nil)
}

// initBuckets are the s3:// buckets of POC_STATE_URL and POC_IMAGE_BUCKET (a bare image bucket name
// is in the region's Object Storage), with clients signed by this shell's key (AWS_ACCESS_KEY_ID,
// else SCW_ACCESS_KEY: the administrator's); file:// ones have nothing to make.
func initBuckets(ctx context.Context, getenv func(string) string, values map[string]string) ([]repoinit.Bucket, error) {
	var out []repoinit.Bucket
	region := settings.Env(getenv).String("scw-region")
	urls := [][2]string{{"state", values["POC_STATE_URL"]}}
	if v := values["POC_IMAGE_BUCKET"]; v != "" {
		u, _, err := wiring.ImageBucketURL(v, region)
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		urls = append(urls, [2]string{"image", u})
	}
	for _, ru := range urls {
		if !strings.HasPrefix(ru[1], "s3://") {
			continue
		}
		b, err := wiring.OpenS3(ctx, ru[1], getenv)
		if err != nil {
			return nil, fmt.Errorf("init: the %s bucket: %w", ru[0], err)
		}
		var c *s3.Client
		if !b.As(&c) {
			_ = b.Close()
			return nil, fmt.Errorf("init: the %s bucket %s: no S3 client", ru[0], ru[1])
		}
		u, _ := url.Parse(ru[1])
		out = append(out, repoinit.Bucket{Role: ru[0], Name: u.Host, Client: c})
		_ = b.Close() // the client outlives the bucket handle
	}
	return out, nil
}
