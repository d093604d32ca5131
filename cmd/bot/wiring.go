package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"gocloud.dev/secrets/localsecrets"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // file:// image buckets (the embedded default)
	_ "gocloud.dev/blob/s3blob"   // s3:// image buckets (Scaleway Object Storage)

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

// s3Credentials lets gocloud's s3 driver, which reads the AWS variables, use the Scaleway keys:
// Scaleway Object Storage takes the same access and secret keys as the API.
func s3Credentials(getenv func(string) string) {
	if getenv("AWS_ACCESS_KEY_ID") == "" && getenv("SCW_ACCESS_KEY") != "" {
		_ = os.Setenv("AWS_ACCESS_KEY_ID", getenv("SCW_ACCESS_KEY"))
		_ = os.Setenv("AWS_SECRET_ACCESS_KEY", getenv("SCW_SECRET_KEY"))
	}
}

func (a *app) openStore(ctx context.Context) (*statestore.Store, error) {
	s3Credentials(a.getenv)
	cfg, err := statestore.ConfigFromEnv(a.getenv)
	if err != nil {
		return nil, err
	}
	return statestore.Open(ctx, cfg, statestore.WithLogger(a.log))
}

// imageBucketURL turns POC_IMAGE_BUCKET into a gocloud URL and the bucket's Scaleway name: a bare
// name is a bucket of Scaleway Object Storage in the region; a URL is taken as it is.
func imageBucketURL(v, region string) (string, string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", "", errors.New("POC_IMAGE_BUCKET is not set: name the Object Storage bucket that holds the Talos images, e.g. POC_IMAGE_BUCKET=acme-poc-images")
	}
	if !strings.Contains(v, "://") {
		u := fmt.Sprintf("s3://%s?endpoint=https://s3.%s.scw.cloud&region=%s&use_path_style=true", v, region, region)
		return u, v, nil
	}
	p, err := url.Parse(v)
	if err != nil {
		return "", "", fmt.Errorf("POC_IMAGE_BUCKET=%q is not a bucket URL: %w", v, err)
	}
	name := p.Host
	if p.Scheme == "file" {
		parts := strings.Split(strings.TrimRight(p.Path, "/"), "/")
		name = parts[len(parts)-1]
	}
	return v, name, nil
}

// world is what the operations need from the environment, opened once per process.
type opsWorld struct {
	store       *statestore.Store
	driver      *scaleway.Driver
	imageBucket *blob.Bucket
	bucketName  string
	factoryURL  string
	ops         *clusterops.Ops
}

func (w *opsWorld) Close() {
	if w.imageBucket != nil {
		_ = w.imageBucket.Close()
	}
	if w.store != nil {
		_ = w.store.Close()
	}
}

func (a *app) openWorld(ctx context.Context, region string) (*opsWorld, error) {
	w := &opsWorld{}
	ok := false
	defer func() {
		if !ok {
			w.Close()
		}
	}()
	var err error
	if w.store, err = a.openStore(ctx); err != nil {
		return nil, err
	}
	client, err := scaleway.NewClientFromEnv()
	if err != nil {
		return nil, err
	}
	if w.driver, err = scaleway.New(scaleway.Config{Client: client}); err != nil {
		return nil, err
	}
	u, name, err := imageBucketURL(a.getenv("POC_IMAGE_BUCKET"), region)
	if err != nil {
		return nil, err
	}
	if w.imageBucket, err = blob.OpenBucket(ctx, u); err != nil {
		return nil, fmt.Errorf("open the image bucket POC_IMAGE_BUCKET=%q: %w", u, err)
	}
	w.bucketName = name
	w.factoryURL = images.FactoryBaseURL()
	rescuePort := 22
	if v := a.getenv("POC_RESCUE_SSH_PORT"); v != "" {
		if rescuePort, err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("POC_RESCUE_SSH_PORT=%q is not a port number", v)
		}
	}
	poll, err := provision.PollIntervalFromEnv()
	if err != nil {
		return nil, err
	}
	lease, wait, err := lockTimesFromEnv(a.getenv)
	if err != nil {
		return nil, err
	}
	// The Talos client logs through its own package logger (slog.Default otherwise): route it to
	// the bot's handler so that its lines share the format and POC_DEBUG level.
	talos.Logger = a.log.With("component", "talos")
	ccfg := cluster.Config{Driver: w.driver, FactoryURL: w.factoryURL, ImageBucket: w.imageBucket, RescuePort: rescuePort,
		RunnerCIDR: strings.TrimSpace(a.getenv("POC_RUNNER_CIDR")), Log: a.log}
	w.ops = &clusterops.Ops{
		Store:     w.store,
		Build:     func(g *provision.Graph, spec provision.Spec) error { return cluster.Build(g, spec, ccfg) },
		Engine:    provision.Options{PollInterval: poll, Logger: a.log},
		Log:       a.log,
		LockLease: lease,
		LockWait:  wait,
	}
	ok = true
	return w, nil
}

