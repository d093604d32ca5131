// Package opstest gives a test clusterops.Ops without a world: a counted file store
// (storetest.Counter) with its pool of parked workers, and graphs whose steps do nothing but record what a cluster's steps record
// (a machine, the kubeconfig), priced by the dated table. The decisions, the locks, the reads and
// the writes are the real ones; the engine runs; nothing is provisioned. A test whose question is
// not the engine or the wire (policy, replies, the lock, the reads) runs on it in milliseconds.
package opstest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/statestore/storetest"
)

// Fake is Ops on a counted store with do-nothing graphs.
type Fake struct {
	Ops   *clusterops.Ops
	Store *statestore.Store
	Count *storetest.Counter
	// Gate, when set before an up, holds its "machines" step until it is closed (or the up's
	// context ends); Started hears the cluster whose machines step began.
	Gate    chan struct{}
	Started chan string
	steps   atomic.Int64
}

// Steps is how many steps the graphs ran (applied or destroyed): what stands, without a world,
// for the calls a cloud would have seen.
func (f *Fake) Steps() int { return int(f.steps.Load()) }

// New is a Fake whose store lives in t's temporary directory.
func New(t testing.TB) *Fake {
	t.Helper()
	f := &Fake{Started: make(chan string, 64)}
	f.Store, f.Count = storetest.Open(t)
	f.Ops = &clusterops.Ops{Store: f.Store, Build: f.build, BuildPause: f.buildPause, Quoter: cost.NewQuoter(cost.TableSource{}),
		Pool:     &poolstore.Pool{Store: f.Store},
		LockWait: 200 * time.Millisecond, LockLease: 30 * time.Second,
		Engine: provision.Options{PollInterval: time.Millisecond, StepTimeout: time.Minute}}
	return f
}

// build is a cluster's graph: machines, then the kubeconfig.
func (f *Fake) build(g *provision.Graph, spec provision.Spec) error {
	if err := g.Add(provision.Node{Name: "machines", Kind: "fake_server", Apply: func(ctx context.Context, r *provision.Run) error {
		f.steps.Add(1)
		select {
		case f.Started <- r.ClusterID():
		default:
		}
		if f.Gate != nil {
			select {
			case <-f.Gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return r.Record(ctx, "machines", provision.Record{Kind: "fake_server", ID: "srv-" + r.ClusterID(), Zone: spec.Zone})
	}, Destroy: func(ctx context.Context, r *provision.Run) error {
		f.steps.Add(1)
		r.Deleted("fake_server", "srv-"+r.ClusterID(), "machines")
		return nil
	}}); err != nil {
		return err
	}
	return g.Add(provision.Node{Name: "kubeconfig", Kind: "fake_config", Needs: []string{"machines"}, Apply: func(ctx context.Context, r *provision.Run) error {
		f.steps.Add(1)
		return r.SetSecret(ctx, cluster.SecretKubeconfig, []byte("apiVersion: v1\nkind: Config # "+r.ClusterID()+"\n"))
	}})
}

// buildPause is a cluster's pause graph: the machines go.
func (f *Fake) buildPause(g *provision.Graph, _ provision.Spec, _ bool) error {
	return g.Add(provision.Node{Name: "machines", Kind: "fake_server", Apply: func(context.Context, *provision.Run) error { return nil },
		Destroy: func(ctx context.Context, r *provision.Run) error { f.steps.Add(1); return r.Forget(ctx, "machines") }})
}
