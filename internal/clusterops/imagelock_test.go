package clusterops_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestImageLockLossEndsItsContext: the shared image is made under the image lock's context
// (cluster.ImageLocker), which ends when the lock is lost; before Hold, LockImage returned only a
// release, and the making went on under the caller's context whatever became of the lock.
func TestImageLockLossEndsItsContext(t *testing.T) {
	key := "base64key://" + base64.URLEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	store, err := statestore.Open(t.Context(), statestore.Config{StateURL: (&url.URL{Scheme: "file", Path: t.TempDir()}).String(), KeyURL: key})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ops := &clusterops.Ops{Store: store, LockLease: 900 * time.Millisecond}
	const image = "pocbot-images/talos/v1.13.11/abc.raw.zst"
	held, release, err := ops.LockImage(t.Context(), image)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	lk := statestore.DigestLock(statestore.LockImage, image)
	li, err := store.ReadLockKey(t.Context(), lk)
	if err != nil || li == nil || !strings.Contains(li.Command, image) {
		t.Fatalf("image lock: %+v %v", li, err)
	}
	// A second maker waits, then names the holder.
	ops2 := *ops
	ops2.LockWait = 200 * time.Millisecond
	if _, _, err := ops2.LockImage(t.Context(), image); !errors.Is(err, statestore.ErrLocked) {
		t.Fatalf("second LockImage: %v, want ErrLocked", err)
	}
	if err := store.ForceUnlockKey(t.Context(), lk, li.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held.Done():
		if cause := context.Cause(held); !errors.Is(cause, statestore.ErrLockLost) {
			t.Fatalf("image context ended with %v, want ErrLockLost", cause)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the image lock was removed and its context goes on")
	}
}
