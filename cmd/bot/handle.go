package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/statestore"
)

// processStart is when this process started: the 👀 latency is measured from it.
var processStart = time.Now()

func init() {
	register(&command{
		name:    "handle",
		summary: "answer one GitHub event (the Actions entry point: GITHUB_EVENT_NAME, GITHUB_EVENT_PATH)",
		run: func(ctx context.Context, a *app, fs *flag.FlagSet) error {
			_, err := a.handle(ctx, a.getenv, processStart)
			return err
		},
	})
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
	slug := strings.TrimSpace(getenv("POC_APP_SLUG"))
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
	gh, err := github.NewClient(ctx, auth)
	if err != nil {
		return chatops.Outcome{}, err
	}
	actions, closeActions, err := github.NewActions(env, a.stdout)
	if err != nil {
		return chatops.Outcome{}, err
	}
	defer func() { _ = closeActions() }()
	if env.InActions {
		if tok, err := gh.Token(ctx); err == nil {
			actions.Mask(tok)
		}
	} else {
		actions = nil // workflow commands mean nothing outside Actions
	}
	h := &chatops.Handler{
		GitHub: gh, Env: env, Actions: actions, AppSlug: slug, Log: a.log, Started: started,
		Open: func(ctx context.Context) (*chatops.Backend, error) { return openBackend(ctx, getenv, a) },
	}
	h.Reap = func(ctx context.Context, ev github.Event) (string, error) {
		return a.reapOnce(ctx, getenv, env, gh, false)
	}
	if getenv("POC_REAP_ON_EVENTS") != "false" {
		// GitHub disables the schedules of repositories idle for 60 days: every event run reaps
		// too, bounded (reaper.Opportunistic), once its own command is answered.
		h.Opportunistic = func(ctx context.Context, ev github.Event) (string, error) {
			return a.reapOnce(ctx, getenv, env, gh, true)
		}
	}
	if v := getenv("POC_STICKY_INTERVAL"); v != "" {
		if h.StickyInterval, err = time.ParseDuration(v); err != nil {
			return chatops.Outcome{}, fmt.Errorf("POC_STICKY_INTERVAL=%q is not a duration like 3s", v)
		}
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
func (a *app) reapOnce(ctx context.Context, getenv func(string) string, env github.ActionsEnv, gh *github.Client, opportunistic bool) (string, error) {
	b, driver, err := openBackendParts(ctx, getenv, a)
	if err != nil {
		return "", err
	}
	defer b.Close()
	rc, err := repoConfig(ctx, gh)
	if err != nil {
		return "", err
	}
	cfg := reaper.Config{Ops: b.Ops, Repository: env.Repository, Issues: gh, Inventory: driver, Spec: b.Spec,
		KeepLabel: rc.KeepLabel, WarnBefore: rc.WarnBefore, Log: a.log, RunID: env.RunID}
	if opportunistic {
		cfg = reaper.Opportunistic(cfg)
		cfg.Inventory = nil // the orphan pass lists every zone: the schedule's job
	}
	rep, err := reaper.Run(ctx, cfg)
	var table strings.Builder
	if werr := rep.WriteTable(&table); werr != nil && err == nil {
		err = werr
	}
	msg := fmt.Sprintf("%d clusters listed: %d destroyed, %d warned, %d kept, %d busy, %d failed, %d swept in %s\n\n%s",
		rep.Listed, rep.Count(reaper.ActionDestroyed), rep.Count(reaper.ActionWarned), rep.Count(reaper.ActionKept),
		rep.Count(reaper.ActionBusy), rep.Failed(), rep.Count(reaper.ActionSwept), rep.Elapsed.Round(time.Millisecond), table.String())
	if err == nil && rep.Failed() > 0 {
		err = fmt.Errorf("%d teardowns or sweeps failed; the next run retries them", rep.Failed())
	}
	return msg, err
}

// openBackend opens the state store, the Scaleway client, the image bucket and the price
// sources from getenv alone (wiring.go's openWorld reads some settings from the process
// environment, which `bot demo` must not change).
func openBackend(ctx context.Context, getenv func(string) string, a *app) (*chatops.Backend, error) {
	b, _, err := openBackendParts(ctx, getenv, a)
	return b, err
}

// openBackendParts is openBackend plus the Scaleway driver (the reaper's orphan inventory).
func openBackendParts(ctx context.Context, getenv func(string) string, a *app) (b *chatops.Backend, drv *scaleway.Driver, err error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	region := cmpOr(getenv("SCW_DEFAULT_REGION"), provision.DefaultSpec().Region)

	scfg, err := statestore.ConfigFromEnv(getenv)
	if err != nil {
		return nil, nil, err
	}
	opts := []statestore.Option{statestore.WithLogger(a.log)}
	if strings.HasPrefix(scfg.StateURL, "s3://") {
		sb, err := openS3(ctx, scfg.StateURL, getenv)
		if err != nil {
			return nil, nil, fmt.Errorf("open the state bucket %s: %w", statestore.EnvStateURL, err)
		}
		closers = append(closers, func() { _ = sb.Close() })
		opts = append(opts, statestore.WithBucket(sb))
	}
	store, err := statestore.Open(ctx, scfg, opts...)
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() { _ = store.Close() })

	client, err := scwClient(getenv)
	if err != nil {
		return nil, nil, err
	}
	driver, err := scaleway.New(scaleway.Config{Client: client})
	if err != nil {
		return nil, nil, err
	}
	u, bucketName, err := imageBucketURL(getenv("POC_IMAGE_BUCKET"), region)
	if err != nil {
		return nil, nil, err
	}
	var ib *blob.Bucket
	if strings.HasPrefix(u, "s3://") {
		ib, err = openS3(ctx, u, getenv)
	} else {
		ib, err = blob.OpenBucket(ctx, u)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open the image bucket POC_IMAGE_BUCKET=%q: %w", u, err)
	}
	closers = append(closers, func() { _ = ib.Close() })
	rescuePort := 22
	if v := getenv("POC_RESCUE_SSH_PORT"); v != "" {
		if rescuePort, err = strconv.Atoi(v); err != nil {
			return nil, nil, fmt.Errorf("POC_RESCUE_SSH_PORT=%q is not a port number", v)
		}
	}
	poll := provision.DefaultPollInterval
	if v := getenv("POC_POLL_INTERVAL"); v != "" {
		if poll, err = time.ParseDuration(v); err != nil || poll <= 0 {
			return nil, nil, fmt.Errorf("POC_POLL_INTERVAL=%q is not a positive duration like 2s", v)
		}
	}
	lockWait := 10 * time.Minute
	if v := getenv("POC_LOCK_WAIT"); v != "" {
		if lockWait, err = time.ParseDuration(v); err != nil || lockWait <= 0 {
			return nil, nil, fmt.Errorf("POC_LOCK_WAIT=%q is not a positive duration like 10m", v)
		}
	}
	factory := strings.TrimRight(cmpOr(getenv(images.FactoryURLEnv), images.DefaultFactoryURL), "/")
	ccfg := cluster.Config{Driver: driver, FactoryURL: factory, ImageBucket: ib, RescuePort: rescuePort,
		RunnerCIDR: strings.TrimSpace(getenv("POC_RUNNER_CIDR")), Log: a.log}
	spec := provision.DefaultSpec()
	spec.ImageBucket = bucketName
	ops := &clusterops.Ops{
		Store:    store,
		Build:    func(g *provision.Graph, s provision.Spec) error { return cluster.Build(g, s, ccfg) },
		Engine:   provision.Options{PollInterval: poll, Logger: a.log},
		Log:      a.log,
		LockWait: lockWait,
	}
	return &chatops.Backend{Ops: ops, Quoter: cost.NewQuoter(cost.APISources(client)...), Spec: spec, Close: closeAll}, driver, nil
}

func cmpOr(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

// scwClient builds the Scaleway client from getenv's SCW_* variables.
func scwClient(getenv func(string) string) (*scw.Client, error) {
	ak, sk := strings.TrimSpace(getenv("SCW_ACCESS_KEY")), strings.TrimSpace(getenv("SCW_SECRET_KEY"))
	if ak == "" || sk == "" {
		return nil, errors.New("SCW_ACCESS_KEY and SCW_SECRET_KEY are not set: give the bot's Scaleway API key (IAM application)")
	}
	opts := []scw.ClientOption{
		scw.WithHTTPClient(&http.Client{Transport: &scaleway.RetryTransport{Base: http.DefaultTransport}, Timeout: 2 * time.Minute}),
		scw.WithAuth(ak, sk),
		scw.WithDefaultZone(scw.Zone(cmpOr(getenv("SCW_DEFAULT_ZONE"), provision.DefaultSpec().Zone))),
		scw.WithDefaultRegion(scw.Region(cmpOr(getenv("SCW_DEFAULT_REGION"), provision.DefaultSpec().Region))),
	}
	if v := strings.TrimSpace(getenv("SCW_API_URL")); v != "" {
		opts = append(opts, scw.WithAPIURL(v))
	}
	if v := strings.TrimSpace(getenv("SCW_DEFAULT_PROJECT_ID")); v != "" {
		opts = append(opts, scw.WithDefaultProjectID(v))
	}
	if v := strings.TrimSpace(getenv("SCW_DEFAULT_ORGANIZATION_ID")); v != "" {
		opts = append(opts, scw.WithDefaultOrganizationID(v))
	}
	c, err := scw.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("scaleway client from SCW_* variables: %w", err)
	}
	return c, nil
}

// openS3 opens an s3:// bucket URL (endpoint, region, use_path_style in its query) with static
// credentials from getenv: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else the Scaleway keys, which
// Scaleway Object Storage accepts.
func openS3(ctx context.Context, raw string, getenv func(string) string) (*blob.Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%q is not an s3://BUCKET URL", raw)
	}
	q := u.Query()
	ak, sk := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" {
		ak, sk = getenv("SCW_ACCESS_KEY"), getenv("SCW_SECRET_KEY")
	}
	if ak == "" || sk == "" {
		return nil, errors.New("no Object Storage credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or SCW_ACCESS_KEY/SCW_SECRET_KEY")
	}
	o := s3.Options{
		Region:       cmpOr(q.Get("region"), "fr-par"),
		UsePathStyle: q.Get("use_path_style") == "true",
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		// S3-compatible servers other than AWS expect no flexible-checksum trailers.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if ep := q.Get("endpoint"); ep != "" {
		o.BaseEndpoint = aws.String(ep)
	}
	return s3blob.OpenBucket(ctx, s3.New(o), u.Host, nil)
}
