package clusterops_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/statestore/storetest"
)

// fake is clusterops without a world: Ops on a counted file store whose graphs are steps that do
// nothing but record what a cluster's steps record (a machine, the kubeconfig), priced by the
// dated table. The decisions, the lock, the reads and the writes are the real ones; the engine
// runs; nothing is provisioned. A test of a question the world does not answer uses it.
type fake struct {
	ops   *clusterops.Ops
	store *statestore.Store
	count *storetest.Counter
	// gate, when set, holds every up's "machines" step until it is closed (or the up's context
	// ends); started hears that the step began.
	gate    chan struct{}
	started chan string
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := &fake{started: make(chan string, 16)}
	f.store, f.count = storetest.Open(t)
	f.ops = &clusterops.Ops{Store: f.store, Build: f.build, BuildPause: f.buildPause, Quoter: cost.NewQuoter(cost.TableSource{}),
		LockWait: 200 * time.Millisecond, LockLease: 30 * time.Second,
		Engine: provision.Options{PollInterval: time.Millisecond, StepTimeout: time.Minute}}
	return f
}

// build is a cluster's graph: machines, then the kubeconfig.
func (f *fake) build(g *provision.Graph, spec provision.Spec) error {
	if err := g.Add(provision.Node{Name: "machines", Kind: "fake_server", Apply: func(ctx context.Context, r *provision.Run) error {
		f.started <- r.ClusterID()
		if f.gate != nil {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return r.Record(ctx, "machines", provision.Record{Kind: "fake_server", ID: "srv-" + r.ClusterID(), Zone: spec.Zone})
	}, Destroy: func(ctx context.Context, r *provision.Run) error {
		r.Deleted("fake_server", "srv-"+r.ClusterID(), "machines")
		return nil
	}}); err != nil {
		return err
	}
	return g.Add(provision.Node{Name: "kubeconfig", Kind: "fake_config", Needs: []string{"machines"}, Apply: func(ctx context.Context, r *provision.Run) error {
		return r.SetSecret(ctx, cluster.SecretKubeconfig, []byte("apiVersion: v1\nkind: Config # "+r.ClusterID()+"\n"))
	}})
}

// buildPause is a cluster's pause graph: the machines go.
func (f *fake) buildPause(g *provision.Graph, spec provision.Spec, _ bool) error {
	return g.Add(provision.Node{Name: "machines", Kind: "fake_server", Apply: func(context.Context, *provision.Run) error { return nil },
		Destroy: func(ctx context.Context, r *provision.Run) error { return r.Forget(ctx, "machines") }})
}

// put writes a document for cluster as an up of in would have, in phase.
func (f *fake) put(t *testing.T, in clusterops.Intent, phase clusterops.Phase) {
	t.Helper()
	st, err := provision.NewState(in.Cluster, seedSpec())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	h := statestore.Header{Cluster: in.Cluster, Repository: in.Repository, Number: in.Number, Kind: in.Kind, RequestedBy: in.RequestedBy,
		Created: now, Expires: now.Add(4 * time.Hour), Phase: string(phase)}
	// What an up, or a pause, recorded: the daily cost running (≈ 4.30 €) or paused (≈ 0.30 €).
	daily := int64(4_300_000_000)
	if clusterops.Paused(h) {
		daily = 300_000_000
	}
	clusterops.Meta{DailyCostNanos: daily}.Into(&h)
	if err := putState(t.Context(), f.store, h, st); err != nil {
		t.Fatal(err)
	}
}

// putState writes a cluster's document: h over st.
func putState(ctx context.Context, store *statestore.Store, h statestore.Header, st *provision.State) error {
	body, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return store.Put(ctx, &statestore.Document{Header: h, Body: body})
}

// testKey is a fresh state key URL.
func testKey() string {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return "base64key://" + base64.URLEncoding.EncodeToString(k)
}
