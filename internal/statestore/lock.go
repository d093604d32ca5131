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
		holder, hv, err := s.readLock(ctx, lk)
		if errors.Is(err, errNotExist) {
			continue // released meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: read the current lock: %w", lk, err)
		}
		if holder.ID == info.ID {
			// Our own create took effect and its answer was lost (a 500 after the fact, then the
			// client's retry failed on the object the first attempt wrote): the lock is ours.
			// Refusing it would leave it held, by nobody, for its whole lease.
			return &Lock{s: s, key: lk, lease: lease, info: *holder, version: hv}, nil
		}
		if now.Before(holder.Expires) {
			return nil, &LockedError{Cluster: lk.Name, Kind: lk.Kind, Holder: *holder, Now: now}
		}
		v, err = s.be.replace(ctx, key, data, hv)
		if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
			continue // someone else took it over (or released it) first
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: take over the expired lock: %w", lk, err)
		}
		s.log.Warn("took over an expired lock", "lock", lk.String(), "previous_id", holder.ID,
			"previous_actor", holder.Actor, "previous_run", holder.RunID, "previous_command", holder.Command,
			"expired", holder.Expires)
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

func (s *Store) readLock(ctx context.Context, lk LockKey) (*LockInfo, string, error) {
	data, v, err := s.be.get(ctx, lk.object())
	if err != nil {
		return nil, "", err
	}
	var li LockInfo
	if err := json.Unmarshal(data, &li); err != nil || li.ID == "" {
		// Treat it as held with no expiry known: a human must look (ForceUnlock with id "").
		return nil, "", fmt.Errorf("lock object %s is not a pocbot lock (%v); inspect it, then remove it", lk.object(), err)
	}
	return &li, v, nil
}

// ReadLock returns the current lock of cluster, or nil, nil when it is free.
func (s *Store) ReadLock(ctx context.Context, cluster string) (*LockInfo, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	li, _, err := s.readLock(ctx, ClusterLock(cluster))
	if errors.Is(err, errNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lock of cluster %q: %w", cluster, err)
	}
	return li, nil
}

// ForceUnlock removes the lock of cluster if its id is lockID (like tofu force-unlock).
func (s *Store) ForceUnlock(ctx context.Context, cluster, lockID string) error {
	if err := checkCluster(cluster); err != nil {
		return err
	}
	li, v, err := s.readLock(ctx, ClusterLock(cluster))
	if errors.Is(err, errNotExist) {
		return fmt.Errorf("unlock cluster %q: it is not locked (%w)", cluster, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("unlock cluster %q: %w", cluster, err)
	}
	if li.ID != lockID {
		return fmt.Errorf("unlock cluster %q: lock id %q does not match: the lock is %s held by %s (run %s, command %q) since %s",
			cluster, lockID, li.ID, orUnknown(li.Actor), orUnknown(li.RunID), li.Command, li.Since.UTC().Format(time.RFC3339))
	}
	if err := s.be.remove(ctx, ClusterLock(cluster).object(), v); err != nil {
		if errors.Is(err, errPrecondition) || errors.Is(err, errNotExist) {
			return fmt.Errorf("unlock cluster %q: %w: the lock changed while unlocking; read it again", cluster, ErrConflict)
		}
		return fmt.Errorf("unlock cluster %q: %w", cluster, err)
	}
	s.log.Warn("lock forcibly removed", "cluster", cluster, "id", li.ID, "actor", li.Actor, "run", li.RunID, "command", li.Command)
	return nil
}

// Info returns the lock's current holder record.
func (l *Lock) Info() LockInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Renew pushes the lease to now+lease. ErrLockLost if the lock was taken over or removed.
func (l *Lock) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
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

// Release removes the lock if it is still ours. ErrLockLost if it was not.
func (l *Lock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.version == "" {
		return nil // already released
	}
	err := l.s.be.remove(ctx, l.key.object(), l.version)
	if errors.Is(err, errPrecondition) {
		if cv, ok := l.stillOurs(ctx); ok {
			err = l.s.be.remove(ctx, l.key.object(), cv)
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
	cur, v, err := l.s.readLock(ctx, l.key)
	if err != nil || cur.ID != l.info.ID {
		return "", false
	}
	return v, true
}

func (l *Lock) lost(ctx context.Context, op string) error {
	l.version = ""
	cur, _, err := l.s.readLock(ctx, l.key)
	if err != nil || cur == nil {
		return fmt.Errorf("%s the lock of %s: %w: it was removed (forced unlock?)", op, l.key, ErrLockLost)
	}
	return fmt.Errorf("%s the lock of %s: %w: now held by %s (run %s, command %q) since %s",
		op, l.key, ErrLockLost, orUnknown(cur.Actor), orUnknown(cur.RunID), cur.Command, cur.Since.UTC().Format(time.RFC3339))
}

// released says whether this lock was given back or found lost (nothing left to release).
func (l *Lock) released() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version == ""
}
