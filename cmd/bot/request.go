package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/prkube"
)

// requestKubeconfigCommand is the Action's `command: kubeconfig`: run in a job of a pull
// request's own workflow, it asks the bot for a short-lived kubeconfig of the pull request's
// cluster (internal/prkube) with the job's GITHUB_TOKEN and OIDC token only, writes it 0600 and
// sets the step output kubeconfig-path.
func requestKubeconfigCommand() *command {
	var expires, timeout time.Duration
	var out string
	return &command{
		name:    "request-kubeconfig",
		summary: "in a pull request's workflow job: get a short-lived kubeconfig for the pull request's cluster (needs no secret: the job's GITHUB_TOKEN and OIDC token)",
		env:     []string{"GITHUB_TOKEN", "GITHUB_RUN_ATTEMPT", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "RUNNER_TEMP", "POC_POLL_INTERVAL"},
		setFlags: func(fs *flag.FlagSet, e *envFlags) {
			e.Setting(&expires, "request-expires")
			e.Setting(&timeout, "request-timeout")
			fs.StringVar(&out, "o", "", "where to write the kubeconfig (mode 0600); default $RUNNER_TEMP/pocbot-<run>-<attempt>.kubeconfig")
		},
		run: func(ctx context.Context, a *app, _ *flag.FlagSet) error {
			if timeout <= 0 {
				return errors.New("request-kubeconfig: --timeout must be positive")
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			_, err := a.requestKubeconfig(ctx, a.getenv, expires, out)
			return err
		},
	}
}

// requestKubeconfig is request-kubeconfig's work, also run in-process by the Actions stand-in;
// it returns the kubeconfig's path.
func (a *app) requestKubeconfig(ctx context.Context, getenv func(string) string, expires time.Duration, out string) (string, error) {
	env, err := github.EnvFromActions(getenv)
	if err != nil {
		return "", err
	}
	ev, err := github.ReadEvent(env)
	if err != nil {
		return "", err
	}
	if err := prkube.CheckJob(ev.Name, ev.Number, ev.PR.FromFork, ev.PR.HeadRepo); err != nil {
		return "", fmt.Errorf("no kubeconfig: %w", err)
	}
	token := strings.TrimSpace(getenv("GITHUB_TOKEN"))
	if token == "" {
		return "", errors.New("no kubeconfig: GITHUB_TOKEN is not set: the Action passes the job's token (input github-token, default ${{ github.token }})")
	}
	runID, err1 := strconv.ParseInt(env.RunID, 10, 64)
	attempt, err2 := strconv.Atoi(cmpOr(getenv("GITHUB_RUN_ATTEMPT"), "1"))
	if err1 != nil || err2 != nil || runID <= 0 || attempt <= 0 {
		return "", fmt.Errorf("no kubeconfig: GITHUB_RUN_ID=%q and GITHUB_RUN_ATTEMPT=%q do not name a run", env.RunID, getenv("GITHUB_RUN_ATTEMPT"))
	}
	if out == "" {
		tmp := getenv("RUNNER_TEMP")
		if tmp == "" {
			return "", errors.New("no kubeconfig: RUNNER_TEMP is not set: give -o FILE")
		}
		out = filepath.Join(tmp, fmt.Sprintf("pocbot-%d-%d.kubeconfig", runID, attempt))
	}
	actions, closeActions, err := github.NewActions(env, a.stdout)
	if err != nil {
		return "", err
	}
	defer func() { _ = closeActions() }()
	if !env.InActions {
		actions = nil
	}
	mask := func(s string) {
		if actions != nil {
			actions.Mask(s)
		}
	}
	mask(token)
	gh, err := github.NewClient(ctx, github.Auth{Token: token, Owner: env.Owner, Repo: env.Repo, BaseURL: env.APIURL, JobToken: true, Logger: a.log})
	if err != nil {
		return "", err
	}
	// The answer is polled every 10 s: a job's GITHUB_TOKEN may make 1,000 requests an hour in a
	// repository (docs "Rate limits for the REST API"), and a cold cluster takes minutes.
	poll, err := pollFrom(getenv, 10*time.Second)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	ask := &prkube.Ask{API: gh, PR: ev.Number, RunID: runID, RunAttempt: attempt, HeadSHA: ev.PR.HeadSHA, Lifetime: expires,
		IDToken: func(ctx context.Context, aud string) (string, error) {
			return github.RequestIDToken(ctx, hc, getenv, aud)
		},
		Mask: mask, Log: a.log, Now: a.now, Poll: poll}
	res, err := ask.Run(ctx)
	if err != nil {
		return "", fmt.Errorf("no kubeconfig for pull request #%d: %w", ev.Number, err)
	}
	for _, s := range kubecert.MaskValues(res.Kubeconfig) {
		mask(s)
	}
	if err := writePrivate(out, res.Kubeconfig); err != nil {
		return "", err
	}
	if actions != nil {
		if err := actions.SetOutput("kubeconfig_path", out); err != nil {
			return "", err
		}
		_ = actions.AppendSummary(fmt.Sprintf("### pocbot: kubeconfig of `%s`\n\nA client certificate `%s` for %s, valid until %s, written to the job's temporary directory.\n",
			res.Cluster, res.Subject, res.Server, res.NotAfter.UTC().Format(time.RFC3339)))
	}
	fmt.Fprintf(a.stderr, "wrote the kubeconfig of cluster %s (%s, as %s, valid until %s) to %s\n",
		res.Cluster, res.Server, res.Subject, res.NotAfter.UTC().Format(time.RFC3339), out)
	return out, nil
}

// writePrivate writes a credential file readable by its owner only, replacing any file there.
func writePrivate(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pocbot-kubeconfig-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err == nil {
		_, err = tmp.Write(data)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
