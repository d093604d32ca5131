package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/prdeploy"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/repoinit"
	"github.com/pocbot/pocbot/internal/schedule"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/wiring"
)

// processStart is when this process started: the 👀 latency is measured from it.
var processStart = time.Now()

func handleCommand() *command {
	return &command{
		name:    "handle",
		summary: "answer one GitHub event (the Actions entry point: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH)",
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			_, err := a.handle(ctx, a.getenv, processStart)
			return err
		},
	}
}

// handle is `bot handle`, also run in-process by `bot demo`: every setting comes from getenv, so
// the demo can point it at an emulated world without touching the process environment.
func (a *app) handle(ctx context.Context, getenv func(string) string, started time.Time) (chatops.Outcome, error) {
	env, err := github.EnvFromActions(getenv)
	if err != nil {
		return chatops.Outcome{}, err
	}
	ev, err := github.ReadEvent(env)
	if err != nil {
		return chatops.Outcome{}, err
	}
	slug := settings.Env(getenv).String("app-slug")
	// Decided before authenticating: an edited comment or a bot's reply costs no API call.
	if why := chatops.Triage(ev, slug); why != "" {
		a.log.Info("event ignored", "event", ev.Name, "action", ev.Action, "why", why)
		return chatops.Outcome{Ignored: why}, nil
	}
	auth, err := github.AuthFromEnv(getenv)
	if err != nil {
		return chatops.Outcome{}, err
	}
	auth.InstallationID, auth.Logger = ev.InstallationID, a.log
	if auth.Owner == "" {
		auth.Owner, auth.Repo = ev.Owner, ev.Repo
	}
	actions, closeActions, err := github.NewActions(env, a.stdout)
	if err != nil {
		return chatops.Outcome{}, err
	}
	defer func() { _ = closeActions() }()
	if env.InActions {
		// Every installation token, the first and each refresh of a long run, is masked whole.
		auth.OnToken = actions.Mask
	} else {
		actions = nil // workflow commands mean nothing outside Actions
	}
	gh, err := github.NewClient(ctx, auth)
	if err != nil {
		return chatops.Outcome{}, err
	}
	if slug != "" && auth.Mode() == github.ModeApp {
		gh.SetSelfLogin(slug + "[bot]") // spares GET /app; its comments carry this login
	}
	h := &chatops.Handler{
		GitHub: gh, Env: env, Actions: actions, AppSlug: slug, Log: a.log, Started: started, Now: a.now,
		Open: func(ctx context.Context) (*chatops.Backend, error) {
			b, err := a.openBackend(ctx, getenv)
			if err != nil {
				return nil, a.setupDiagnosis(ctx, getenv, err)
			}
			return chatopsBackend(b), nil
		},
	}
	// A pull request's cluster is its GitHub deployment; its job's kubeconfig requests carry an
	// Actions OIDC token from this GitHub's issuer.
	h.Deployments = &prdeploy.Recorder{API: gh, Log: a.log, LogURL: env.RunURL()}
	set := settings.Env(getenv)
	h.Verifier = &github.OIDCVerifier{Issuer: cmp.Or(set.String("oidc-issuer"), github.OIDCIssuer(env.ServerURL))}
	if h.RequestPoll, err = pollFrom(getenv, settings.DefaultRequestPoll); err != nil {
		return chatops.Outcome{}, err
	}
	if h.RequestWait, err = set.Duration("request-wait"); err != nil {
		return chatops.Outcome{}, err
	}
	h.ScheduleNotice = func(ctx context.Context, b *chatops.Backend) string {
		return a.scheduleCheck(ctx, b.Ops.Store, gh, env.Repository)
	}
	h.Reap = func(ctx context.Context, ev github.Event) (string, error) {
		return a.reapOnce(ctx, getenv, env, gh, false, ev)
	}
	reapToo, err := settings.Env(getenv).Bool("reap-on-events")
	if err != nil {
		return chatops.Outcome{}, err
	}
	if reapToo {
		// GitHub disables the schedules of repositories idle for 60 days: every event run reaps
		// too, bounded (reaper.Opportunistic), once its own command is answered.
		h.Opportunistic = func(ctx context.Context, ev github.Event) (string, error) {
			return a.reapOnce(ctx, getenv, env, gh, true, ev)
		}
	}
	// A claim of a warm spare dispatches the pool's refill: a run of this workflow, command pool.
	h.RefillWorkflow = path.Base(repoinit.WorkflowPath)
	if h.StickyInterval, err = settings.Env(getenv).Duration("sticky-interval"); err != nil {
		return chatops.Outcome{}, err
	}
	out, err := h.Handle(ctx, ev)
	if out.EyesAfter > 0 {
		a.log.Info("handled", "verb", out.Verb, "cluster", out.Cluster, "ok", out.OK, "refused", out.Refused,
			"eyes_after", out.EyesAfter.Round(time.Millisecond).String(), "new_comments", out.NewComments)
	}
	return out, err
}

