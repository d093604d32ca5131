package clusterops_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestUpDownOnScalewayBuckets: up, down and an up again of the same cluster, on a state bucket
// that ignores the conditions of a DeleteObject and on one that rejects them (Scaleway documents
// none; the store relies on none). On the old store the rejecting bucket failed every release
// (501) and the backend check refused both.
func TestUpDownOnScalewayBuckets(t *testing.T) {
	for _, mode := range objstore.ScalewayReadings {
		t.Run("delete conditions "+mode.String(), func(t *testing.T) {
			e, ctx := start(t, 3*time.Minute, world.Options{S3: "versitygw", S3Dialect: objstore.Options{DeleteConditions: mode}})
			if err := e.store.CheckBackend(ctx); err != nil {
				t.Fatalf("CheckBackend: %v", err)
			}
			const name = "acme-shop-7"
			req := clusterops.Intent{Cluster: name, Spec: e.spec, TTL: time.Hour, Repository: "acme/shop", Number: 7, Kind: "issue", RequestedBy: "alice", Command: "up"}
			if _, err := e.ops.Up(ctx, req); err != nil {
				t.Fatalf("up: %v", err)
			}
			if li, err := e.store.ReadLock(ctx, name); li != nil || err != nil {
				t.Fatalf("lock after up: %+v %v, want free", li, err)
			}
			down := req
			down.Command = "down"
			if _, err := e.ops.Down(ctx, down); err != nil {
				t.Fatalf("down: %v", err)
			}
			if left := e.live(name); len(left) > 0 {
				t.Fatalf("down left %v", left)
			}
			if _, err := e.store.Get(ctx, name); !errors.Is(err, statestore.ErrNotFound) {
				t.Fatalf("state after down: %v, want ErrNotFound", err)
			}
			if _, err := e.ops.Up(ctx, req); err != nil {
				t.Fatalf("up again after down: %v", err)
			}
			if hs, err := e.store.List(ctx); err != nil || len(hs) != 1 || hs[0].Cluster != name {
				t.Fatalf("List after the second up: %v %v", hs, err)
			}
			if _, err := e.ops.Down(ctx, down); err != nil {
				t.Fatalf("second down: %v", err)
			}
		})
	}
}
