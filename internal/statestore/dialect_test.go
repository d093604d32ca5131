package statestore

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/objstore"
)

// TestScalewayDialects: on a bucket that ignores the conditions of a DeleteObject (Scaleway, the
// stricter reading) and on one that rejects them, racing runs still get one winner per round,
// a release lets the next round be won, a forced unlock and a state deletion work, and a deleted
// state can be created again. On the old store, release and deletion were conditional deletes:
// rejected, every release failed; ignored, a release removed whatever lock was there. The same
// on a bucket that honours them (AWS S3, register row delete-conditions' third reading).
func TestScalewayDialects(t *testing.T) {
	t.Parallel()
	for _, mode := range append(slices.Clone(objstore.ScalewayReadings), objstore.DeleteConditionsHonoured) {
		t.Run("delete conditions "+mode.String(), func(t *testing.T) {
			w := s3WorldWith(t, objstore.Options{DeleteConditions: mode})
			ctx := t.Context()
			key := newKey(t)
			stores := make([]*Store, 6)
			for i := range stores {
				stores[i] = w.open(t, key)
			}
			if err := stores[0].CheckBackend(ctx); err != nil {
				t.Fatalf("CheckBackend: %v", err)
			}
			for round := 0; round < 3; round++ {
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					winners []*Lock
				)
				for i, s := range stores {
					wg.Add(1)
					go func() {
						defer wg.Done()
						l, err := s.Lock(ctx, "race", LockInfo{Actor: fmt.Sprintf("racer-%d", i), Command: "up"}, time.Minute)
						switch {
						case err == nil:
							mu.Lock()
							winners = append(winners, l)
							mu.Unlock()
						case !errors.Is(err, ErrLocked):
							t.Errorf("round %d racer %d: %v", round, i, err)
						}
					}()
				}
				wg.Wait()
				if len(winners) != 1 {
					t.Fatalf("round %d: %d winners, want 1", round, len(winners))
				}
				if round == 1 {
					if err := stores[0].ForceUnlock(ctx, "race", winners[0].Info().ID); err != nil {
						t.Fatalf("force-unlock: %v", err)
					}
					if err := winners[0].Release(ctx); !errors.Is(err, ErrLockLost) {
						t.Fatalf("release after a forced unlock: %v, want ErrLockLost", err)
					}
					continue
				}
				if err := winners[0].Release(ctx); err != nil {
					t.Fatalf("round %d: release: %v", round, err)
				}
				if li, err := stores[0].ReadLock(ctx, "race"); li != nil || err != nil {
					t.Fatalf("round %d: after release: %+v %v", round, li, err)
				}
			}

			s := stores[0]
			if err := s.Put(ctx, sampleDoc("gone")); err != nil {
				t.Fatal(err)
			}
			doc, err := s.Get(ctx, "gone")
			if err != nil {
				t.Fatal(err)
			}
			stale, _ := stores[1].Get(ctx, "gone")
			if err := s.Delete(ctx, doc); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := stores[1].Delete(ctx, stale); !errors.Is(err, ErrConflict) {
				t.Fatalf("delete of a document already deleted: %v, want ErrConflict", err)
			}
			if _, err := s.Get(ctx, "gone"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get after delete: %v, want ErrNotFound", err)
			}
			if hs, err := s.List(ctx); err != nil || len(hs) != 0 {
				t.Fatalf("List after delete: %v %v, want nothing", hs, err)
			}
			// Two runs create it again at once: one wins.
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range errs {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = stores[i+2].Put(ctx, sampleDoc("gone")) }()
			}
			wg.Wait()
			if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], ErrConflict) || errors.Is(errs[1], ErrConflict)) {
				t.Fatalf("two re-creates of a deleted document: %v / %v, want one winner and one ErrConflict", errs[0], errs[1])
			}
			if _, err := s.Get(ctx, "gone"); err != nil {
				t.Fatalf("Get after re-create: %v", err)
			}
		})
	}
}
