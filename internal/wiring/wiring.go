// Package wiring opens, from the settings' environment, what one run of the bot works with: the
// state store (checked for locks and conditional writes before anything is created), the Scaleway
// client with its retrying transport and the driver, the image bucket, the price sources, the ETA
// book and a clusterops.Ops whose graph is the whole cluster. Open is the one constructor: cmd/bot
// (every command and `bot handle`, hence the demo and the soak, which run `bot handle`'s code
// path) and the test worlds (internal/sim/world/worldtest) all open their parts here, so the tests
// exercise production's wiring.
//
// Every value comes from Config.Getenv under the names of the settings table
// (internal/settings): SCW_*, POC_STATE_URL, POC_STATE_KEY, POC_IMAGE_BUCKET,
// POC_IMAGE_FACTORY_URL, POC_RESCUE_SSH_PORT, POC_POLL_INTERVAL, POC_LOCK_LEASE, POC_LOCK_WAIT,
// POC_RUNNER_CIDR, POC_RUNNER_ECHO_URL, POC_READ_RUNNER_ACCESS, POC_PRESIGN_ACCESS_KEY and POC_PRESIGN_SECRET_KEY; the
// durations read with the settings' one grammar. Config's other fields have no setting: the
// logger, the decision clock, and bounds that tests shorten.
package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"
	"gocloud.dev/blob"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/runnerip"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Config is what Open reads its settings from, and what no setting gives.
type Config struct {
	// Getenv reads the settings (os.Getenv in a process; required).
	Getenv func(string) string
	// Log receives the parts' logs (default: discarded).
	Log *slog.Logger
	// Now is the decision clock (nil: time.Now); `bot demo` moves it.
	Now func() time.Time
	// StepTimeout bounds each step of the engine (zero: the engine's default).
	StepTimeout time.Duration
	// RescuePasswordWait, ReadyTimeout and ParkTimeout are cluster.Config's (zero: the
	// cluster's defaults).
	RescuePasswordWait, ReadyTimeout, ParkTimeout time.Duration
}

// Backend is what Open opened. Close releases every part.
type Backend struct {
	// Ops decides and runs the operations; its Quoter prices them, its Pool is the state bucket's
	// parked workers.
	Ops    *clusterops.Ops
	Store  *statestore.Store
	Driver *scaleway.Driver
	Client *scw.Client
	// ImageBucket is POC_IMAGE_BUCKET; Spec is the seed's spec with its name.
	ImageBucket *blob.Bucket
	Spec        provision.Spec
	// ETA estimates an up from this project's past ups, else from the latency profile.
	ETA   *eta.Book
	Close func()
}

// Open opens the parts from cfg.Getenv; on an error, what it opened is closed again.
func Open(ctx context.Context, cfg Config) (_ *Backend, err error) {
	if cfg.Getenv == nil {
		return nil, errors.New("wiring: Config.Getenv is required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	getenv := cfg.Getenv
	env, err := readEnv(getenv)
	if err != nil {
		return nil, err
	}
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
	b := &Backend{Close: closeAll, Spec: provision.DefaultSpec()}
	store, err := OpenStore(ctx, getenv, cfg.Log, &closers)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = store.Close() })
	b.Store = store
	// Locks and conditional writes are what keep two runs from overwriting each other's state:
	// a bucket that ignores them is refused before anything is created.
	if err := b.Store.CheckBackend(ctx); err != nil {
		return nil, err
	}
	if b.Client, err = ScalewayClient(getenv); err != nil {
		return nil, err
	}
	if b.Driver, err = scaleway.New(scaleway.Config{Client: b.Client}); err != nil {
		return nil, err
	}
	ib, bucketName, err := OpenImageBucket(ctx, getenv, env.region)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { _ = ib.Close() })
	b.ImageBucket, b.Spec.ImageBucket = ib, bucketName
	runnerCIDR := DetectRunner(ctx, getenv, cfg.Log)
	b.Ops, b.ETA = b.ops(cfg, env, images.FactoryBaseURL(getenv), runnerCIDR)
	return b, nil
}

