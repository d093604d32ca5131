package statestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// LockKind is the namespace of a lock: locks of different kinds never exclude each other, even
// under the same name.
type LockKind string

// The kinds of lock pocbot takes. The orphan sweep takes its cluster's LockCluster (it must
// exclude an up of the same cluster), never a kind of its own.
const (
	// LockCluster serialises everything done to one cluster: its state document and its resources.
	// Its object is locks/<cluster>.lock (the layout before kinds existed, which `bot state unlock`
	// and older bots know).
	LockCluster LockKind = "cluster"
	// LockAdmission serialises the admission of new clusters of one repository (the budget check
	// and the first document). Object: locks/admission/<name>.lock.
	LockAdmission LockKind = "admission"
	// LockImage serialises the making of one shared image (bucket object and snapshot).
	// Object: locks/image/<name>.lock.
	LockImage LockKind = "image"
	// LockBoard serialises the creation of one repository's operator board (the issue the
	// scheduled run keeps), so that two runs create one. Object: locks/board/<name>.lock.
	LockBoard LockKind = "board"
	// LockPool serialises the passes over one repository's warm pool (the schedule's, `bot pool
	// fill`), so that two build one pool. Object: locks/pool/<name>.lock.
	LockPool LockKind = "pool"
)

// LockKey names one lock: a kind and a name valid as a cluster name (see ClusterLock, DigestLock).
type LockKey struct {
	Kind LockKind
	Name string
}

// ClusterLock is the key of a cluster's own lock.
func ClusterLock(cluster string) LockKey { return LockKey{Kind: LockCluster, Name: cluster} }

// DigestLock is the key of kind named by any string (a repository, an image key): its name is a
// digest of s, so that any s makes a valid, fixed-length name. Callers normalise s first (GitHub
// names are case-insensitive: lower-case them).
func DigestLock(kind LockKind, s string) LockKey {
	sum := sha256.Sum256([]byte(s))
	return LockKey{Kind: kind, Name: hex.EncodeToString(sum[:8])}
}

func (k LockKey) String() string {
	if k.Kind == LockCluster || k.Kind == "" {
		return fmt.Sprintf("cluster %q", k.Name)
	}
	return fmt.Sprintf("%s lock %q", k.Kind, k.Name)
}

func (k LockKey) check() error {
	switch k.Kind {
	case LockCluster, LockAdmission, LockImage, LockBoard, LockPool:
	default:
		return fmt.Errorf("lock key %q: unknown kind %q (cluster, admission, image, board or pool)", k.Name, k.Kind)
	}
	return checkCluster(k.Name)
}

func (k LockKey) object() string {
	if k.Kind == LockCluster {
		return prefixLocks + k.Name + ".lock"
	}
	return prefixLocks + string(k.Kind) + "/" + k.Name + ".lock"
}

// Held is a lock kept alive by Hold until Release. Its Context ends when the lock is lost, when
// the context given to Hold ends, or at Release: the work protected by the lock runs under it.
type Held struct {
	lock   *Lock
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	once   sync.Once
	relErr error
}

// HoldOption tunes Hold.
type HoldOption func(*holdOptions)

type holdOptions struct {
	wait  time.Duration
	every time.Duration
}

// WaitUpTo makes Hold wait up to d for a busy lock (retrying with backoff, like WaitLock) before
// it gives up with the holder's *LockedError. Without it Hold tries once.
func WaitUpTo(d time.Duration) HoldOption { return func(o *holdOptions) { o.wait = d } }

// RenewEvery sets the renewal period (default a third of the lease). It must be shorter than
// the lease.
func RenewEvery(d time.Duration) HoldOption { return func(o *holdOptions) { o.every = d } }

