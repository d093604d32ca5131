package worldtest_test

import (
	"sync/atomic"
	"testing"
	"time"

	block "github.com/scaleway/scaleway-sdk-go/api/block/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The image lock keeps two runs from making one shared image; a run whose image is stored
// already (the object whole in the bucket, its snapshot available) makes nothing and takes no
// lock: every up of a stored image and every resume skip the lock's writes on their critical
// path, and a maker holding the lock for another cluster does not hold them up. Before, the
// second up waited for the lock (here: failed with ErrLocked after the wait).
func TestStoredImageTakesNoImageLock(t *testing.T) {
	w := worldtest.Start(t, world.Options{TimeFactor: 0.002, S3: "file"})
	p := worldtest.New(t, w, worldtest.Options{LockWait: 300 * time.Millisecond})
	up := func(name string) error {
		_, err := p.Ops.Up(t.Context(), clusterops.Intent{Cluster: name, Spec: p.Spec, TTL: time.Hour, RequestedBy: "test", Command: "up"})
		return err
	}
	if err := up("first"); err != nil {
		t.Fatalf("first up (makes the image): %v", err)
	}
	maker, err := p.Store.Hold(t.Context(), statestore.DigestLock(statestore.LockImage, p.Spec.ImageBucket+"/"+p.Spec.ImageKey),
		statestore.LockInfo{Actor: "another-maker", Command: "image " + p.Spec.ImageKey}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer maker.Release(t.Context()) //nolint:errcheck
	if err := up("second"); err != nil {
		t.Fatalf("up of a stored image while another run holds its lock: %v", err)
	}
}

// A prune of an image (`bot images prune`) holds the image's lock and deletes its snapshot, then
// its object. An up that found the object whole without the lock, and then the snapshot missing,
// takes the lock only after the prune let it go: the object it recorded may be gone by then, and
// the snapshot is imported from it. Here the object disappears the moment the up has recorded it,
// the snapshot being gone already, as after such a prune: the up makes the object again under
// the lock before importing. Before, the import failed on the missing object.
func TestUpAfterAPruneRemadeTheObjectUnderTheLock(t *testing.T) {
	w := worldtest.Start(t, world.Options{TimeFactor: 0.002, S3: "file"})
	p := worldtest.New(t, w, worldtest.Options{})
	if _, err := p.Ops.Up(t.Context(), clusterops.Intent{Cluster: "first", Spec: p.Spec, TTL: time.Hour, RequestedBy: "test", Command: "up"}); err != nil {
		t.Fatalf("first up (makes the image): %v", err)
	}
	if _, err := p.Ops.Down(t.Context(), clusterops.Intent{Cluster: "first", RequestedBy: "test", Command: "down"}); err != nil {
		t.Fatalf("down: %v", err)
	}
	blk := block.NewAPI(p.Client)
	snaps, err := blk.ListSnapshots(&block.ListSnapshotsRequest{Zone: scw.Zone(p.Spec.Zone)}, scw.WithAllPages(), scw.WithContext(t.Context()))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps.Snapshots {
		if err := blk.DeleteSnapshot(&block.DeleteSnapshotRequest{Zone: s.Zone, SnapshotID: s.ID}, scw.WithContext(t.Context())); err != nil {
			t.Fatalf("delete snapshot %s: %v", s.ID, err)
		}
	}
	var pruned atomic.Bool
	progress := provision.ProgressFunc(func(e provision.Event) {
		if e.Step == cluster.NodeImageObject && e.Phase == provision.PhaseDone && pruned.CompareAndSwap(false, true) {
			if err := images.Delete(t.Context(), p.ImageBucket, p.Spec.ImageKey); err != nil {
				t.Errorf("delete the image object: %v", err)
			}
		}
	})
	// The engine's own hook, in its goroutine: the object is gone before the next step starts (an
	// observer hears the steps later, through its queue).
	ops := *p.Ops
	ops.Engine.Progress = progress
	if _, err := ops.Run(t.Context(), clusterops.VerbUp, clusterops.Intent{Cluster: "second", Spec: p.Spec, TTL: time.Hour, RequestedBy: "test", Command: "up"}, nil); err != nil {
		t.Fatalf("up after the prune: %v", err)
	}
	if !pruned.Load() {
		t.Fatal("the object was never deleted: the test did not run the case it is about")
	}
	if _, ok, err := images.Lookup(t.Context(), p.ImageBucket, p.Spec.ImageKey); err != nil || !ok {
		t.Errorf("the image object is not stored again after the up (found %v, %v)", ok, err)
	}
}
