package clusterops_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/clusterops/opstest"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
	"github.com/pocbot/pocbot/internal/statestore/storetest"
)

// fake is clusterops without a world (opstest.Fake): a question of policy, of the lock or of the
// reads runs on it.
type fake struct {
	*opstest.Fake
	ops   *clusterops.Ops
	store *statestore.Store
	count *storetest.Counter
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := opstest.New(t)
	return &fake{Fake: f, ops: f.Ops, store: f.Store, count: f.Count}
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