// ops builds the operations on the opened parts: the whole cluster's graph, the pause graph, the
// pre-flight (priced candidates), the image and pool locks, and the ETA book.
func (b *Backend) ops(cfg Config, env envSettings, factory, runnerCIDR string) (*clusterops.Ops, *eta.Book) {
	ccfg := cluster.Config{Driver: b.Driver, FactoryURL: factory, ImageBucket: b.ImageBucket, RescuePort: env.rescuePort, CiliumChart: env.ciliumChart,
		RunnerCIDR: runnerCIDR, RescuePasswordWait: cfg.RescuePasswordWait, ReadyTimeout: cfg.ReadyTimeout, ParkTimeout: cfg.ParkTimeout, Log: cfg.Log,
		// Only the clusters of this state bucket share its pool of parked workers.
		Pool: &poolstore.Pool{Store: b.Store, Now: cfg.Now}, Now: cfg.Now,
		// A paused cluster's etcd snapshot: an encrypted streamed artifact of the state bucket.
		Snapshots: clusterops.Snapshots{Store: b.Store}}
	ops := &clusterops.Ops{
		Store: b.Store,
		Build: func(g *provision.Graph, s provision.Spec) error { return cluster.Build(g, s, ccfg) },
		BuildPause: func(g *provision.Graph, s provision.Spec, release bool) error {
			return cluster.BuildPause(g, s, ccfg, release)
		},
		Engine:    provision.Options{PollInterval: env.poll, StepTimeout: cfg.StepTimeout, Logger: cfg.Log},
		Log:       cfg.Log,
		Now:       cfg.Now,
		LockLease: env.lockLease,
		LockWait:  env.lockWait,
		// A status from outside admin_cidrs says that the security group is why it cannot connect.
		RunnerCIDR: runnerCIDR, NoReadRunnerAccess: env.noReadRunnerAccess,
		Quoter: cost.NewQuoter(cost.APISources(b.Client)...),
		Pool:   &poolstore.Pool{Store: b.Store, Now: cfg.Now},
	}
	// A claim of a warm spare gives its resources the new cluster's names and tags.
	ops.Rebind = func(ctx context.Context, st *provision.State, to string) error {
		plan, err := scaleway.RebindPlan(st, to)
		if err != nil {
			return err
		}
		return b.Driver.Rebind(ctx, plan)
	}
	ccfg.ImageLocker = ops // the Build closure sees it: clusters making one image take turns
	// Before anything is created, an up is weighed against the organization's quotas and the
	// stock of its worker offers, each candidate priced (worker_offers).
	ops.Preflight = cluster.Preflight(ccfg, func(ctx context.Context, s provision.Spec) (int64, error) {
		q, err := clusterops.Quote(ctx, ops.Quoter, s, 24*time.Hour, false)
		return q.Daily.Nanos, err
	})
	// The ETA: this project's past ups (the state bucket), else the latency profile — the
	// recorded Scaleway latencies and the hosts' figures the emulated world also plays.
	book := &eta.Book{Store: b.Store, Build: ops.Build, Profile: cluster.DefaultWaits(),
		SharedImage: b.Driver.SharedSnapshot}
	ops.ETA = book // Up estimates and records: /poc up and bot up alike
	ops.FirstContact = &firstcontact.Book{Store: b.Store}
	return ops, book
}

// envSettings are the settings Open reads besides the parts' own (store, client, bucket).
type envSettings struct {
	region              string
	rescuePort          int
	poll                time.Duration
	lockLease, lockWait time.Duration // zero: clusterops' defaults
	ciliumChart         chart.Source
	noReadRunnerAccess  bool // POC_READ_RUNNER_ACCESS=false
}

// CiliumChart is the pinned Cilium chart the environment sets (cilium-chart), or the default.
func CiliumChart(getenv func(string) string) (chart.Source, error) {
	src, err := chart.ParseSource(settings.Env(getenv).String("cilium-chart"))
	if err != nil {
		return src, fmt.Errorf("environment variable %s: %w", settings.Lookup("cilium-chart").Env, err)
	}

	return src, nil
}

// readEnv reads and checks them (named and defaulted by the settings table), before anything is
// opened.
func readEnv(getenv func(string) string) (envSettings, error) {
	env := settings.Env(getenv)
	e := envSettings{region: env.String("scw-region"), poll: provision.DefaultPollInterval}
	var err error
	if e.rescuePort, err = env.Int("rescue-ssh-port"); err != nil {
		return e, err
	}
	if e.ciliumChart, err = CiliumChart(getenv); err != nil {
		return e, err
	}
	for _, d := range []struct {
		setting string
		p       *time.Duration
	}{{"poll-interval", &e.poll}, {"lock-lease", &e.lockLease}, {"lock-wait", &e.lockWait}} {
		if !env.Given(d.setting) {
			continue
		}
		v, err := env.Duration(d.setting)
		if err != nil {
			return e, err
		}
		if v <= 0 {
			return e, fmt.Errorf("environment variable %s=%q is not a positive duration: use a form like 2s, 30s or 2m", settings.Lookup(d.setting).Env, env.Raw(d.setting))
		}
		*d.p = v
	}
	open, err := env.Bool("read-runner-access")
	if err != nil {
		return e, err
	}
	e.noReadRunnerAccess = !open
	return e, nil
}

// DetectRunner is POC_RUNNER_CIDR, or else the address the echo endpoint (POC_RUNNER_ECHO_URL)
// sees this process come from. A detection that fails is logged with what to set, and the run goes
// on without a runner address, as before detection existed: admin_cidrs that cover the runner
// (the default 0.0.0.0/0) need none.
func DetectRunner(ctx context.Context, getenv func(string) string, log *slog.Logger) string {
	env := settings.Env(getenv)
	if v := env.String("runner-cidr"); v != "" {
		return v
	}
	cidr, err := runnerip.Detect(ctx, nil, env.String("runner-echo-url"))
	if err != nil {
		log.Warn("runner address unknown: admin_cidrs that leave it out will lock this run out", "err", err)
		return ""
	}
	log.Info("runner address detected", "cidr", cidr)
	return cidr
}
