package statestore

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/sim/objstore"
)

// Register row put-precondition, the store under each reading the S3 stand-in plays: a losing
// conditional PutObject answered 412 or 409 (retried, then lost) passes the backend check and six
// racers for one lock make one winner; one whose condition is ignored is refused by the backend
// check (ErrUnsafeBackend, saying what is missing), before any state is written.
func TestStoreUnderEachPutPreconditionReading(t *testing.T) {
	t.Parallel()
	for _, r := range assume.MustLookup(assume.PutPrecondition).Readings {
		t.Run(r.Value, func(t *testing.T) {
			t.Parallel()
			w := s3WorldWith(t, objstore.Options{}.WithReadings(assume.Readings{assume.PutPrecondition: r.Value}))
			ctx := t.Context()
			key := newKey(t)
			stores := make([]*Store, 6)
			for i := range stores {
				stores[i] = w.open(t, key)
			}
			err := stores[0].CheckBackend(ctx)
			if !r.Handled {
				if !errors.Is(err, ErrUnsafeBackend) {
					t.Fatalf("the backend check under %s: %v, want ErrUnsafeBackend", r.Value, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("the backend check under %s: %v", r.Value, err)
			}
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				winners int
			)
			for i, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := s.Lock(ctx, "race", LockInfo{Actor: fmt.Sprintf("racer-%d", i), Command: "up"}, time.Minute)
					switch {
					case err == nil:
						mu.Lock()
						winners++
						mu.Unlock()
					case !errors.Is(err, ErrLocked):
						t.Errorf("racer %d: %v", i, err)
					}
				}()
			}
			wg.Wait()
			if winners != 1 {
				t.Errorf("under %s: %d winners of one lock, want 1", r.Value, winners)
			}
		})
	}
}