// Hold is the one owner of a lock's lifetime. It takes the lock key for lease (info says who
// holds it; ID, Since and Expires are filled in), renews the lease every third of it, and
// returns a Held whose Context is a child of ctx cancelled, with a cause wrapping ErrLockLost,
// as soon as the lock is lost:
//
//   - a renewal is refused because the lock object is no longer this holder's (taken over after
//     a lapsed lease, or removed by `bot state unlock`): at once;
//   - renewals keep failing (the bucket unreachable) until two thirds of the lease have passed
//     since the last renewal that succeeded: the lease may lapse before another succeeds, so the
//     work stops while the lock is still, by its lease, its own.
//
// A failed renewal is retried every twelfth of the lease until then. Release stops the renewals,
// cancels Context and gives the lock back (a conditional write: a lock taken over meanwhile is
// left to its new holder); it is safe to call more than once and must be called, typically
// deferred, even after a loss. The work done under the lock must use Context (or a context
// derived from it) for every step it should not take without the lock.
//
// A busy lock yields a *LockedError naming its holder (errors.Is ErrLocked), after waiting up to
// the WaitUpTo option.
func (s *Store) Hold(ctx context.Context, key LockKey, info LockInfo, lease time.Duration, opts ...HoldOption) (*Held, error) {
	o := holdOptions{every: lease / 3}
	for _, opt := range opts {
		opt(&o)
	}
	if o.every <= 0 || o.every >= lease {
		return nil, fmt.Errorf("hold %s: renewal period %s must be positive and shorter than the lease %s", key, o.every, lease)
	}
	l, err := s.waitLock(ctx, key, info, lease, o.wait)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithCancelCause(ctx)
	h := &Held{lock: l, ctx: hctx, cancel: cancel, stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew(lease, o.every)
	return h, nil
}

// Context is the context of the work done under the lock: it ends when the lock is lost
// (context.Cause wraps ErrLockLost), when Hold's context ends, or at Release.
func (h *Held) Context() context.Context { return h.ctx }

// Info is the lock's current holder record (its ID is what `bot state unlock` takes).
func (h *Held) Info() LockInfo { return h.lock.Info() }

// Lost returns why the lock was lost, or nil while it is held (and after a plain Release).
func (h *Held) Lost() error {
	if err := context.Cause(h.ctx); errors.Is(err, ErrLockLost) {
		return err
	}
	return nil
}

func (h *Held) renew(lease, every time.Duration) {
	defer close(h.done)
	retry := max(lease/12, time.Millisecond)
	renewed := time.Now()
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), min(30*time.Second, every))
		err := h.lock.Renew(rctx)
		cancel()
		switch {
		case err == nil:
			renewed = time.Now()
			t.Reset(every)
		case errors.Is(err, ErrLockLost):
			h.lose(err)
			return
		case time.Since(renewed) >= lease*2/3:
			h.lose(fmt.Errorf("%w: no renewal of %s succeeded for %s of its %s lease (last error: %w); stopping before it lapses",
				ErrLockLost, h.lock.key, time.Since(renewed).Round(time.Millisecond), lease, err))
			return
		default:
			h.lock.s.log.Warn("renew a lock (retried)", "lock", h.lock.key.String(), "err", err)
			t.Reset(retry)
		}
	}
}

func (h *Held) lose(err error) {
	h.lock.s.log.Error("lost a lock: the work under it stops", "lock", h.lock.key.String(), "err", err)
	h.cancel(err)
}

// Release stops the renewals, cancels Context and gives the lock back. It returns why the lock
// was lost when it was (nothing is then given back: the lock is someone else's or gone), or the
// release's own error. Its I/O is bounded by 30 s and survives ctx's cancellation (a run being
// stopped still gives its lock back). Later calls return the first call's answer.
func (h *Held) Release(ctx context.Context) error {
	h.once.Do(func() {
		close(h.stop)
		<-h.done
		lost := h.Lost()
		h.cancel(errReleased)
		if errors.Is(lost, ErrLockLost) && h.lock.released() {
			h.relErr = lost
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		err := h.lock.Release(rctx)
		if lost != nil && err == nil {
			// Renewals failed long enough to stop the work, yet the lock was still ours: it is
			// given back now, and the caller still learns that its work was cut short.
			err = lost
		}
		h.relErr = err
	})
	return h.relErr
}

var errReleased = errors.New("lock released")
