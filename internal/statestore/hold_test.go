package statestore

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	simclock "github.com/pocbot/pocbot/internal/sim/clock"
)

// flakyBackend fails every conditional replace while down is set: a bucket that cannot be
// reached for renewals.
type flakyBackend struct {
	backend
	down atomic.Bool
}

var errUnreachable = errors.New("connection refused (test)")

func (f *flakyBackend) replace(ctx context.Context, key string, data []byte, ifVersion string) (string, error) {
	if f.down.Load() {
		return "", errUnreachable
	}
	return f.backend.replace(ctx, key, data, ifVersion)
}

// waitDone waits (bounded) for ctx to end and returns its cause.
func waitDone(t *testing.T, ctx context.Context, within time.Duration) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(within):
		t.Fatalf("the held context did not end within %s", within)
		return nil
	}
}

func TestHoldLosesTheLock(t *testing.T) {
	t.Parallel()
	// A renewal is a conditional PUT; under -race on a loaded 2-core machine one took 786 ms, and
	// a 900 ms lease then lapsed while it was renewed (the held context ended before the test
	// made it lose the lock). Three seconds leave a renewal period of a second to a PUT.
	const lease = 3 * time.Second
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			key := newKey(t)
			for _, tc := range []struct {
				name string
				// lose makes holder a's lock lost; it returns what the lost error must name.
				lose func(t *testing.T, ctx context.Context, a *Store, clock *fakeClock, h *Held) string
				// keeps says whose lock must remain after a's Release ("" = none).
				keeps string
			}{
				{
					name: "taken over after its lease lapsed",
					lose: func(t *testing.T, ctx context.Context, a *Store, clock *fakeClock, h *Held) string {
						b := w.open(t, key, WithClock(clock.Now))
						clock.Advance(2 * lease) // alice's lease lapses on the bucket's clock
						if _, err := b.Lock(ctx, "held", LockInfo{Actor: "bob", Command: "down"}, time.Minute); err != nil {
							t.Fatalf("take over: %v", err)
						}
						return "bob"
					},
					keeps: "bob",
				},
				{
					name: "removed by bot state unlock",
					lose: func(t *testing.T, ctx context.Context, a *Store, clock *fakeClock, h *Held) string {
						if err := a.ForceUnlock(ctx, "held", h.Info().ID); err != nil {
							t.Fatalf("force-unlock: %v", err)
						}
						return "removed"
					},
				},
				{
					name: "renewals failing for two thirds of the lease",
					lose: func(t *testing.T, ctx context.Context, a *Store, clock *fakeClock, h *Held) string {
						a.be.(*flakyBackend).down.Store(true)
						return "no renewal"
					},
				},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ctx := t.Context()
					clock := simclock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
					a := w.open(t, key, WithClock(clock.Now))
					fb := &flakyBackend{backend: a.be}
					a.be = fb
					h, err := a.Hold(ctx, ClusterLock("held"), LockInfo{Actor: "alice", Command: "up"}, lease)
					if err != nil {
						t.Fatal(err)
					}
					// A renewal succeeds first: the held context outlives several periods.
					time.Sleep(lease / 2)
					if h.Context().Err() != nil || h.Lost() != nil {
						t.Fatalf("held context ended while the lock was renewed: %v", context.Cause(h.Context()))
					}
					want := tc.lose(t, ctx, a, clock, h)
					start := time.Now()
					cause := waitDone(t, h.Context(), 2*lease)
					if !errors.Is(cause, ErrLockLost) || !strings.Contains(cause.Error(), want) {
						t.Fatalf("cause %v: want ErrLockLost naming %q", cause, want)
					}
					if el := time.Since(start); el > lease {
						t.Errorf("the loss was noticed after %s, more than the lease %s", el, lease)
					}
					if !errors.Is(h.Lost(), ErrLockLost) {
						t.Fatalf("Lost() = %v after the loss", h.Lost())
					}
					fb.down.Store(false)
					if err := h.Release(ctx); !errors.Is(err, ErrLockLost) {
						t.Fatalf("Release after a loss: %v, want the loss", err)
					}
					li, err := a.ReadLock(ctx, "held")
					switch {
					case err != nil:
						t.Fatal(err)
					case tc.keeps == "" && li != nil:
						t.Fatalf("lock left after a lost holder's release: %+v", li)
					case tc.keeps != "" && (li == nil || li.Actor != tc.keeps):
						t.Fatalf("a lost holder's release touched %s's lock: %+v", tc.keeps, li)
					}
					if li != nil {
						// Leave the bucket free for the next case.
						if err := a.ForceUnlock(ctx, "held", li.ID); err != nil {
							t.Fatal(err)
						}
					}
				})
			}
		})
	}
}

func TestHoldReleaseAndParent(t *testing.T) {
	t.Parallel()
	w := fileWorld(t)
	s := w.open(t, newKey(t))
	ctx := t.Context()
	h, err := s.Hold(ctx, ClusterLock("c"), LockInfo{Actor: "alice"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Another holder of the same key is refused, naming alice; another kind of the same name is not.
	if _, err := s.Hold(ctx, ClusterLock("c"), LockInfo{Actor: "bob"}, time.Minute); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("second Hold of a held key: %v, want ErrLocked naming alice", err)
	}
	other, err := s.Hold(ctx, LockKey{Kind: LockAdmission, Name: "c"}, LockInfo{Actor: "bob"}, time.Minute)
	if err != nil {
		t.Fatalf("Hold of another kind under the same name: %v", err)
	}
	busy, err := s.Hold(ctx, LockKey{Kind: LockAdmission, Name: "c"}, LockInfo{Actor: "carol"}, time.Minute, WaitUpTo(300*time.Millisecond))
	var le *LockedError
	if !errors.As(err, &le) || le.Kind != LockAdmission || !strings.Contains(err.Error(), `admission lock "c"`) || strings.Contains(err.Error(), "bot state unlock") {
		t.Fatalf("busy admission lock: %v %v, want a LockedError naming the admission lock, without the cluster unlock hint", busy, err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h.Context().Err() == nil {
		t.Fatal("the held context outlives Release")
	}
	if h.Lost() != nil {
		t.Fatalf("a plain release reads as a loss: %v", h.Lost())
	}
	if err := h.Release(ctx); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if li, err := s.ReadLock(ctx, "c"); li != nil || err != nil {
		t.Fatalf("lock after Release: %+v %v", li, err)
	}

	// The parent's end ends the held context; Release still gives the lock back.
	pctx, cancel := context.WithCancel(ctx)
	h, err = s.Hold(pctx, ClusterLock("c"), LockInfo{Actor: "dave"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := waitDone(t, h.Context(), time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cause %v after the parent's cancel", err)
	}
	if err := h.Release(pctx); err != nil {
		t.Fatalf("Release under a cancelled context: %v", err)
	}
	if li, err := s.ReadLock(ctx, "c"); li != nil || err != nil {
		t.Fatalf("lock after Release under a cancelled context: %+v %v", li, err)
	}
	if _, err := s.Hold(ctx, ClusterLock("c"), LockInfo{}, time.Minute, RenewEvery(time.Minute)); err == nil {
		t.Fatal("a renewal period as long as the lease was accepted")
	}
}
