package worldtest_test

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
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
	w, err := world.Start(t.Context(), world.Options{Dir: t.TempDir(), TimeFactor: 0.002, S3: "file"})
	if err != nil {
		t.Fatalf("start the world: %v", err)
	}
	t.Cleanup(func() { w.Close() })
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
