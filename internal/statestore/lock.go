package statestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// LockInfo says who holds a cluster's lock. It is stored in plaintext.
type LockInfo struct {
	ID      string    `json:"id"`
	RunID   string    `json:"run_id,omitempty"`
	Actor   string    `json:"actor,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
}

// tombstone is what a free lock object holds once it has been held: a release (or a forced
// unlock) is a conditional write of a tombstone over the holder's version, and the next taker
// replaces the tombstone with If-Match on its version. Lock objects are never deleted: Scaleway
// documents no conditional DeleteObject, and an unconditional delete could remove a lock taken
// in between.
type tombstone struct {
	Released   bool      `json:"released"`
	ReleasedID string    `json:"released_id,omitempty"` // the id of the lock it ended
	By         string    `json:"by,omitempty"`          // "release" or "force-unlock"
	At         time.Time `json:"at"`
}

// lockObject is a lock object as read: a holder, or a tombstone (free).
type lockObject struct {
	holder  *LockInfo  // nil when free
	tomb    *tombstone // non-nil when free
	version string
}

// Lock is a held cluster lock. Renew it before the lease ends; Release it when done.
type Lock struct {
	s     *Store
	key   LockKey
	lease time.Duration

	mu      sync.Mutex
	info    LockInfo
	version string
}

const maxLease = 24 * time.Hour

// Lock takes the lock of cluster for lease. info.ID is generated when empty; Since and Expires
// are set from the store's clock. A lock whose lease has expired is taken over (the previous
// holder is logged). A live lock yields a *LockedError naming its holder. A lock object that
// already carries info.ID is this caller's (its earlier attempt took effect) and is taken.
//
// Lock is the cluster lock without its renewals: work under a lock uses Hold, which owns them.
func (s *Store) Lock(ctx context.Context, cluster string, info LockInfo, lease time.Duration) (*Lock, error) {
	return s.lock(ctx, ClusterLock(cluster), info, lease)
}

func (s *Store) lock(ctx context.Context, lk LockKey, info LockInfo, lease time.Duration) (*Lock, error) {
	if err := lk.check(); err != nil {
		return nil, err
	}
	if lease <= 0 || lease > maxLease {
		return nil, fmt.Errorf("lock %s: lease %s must be between 0 and %s", lk, lease, maxLease)
	}
	if info.ID == "" {
		info.ID = randomID()
	}
	key := lk.object()
	// A few rounds: between our failed create and our read the holder may release, or another
	// taker may win the takeover; each round is one conditional write, so exactly one wins.
	for round := 0; round < 5; round++ {
		now := s.now().UTC()
		info.Since, info.Expires = now, now.Add(lease)
		data, err := json.Marshal(info)
		if err != nil {
			return nil, fmt.Errorf("lock %s: encode: %w", lk, err)
		}
		v, err := s.be.create(ctx, key, data)
		if err == nil {
			return &Lock{s: s, key: lk, lease: lease, info: info, version: v}, nil
		}
		if !errors.Is(err, errPrecondition) {
			return nil, fmt.Errorf("lock %s: %w", lk, err)
		}
		cur, err := s.readLock(ctx, lk)
		if errors.Is(err, errNotExist) {
			continue // removed meanwhile (by hand): create again
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: read the current lock: %w", lk, err)
		}
		holder := cur.holder
		switch {
		case holder != nil && holder.ID == info.ID:
			// Our own write took effect and its answer was lost (a 500 after the fact, then the
			// client's retry failed on the object the first attempt wrote): the lock is ours.
			// Refusing it would leave it held, by nobody, for its whole lease.
			return &Lock{s: s, key: lk, lease: lease, info: *holder, version: cur.version}, nil
		case holder != nil && now.Before(holder.Expires):
			return nil, &LockedError{Cluster: lk.Name, Kind: lk.Kind, Holder: *holder, Now: now}
		}
		// Free (a tombstone) or expired: one conditional write over the version read decides.
		v, err = s.be.replace(ctx, key, data, cur.version)
		if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
			if mine, _ := s.readLock(ctx, lk); mine.holder != nil && mine.holder.ID == info.ID {
				return &Lock{s: s, key: lk, lease: lease, info: *mine.holder, version: mine.version}, nil
			}
			continue // someone else took it first
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: take over the free or expired lock: %w", lk, err)
		}
		if holder != nil {
			s.log.Warn("took over an expired lock", "lock", lk.String(), "previous_id", holder.ID,
				"previous_actor", holder.Actor, "previous_run", holder.RunID, "previous_command", holder.Command,
				"expired", holder.Expires)
		}
		return &Lock{s: s, key: lk, lease: lease, info: info, version: v}, nil
	}
	return nil, fmt.Errorf("lock %s: %w: the lock kept changing hands; try again", lk, ErrConflict)
}

// WaitLock is Lock that retries while the lock is busy, for up to wait. On timeout it returns
// the last *LockedError.
func (s *Store) WaitLock(ctx context.Context, cluster string, info LockInfo, lease, wait time.Duration) (*Lock, error) {
	return s.waitLock(ctx, ClusterLock(cluster), info, lease, wait)
}

func (s *Store) waitLock(ctx context.Context, lk LockKey, info LockInfo, lease, wait time.Duration) (*Lock, error) {
	deadline := time.Now().Add(wait)
	delay := 100 * time.Millisecond
	for {
		l, err := s.lock(ctx, lk, info, lease)
		if err == nil || !errors.Is(err, ErrLocked) || time.Now().Add(delay).After(deadline) {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("wait for the lock of %s: %w (last: %v)", lk, ctx.Err(), err)
		case <-t.C:
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// readLock reads a lock object: its holder, or its tombstone. errNotExist when there is none.
func (s *Store) readLock(ctx context.Context, lk LockKey) (lockObject, error) {
	data, v, err := s.be.get(ctx, lk.object())
	if err != nil {
		return lockObject{}, err
	}
	var t tombstone
	if json.Unmarshal(data, &t) == nil && t.Released {
		return lockObject{tomb: &t, version: v}, nil
	}
	var li LockInfo
	if err := json.Unmarshal(data, &li); err != nil || li.ID == "" {
		// Treat it as held with no expiry known: a human must look.
		return lockObject{}, fmt.Errorf("lock object %s is not a pocbot lock (%v); inspect it, then remove it", lk.object(), err)
	}
	return lockObject{holder: &li, version: v}, nil
}

// ReadLock returns the current lock of cluster, or nil, nil when it is free.
func (s *Store) ReadLock(ctx context.Context, cluster string) (*LockInfo, error) {
	return s.ReadLockKey(ctx, ClusterLock(cluster))
}

// ReadLockKey returns the current holder of the lock key, or nil, nil when it is free.
func (s *Store) ReadLockKey(ctx context.Context, key LockKey) (*LockInfo, error) {
	if err := key.check(); err != nil {
		return nil, err
	}
	cur, err := s.readLock(ctx, key)
	if errors.Is(err, errNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the lock of %s: %w", key, err)
	}
	return cur.holder, nil
}

func (s *Store) tombstoneFor(id, by string) []byte {
	data, _ := json.Marshal(tombstone{Released: true, ReleasedID: id, By: by, At: s.now().UTC()})
	return data
}

// ForceUnlock frees the lock of cluster if its id is lockID (like tofu force-unlock): a tombstone
// written over the version read, so a lock that changed hands meanwhile is left alone.
func (s *Store) ForceUnlock(ctx context.Context, cluster, lockID string) error {
	return s.ForceUnlockKey(ctx, ClusterLock(cluster), lockID)
}

// ForceUnlockKey is ForceUnlock for a lock of any kind.
func (s *Store) ForceUnlockKey(ctx context.Context, lk LockKey, lockID string) error {
	if err := lk.check(); err != nil {
		return err
	}
	cur, err := s.readLock(ctx, lk)
	if errors.Is(err, errNotExist) || (err == nil && cur.holder == nil) {
		return fmt.Errorf("unlock %s: it is not locked (%w)", lk, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("unlock %s: %w", lk, err)
	}
	li := cur.holder
	if li.ID != lockID {
		return fmt.Errorf("unlock %s: lock id %q does not match: the lock is %s held by %s (run %s, command %q) since %s",
			lk, lockID, li.ID, orUnknown(li.Actor), orUnknown(li.RunID), li.Command, li.Since.UTC().Format(time.RFC3339))
	}
	if _, err := s.be.replace(ctx, lk.object(), s.tombstoneFor(li.ID, "force-unlock"), cur.version); err != nil {
		if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
			return fmt.Errorf("unlock %s: %w: the lock changed while unlocking; read it again", lk, ErrConflict)
		}
		return fmt.Errorf("unlock %s: %w", lk, err)
	}
	s.log.Warn("lock forcibly released", "lock", lk.String(), "id", li.ID, "actor", li.Actor, "run", li.RunID, "command", li.Command)
	return nil
}

// Info returns the lock's current holder record.
func (l *Lock) Info() LockInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Renew pushes the lease to now+lease. ErrLockLost if the lock was taken over or released.
func (l *Lock) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" {
		return fmt.Errorf("renew the lock of %s: %w: it was already released or lost", l.key, ErrLockLost)
	}
	info := l.info
	info.Expires = l.s.now().UTC().Add(l.lease)
	data, err := json.Marshal(info)
	if err != nil {
		return fmt.Errorf("renew the lock of %s: %w", l.key, err)
	}
	v, err := l.s.be.replace(ctx, l.key.object(), data, l.version)
	if errors.Is(err, errPrecondition) {
		if cv, ok := l.stillOurs(ctx); ok {
			v, err = l.s.be.replace(ctx, l.key.object(), data, cv)
		}
	}
	if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
		return l.lost(ctx, "renew")
	}
	if err != nil {
		return fmt.Errorf("renew the lock of %s: %w", l.key, err)
	}
	l.info, l.version = info, v
	return nil
}

// Release frees the lock if it is still ours: a tombstone written with If-Match on our version.
// ErrLockLost if it was not ours any more.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" {
		return nil // already released
	}
	tomb := l.s.tombstoneFor(l.info.ID, "release")
	_, err := l.s.be.replace(ctx, l.key.object(), tomb, l.version)
	if errors.Is(err, errPrecondition) {
		if cv, ok := l.stillOurs(ctx); ok {
			_, err = l.s.be.replace(ctx, l.key.object(), tomb, cv)
		} else if cur, rerr := l.s.readLock(ctx, l.key); rerr == nil && cur.tomb != nil && cur.tomb.ReleasedID == l.info.ID && cur.tomb.By == "release" {
			err = nil // our release took effect and its answer was lost
		}
	}
	if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
		return l.lost(ctx, "release")
	}
	if err != nil {
		return fmt.Errorf("release the lock of %s: %w", l.key, err)
	}
	l.version = ""
	return nil
}

// stillOurs returns the current version of the lock object when it still carries this lock's
// id. A conditional write of ours that failed on the version may have lost only to ourselves: an
// earlier renew took effect but its answer (or the read back of its version) was lost. Nobody
// else writes our id (a takeover writes the taker's), so that object is still our lock. l.mu is
// held.
func (l *Lock) stillOurs(ctx context.Context) (string, bool) {
	cur, err := l.s.readLock(ctx, l.key)
	if err != nil || cur.holder == nil || cur.holder.ID != l.info.ID {
		return "", false
	}
	return cur.version, true
}

func (l *Lock) lost(ctx context.Context, op string) error {
	l.version = ""
	cur, err := l.s.readLock(ctx, l.key)
	if err != nil || cur.holder == nil {
		return fmt.Errorf("%s the lock of %s: %w: it was released by someone else or removed (forced unlock?)", op, l.key, ErrLockLost)
	}
	h := cur.holder
	return fmt.Errorf("%s the lock of %s: %w: now held by %s (run %s, command %q) since %s",
		op, l.key, ErrLockLost, orUnknown(h.Actor), orUnknown(h.RunID), h.Command, h.Since.UTC().Format(time.RFC3339))
}

// released says whether this lock was given back or found lost (nothing left to release).
func (l *Lock) released() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version == ""
}
