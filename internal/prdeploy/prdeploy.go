// Package prdeploy shows a pull request's cluster on the pull request's page, as preview tools
// do: a GitHub deployment of the pull request's head commit to an environment of its own
// (Environment), whose statuses follow the cluster (in_progress while an up runs, success with
// the environment's URL once ready, failure when the up failed, inactive once the cluster is
// gone), so that the page says "deployed" and links "View deployment".
//
// It decides (State, URL, Plan are pure) and records through a small API that
// internal/github.Client implements. Recording is courtesy: a failure is logged and never fails
// the cluster's operation.
package prdeploy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

// Environment is the deployment environment of a cluster: one per cluster, so that each pull
// request's page shows its own, and never `poc` (the environment that holds the bot's secrets).
func Environment(cluster string) string { return "poc-" + strings.ToLower(cluster) }

// Deployment states (OpenAPI repos/create-deployment-status: state).
const (
	InProgress = "in_progress"
	Success    = "success"
	Failure    = "failure"
	Inactive   = "inactive"
)

// State is the deployment state of a cluster's phase, "" when the phase says nothing new (a
// refused or planned operation changed nothing).
func State(p lifecycle.Phase) string {
	switch p {
	case lifecycle.PhaseProvisioning, lifecycle.PhaseResuming:
		return InProgress
	case lifecycle.PhaseReady:
		return Success
	case lifecycle.PhaseFailed:
		return Failure
	case lifecycle.PhaseDestroyed, lifecycle.PhasePaused:
		return Inactive
	}
	return ""
}

// URL is the environment URL of a ready cluster: its edge's DNS name when the cluster has a DNS
// zone, else the edge's address (the worker, which serves 80 and 443); "" without either.
func URL(edgeName, edgeAddress string) string {
	host := edgeName
	if host == "" {
		host = edgeAddress
	}
	if host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		host = "[" + host + "]"
	}
	return "http://" + host
}

// Plan says which deployment a status goes to: the newest one of sha in the environment (reuse),
// or a new one (create) when sha has none. A pull request that moved to a new commit gets a new
// deployment, as GitHub shows one per deployed commit.
func Plan(existing []github.Deployment, sha string) (id int64, create bool) {
	for _, d := range existing { // the newest (highest id) of sha, whatever the listing's order
		if d.SHA == sha && d.ID > id {
			id = d.ID
		}
	}
	return id, id == 0
}

// Retirable are the deployments to mark inactive once the cluster is gone: every one whose
// latest status is not inactive already.
func Retirable(existing []github.Deployment) []int64 { return Superseded(existing, 0) }

// Superseded are the deployments to mark inactive once deployment live succeeded: every other one
// whose latest status is not inactive. GitHub's auto_inactive would not do it: it skips transient
// environments (OpenAPI repos/create-deployment-status, auto_inactive), and a cluster's is one.
func Superseded(existing []github.Deployment, live int64) []int64 {
	var out []int64
	for _, d := range existing {
		if d.ID != live && d.State != Inactive {
			out = append(out, d.ID)
		}
	}
	return out
}

// API is what recording asks of GitHub; *github.Client implements it.
type API interface {
	CreateDeployment(ctx context.Context, sha, environment, description string) (int64, error)
	CreateDeploymentStatus(ctx context.Context, id int64, st github.DeploymentStatus) error
	Deployments(ctx context.Context, environment string) ([]github.Deployment, error)
}

// Recorder records one repository's cluster deployments.
type Recorder struct {
	API API
	Log *slog.Logger
	// LogURL links each status to the run that set it (the workflow run's page).
	LogURL string
}

func (r *Recorder) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

// Record sets the status of cluster's deployment of sha: state, a description, and the
// environment URL (success only). Failures are logged.
func (r *Recorder) Record(ctx context.Context, cluster, sha, state, description, url string) {
	if r == nil || r.API == nil || sha == "" || state == "" {
		return
	}
	env := Environment(cluster)
	err := func() error {
		existing, err := r.API.Deployments(ctx, env)
		if err != nil {
			return err
		}
		id, create := Plan(existing, sha)
		if create {
			if id, err = r.API.CreateDeployment(ctx, sha, env, "pocbot cluster "+cluster); err != nil {
				return err
			}
		}
		st := github.DeploymentStatus{State: state, Description: description, LogURL: r.LogURL}
		if state != Success {
			return r.API.CreateDeploymentStatus(ctx, id, st)
		}
		st.EnvironmentURL = url
		if err := r.API.CreateDeploymentStatus(ctx, id, st); err != nil {
			return err
		}
		// The page shows one live deployment: an older commit's is inactive once a newer succeeds.
		var errs []error
		for _, old := range Superseded(existing, id) {
			errs = append(errs, r.API.CreateDeploymentStatus(ctx, old, github.DeploymentStatus{State: Inactive,
				Description: "superseded by " + short(sha), LogURL: r.LogURL}))
		}
		return errors.Join(errs...)
	}()
	r.warn(err, "record the pull request's deployment", cluster, state)
}

// Retire marks every deployment of cluster inactive (the cluster is gone).
func (r *Recorder) Retire(ctx context.Context, cluster, description string) {
	if r == nil || r.API == nil {
		return
	}
	err := func() error {
		existing, err := r.API.Deployments(ctx, Environment(cluster))
		if err != nil {
			return err
		}
		var errs []error
		for _, id := range Retirable(existing) {
			errs = append(errs, r.API.CreateDeploymentStatus(ctx, id, github.DeploymentStatus{State: Inactive, Description: description, LogURL: r.LogURL}))
		}
		return errors.Join(errs...)
	}()
	r.warn(err, "mark the pull request's deployments inactive", cluster, Inactive)
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func (r *Recorder) warn(err error, what, cluster, state string) {
	switch {
	case err == nil:
		r.log().Info("deployment recorded", "cluster", cluster, "state", state)
	case errors.Is(err, github.ErrNotGranted):
		r.log().Warn("could not "+what+": the App's installation lacks deployments: write", "cluster", cluster, "fix", "accept the App's new permissions, then run `bot doctor`")
	default:
		r.log().Warn("could not "+what, "cluster", cluster, "state", state, "err", err)
	}
}