// reapOnce runs the reaper for the repository: the whole pass for schedule and workflow_dispatch
// events, a bounded one without the orphan pass after other events.
func (a *app) reapOnce(ctx context.Context, getenv func(string) string, env github.ActionsEnv, gh *github.Client, opportunistic bool, ev github.Event) (string, error) {
	b, err := a.openBackend(ctx, getenv)
	if err != nil {
		return "", err
	}
	driver := b.Driver
	defer b.Close()
	rc, err := repoConfig(ctx, gh)
	if err != nil {
		return "", err
	}
	if ev.Kind == github.KindDispatch && ev.Inputs["command"] == chatops.RefillCommand {
		// The warm pool's pass alone, dispatched (the Actions tab, `gh workflow run poc.yml -f
		// command=pool`): a refill now rather than at the next scheduled run.
		return "the warm pool's pass alone (workflow_dispatch, command pool)\n" + cmp.Or(a.poolPass(ctx, b, rc, env, ev), "\nwarm pool: nothing to do\n"), nil
	}
	cfg := reaper.Config{Ops: b.Ops, Repository: env.Repository, Issues: gh, Inventory: driver, Spec: b.Spec,
		KeepLabel: rc.KeepLabel, WarnBefore: rc.WarnBefore, Log: a.log, RunID: env.RunID, Now: a.now,
		ParkFor: rc.ParkFor, ShareParked: rc.ShareParkedWorkers, Pool: &poolstore.Pool{Store: b.Ops.Store, Now: a.now}, Parked: driver}
	deployments := &prdeploy.Recorder{API: gh, Log: a.log, LogURL: env.RunURL()}
	cfg.Gone = func(ctx context.Context, cluster string, _ int) {
		deployments.Retire(ctx, cluster, "cluster "+cluster+" torn down by the reaper")
	}
	cfg.Paused = func(ctx context.Context, cluster string, _ int) {
		deployments.Retire(ctx, cluster, "cluster "+cluster+" paused by pause_schedule")
	}
	if !opportunistic && rc.PauseSchedule != nil {
		// The schedule's pass pauses the ready clusters in a pause window.
		cfg.PauseSchedule, cfg.MaxPaused = rc.PauseSchedule, rc.MaxPaused // clusterops.Pause prices the paused cluster
	}
	if opportunistic {
		cfg = reaper.Opportunistic(cfg)
		cfg.Inventory = nil             // the orphan pass lists every zone: the schedule's job
		cfg.Pool, cfg.Parked = nil, nil // so does the parked pass
	}
	// The schedule keeps the warm pool: spares up to pool.size inside pool.hours, stale ones
	// replaced, the new one built first (the builds run in this pass). It starts before the
	// reaper, which leaves a stale spare to it for spare.ReapGrace, and runs beside it: a build
	// must not hold back the teardown of an expired cluster.
	var poolMsg string
	poolDone := make(chan struct{})
	if opportunistic {
		close(poolDone)
	} else {
		go func() {
			defer close(poolDone)
			poolMsg = a.poolPass(ctx, b, rc, env, ev)
		}()
	}
	rep, err := reaper.Run(ctx, cfg)
	<-poolDone
	if !opportunistic && err == nil {
		// The schedule's pass keeps the operators' "POC clusters" issue; a failure there is logged,
		// it must not fail the reaper's run.
		if n, berr := updateBoard(ctx, b.Ops.Store, gh, env.Repository, rep, a.clock()); berr != nil {
			a.log.Warn("could not update the POC clusters issue", "err", berr)
		} else {
			a.log.Info("POC clusters issue updated", "issue", n)
		}
	}
	if ev.Kind == github.KindSchedule && err == nil {
		a.scheduleBeat(ctx, b.Ops.Store, ev.Schedule, env.RunID)
	}
	var table strings.Builder
	if werr := rep.WriteTable(&table); werr != nil && err == nil {
		err = werr
	}
	msg := fmt.Sprintf("%d clusters listed: %d destroyed, %d warned, %d kept, %d busy, %d failed, %d swept in %s\n\n%s",
		rep.Listed, rep.Count(reaper.ActionDestroyed), rep.Count(reaper.ActionWarned), rep.Count(reaper.ActionKept),
		rep.Count(reaper.ActionBusy), rep.Failed(), rep.Count(reaper.ActionSwept), rep.Elapsed.Round(time.Millisecond), table.String()) + poolMsg
	if err == nil && rep.Failed() > 0 {
		err = fmt.Errorf("%d teardowns or sweeps failed; the next run retries them", rep.Failed())
	}
	return msg, err
}

