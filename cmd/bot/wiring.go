package main

import (
	"context"
	"strings"
	"time"

	_ "gocloud.dev/blob/fileblob" // file:// buckets (the embedded default)
	_ "gocloud.dev/blob/s3blob"   // s3:// buckets (Scaleway Object Storage)

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/wiring"
)

// lockFlags are the flags of the commands that take a cluster's lock (up, down, pause, resume):
// the lock's timing, and the directory the run is recorded into (--record, POC_RECORD_DIR).
type lockFlags struct {
	lease, wait time.Duration
	record      string
}

func (l *lockFlags) define(e *envFlags) {
	e.Setting(&l.lease, "lock-lease")
	e.Setting(&l.wait, "lock-wait")
	e.Setting(&l.record, record.Setting)
}

func (l *lockFlags) apply(o *clusterops.Ops) {
	if l.lease > 0 {
		o.LockLease = l.lease
	}
	if l.wait > 0 {
		o.LockWait = l.wait
	}
}

// open opens the world of a command on one cluster (up, down) with these lock settings, and the
// operator's intent of verb on the cluster.
func (l *lockFlags) open(ctx context.Context, a *app, name, verb string, patch clusterops.SpecPatch) (*opsWorld, clusterops.Intent, error) {
	a.recordInto(l.record)
	w, err := a.openWorld(ctx)
	if err != nil {
		return nil, clusterops.Intent{}, err
	}
	l.apply(w.ops)
	return w, a.intent(name, verb, w, patch), nil
}

// recordInto makes dir the run's recording directory: the flag's value is read where the setting
// is read, by every client internal/wiring and internal/github open (record.Wrap).
func (a *app) recordInto(dir string) {
	if dir == "" {
		return
	}
	env, getenv := settings.Lookup(record.Setting).Env, a.getenv
	a.getenv = func(k string) string {
		if k == env {
			return dir
		}
		return getenv(k)
	}
}

// opsWorld is what the operator commands need, opened once per process from the app's
// environment (the same code path as `bot handle`).
type opsWorld struct {
	ops        *clusterops.Ops
	store      *statestore.Store
	driver     *scaleway.Driver
	quoter     *cost.Quoter
	bucketName string
	close      func()
}

func (w *opsWorld) Close() { w.close() }

func (a *app) openWorld(ctx context.Context) (*opsWorld, error) {
	b, err := a.openBackend(ctx, a.getenv)
	if err != nil {
		return nil, err
	}
	return &opsWorld{ops: b.Ops, store: b.Store, driver: b.Driver, quoter: b.Ops.Quoter, bucketName: b.Spec.ImageBucket, close: b.Close}, nil
}

// openBackend opens every part of a run from getenv alone (wiring.Open), with the app's logger and
// clock: `bot demo` gives each run its own environment and moves the clock.
func (a *app) openBackend(ctx context.Context, getenv func(string) string) (*wiring.Backend, error) {
	return wiring.Open(ctx, wiring.Config{Getenv: getenv, Log: a.log, Now: a.now})
}

// chatopsBackend is the part of b a comment's handler works with.
func chatopsBackend(b *wiring.Backend) *chatops.Backend {
	return &chatops.Backend{Ops: b.Ops, Spec: b.Spec, Close: b.Close}
}

// openStore opens the state store alone (commands that touch no cloud API).
func (a *app) openStore(ctx context.Context) (*statestore.Store, error) {
	return openStore(ctx, a.getenv, a, &a.atExit)
}

// clusterOps checks --cluster and opens the store for a command that reads one cluster's state
// and touches no cloud API (status, cost, kubeconfig, state show); close releases the store.
func (a *app) clusterOps(ctx context.Context, name string) (ops *clusterops.Ops, close func(), err error) {
	if err := requireCluster(name); err != nil {
		return nil, nil, err
	}
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &clusterops.Ops{Store: s, Log: a.log}, func() { _ = s.Close() }, nil
}

// openStoreNoKey opens the store for what needs no key (listing headers, unlocking): without
// POC_STATE_KEY, a throwaway keeper stands in, and anything that would decrypt fails as a wrong key.
func (a *app) openStoreNoKey(ctx context.Context) (*statestore.Store, error) {
	if a.env().Given("state-key") {
		return a.openStore(ctx)
	}
	key, err := statestore.NewKeyURL()
	if err != nil {
		return nil, err
	}
	getenv := func(name string) string {
		if name == statestore.EnvStateKey {
			return key
		}
		return a.getenv(name)
	}
	return openStore(ctx, getenv, a, &a.atExit)
}

// openStore opens POC_STATE_URL with POC_STATE_KEY (wiring.OpenStore) with the app's logger.
func openStore(ctx context.Context, getenv func(string) string, a *app, closers *[]func()) (*statestore.Store, error) {
	return wiring.OpenStore(ctx, getenv, a.log, closers)
}

func cmpOr(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}