// Lock timing variables. The defaults (clusterops: 2 min lease, 10 min wait) suit Actions; a
// shorter lease lets the next run take over sooner from one that was killed (tests, laptops).
const (
	envLockLease = "POC_LOCK_LEASE"
	envLockWait  = "POC_LOCK_WAIT"
)

// lockTimesFromEnv reads POC_LOCK_LEASE and POC_LOCK_WAIT (zero: clusterops' default).
func lockTimesFromEnv(getenv func(string) string) (lease, wait time.Duration, err error) {
	for _, v := range []struct {
		env string
		p   *time.Duration
	}{{envLockLease, &lease}, {envLockWait, &wait}} {
		s := strings.TrimSpace(getenv(v.env))
		if s == "" {
			continue
		}
		d, perr := time.ParseDuration(s)
		if perr != nil || d <= 0 {
			return 0, 0, fmt.Errorf("environment variable %s=%q is not a positive duration: use a form like 30s or 2m", v.env, s)
		}
		*v.p = d
	}
	return lease, wait, nil
}

// lockFlags documents and overrides the lock timing on the commands that take the lock.
type lockFlags struct{ lease, wait time.Duration }

func (l *lockFlags) define(e *envFlags) {
	e.Duration(&l.lease, "lock-lease", envLockLease, 2*time.Minute,
		"lease of the cluster lock, renewed at a third of it; a killed run's lock is taken over once it lapses")
	e.Duration(&l.wait, "lock-wait", envLockWait, 10*time.Minute, "how long to wait for a cluster lock another run holds")
}

func (l *lockFlags) apply(o *clusterops.Ops) {
	if l.lease > 0 {
		o.LockLease = l.lease
	}
	if l.wait > 0 {
		o.LockWait = l.wait
	}
}

// progressPrinter prints the engine's step events as a live list.
type progressPrinter struct {
	mu sync.Mutex
	w  io.Writer
	t0 time.Time
}

func newProgressPrinter(w io.Writer) *progressPrinter { return &progressPrinter{w: w, t0: time.Now()} }

func (p *progressPrinter) Event(e provision.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mark := map[provision.Phase]string{provision.PhaseStarted: "…", provision.PhaseDone: "✓", provision.PhaseFailed: "✗",
		provision.PhaseSkipped: "-", provision.PhaseProgress: " "}[e.Phase]
	line := fmt.Sprintf("%6.1fs %s %-22s", time.Since(p.t0).Seconds(), mark, e.Step)
	if e.Phase == provision.PhaseDone || e.Phase == provision.PhaseFailed {
		line += fmt.Sprintf(" %6.1fs", e.Elapsed.Seconds())
	}
	if e.Detail != "" {
		line += "  " + e.Detail
	}
	if e.Err != nil {
		line += "  " + e.Err.Error()
	}
	fmt.Fprintln(p.w, line)
}

// openStoreNoKey opens the store for what needs no key (listing headers, unlocking): without
// POC_STATE_KEY, a throwaway keeper stands in, and anything that would decrypt fails as a wrong key.
func (a *app) openStoreNoKey(ctx context.Context) (*statestore.Store, error) {
	if strings.TrimSpace(a.getenv(statestore.EnvStateKey)) != "" {
		return a.openStore(ctx)
	}
	s3Credentials(a.getenv)
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		return nil, err
	}
	cfg := statestore.Config{StateURL: strings.TrimSpace(a.getenv(statestore.EnvStateURL))}
	return statestore.Open(ctx, cfg, statestore.WithLogger(a.log), statestore.WithKeeper(localsecrets.NewKeeper(k)))
}