// poolPass is the schedule's pass over the repository's warm pool (clusterops.PoolPass), in words
// for the run's summary; a failure is said there and logged, never the reaper's.
func (a *app) poolPass(ctx context.Context, b *wiring.Backend, rc repoconfig.RepoConfig, env github.ActionsEnv, ev github.Event) string {
	spec := b.Spec
	spec.ServiceAccountKey = rc.ServiceAccountKey
	every, _ := schedule.Interval(ev.Schedule)
	plan, steps, err := b.Ops.PoolPass(ctx, clusterops.PoolRequest{Repository: env.Repository, Spec: spec, Patch: poolPatch(rc.Pool),
		Bounds: &rc, Interval: every, RequestedBy: "pocbot (schedule)", RunID: env.RunID})
	if err != nil {
		a.log.Warn("warm pool pass", "err", err)
	}
	if len(steps) == 0 && err == nil {
		return ""
	}
	var m strings.Builder
	fmt.Fprintf(&m, "\nwarm pool: %s\n", plan.Why)
	for _, s := range steps {
		fmt.Fprintf(&m, "- %s %s: %s", s.Action, s.Spare, s.Why)
		if s.Err != nil {
			fmt.Fprintf(&m, " — failed: %v", s.Err)
		}
		m.WriteString("\n")
	}
	var fit *clusterops.PoolFitError
	switch {
	case errors.As(err, &fit):
		fmt.Fprintf(&m, "- refused: %v\n", fit)
	case err != nil && len(steps) == 0:
		fmt.Fprintf(&m, "- could not be planned: %v\n", err)
	}
	return m.String()
}

// pollFrom is POC_POLL_INTERVAL from getenv, def when unset: how often a wait polls.
func pollFrom(getenv func(string) string, def time.Duration) (time.Duration, error) {
	set := settings.Env(getenv)
	if !set.Given("poll-interval") {
		return def, nil
	}
	d, err := set.Duration("poll-interval")
	if err == nil && d <= 0 {
		err = fmt.Errorf("%s=%q: give a positive duration such as 2s or 100ms", settings.Lookup("poll-interval").Env, set.Raw("poll-interval"))
	}
	return d, err
}
