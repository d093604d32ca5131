package statestore

import (
	"errors"
	"fmt"
	"time"
)

// Errors to test with errors.Is.
var (
	// ErrNotFound: no such document, artifact or lock.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the object changed since it was read (another writer won), or the document
	// given is older than one this process already saw.
	ErrConflict = errors.New("conflict: the state changed since it was read")
	// ErrLocked: the cluster's lock is held by someone else; see *LockedError for who.
	ErrLocked = errors.New("locked")
	// ErrWrongKey: the key in POC_STATE_KEY is not the one that wrote the object.
	ErrWrongKey = errors.New("wrong state key")
	// ErrTampered: the object is damaged or was altered (or moved between clusters).
	ErrTampered = errors.New("state object tampered or corrupted")
	// ErrRollback: the bucket served a document older than one this process already saw.
	ErrRollback = errors.New("state went back to an older serial")
	// ErrUnsafeBackend: the bucket does not honour conditional writes.
	ErrUnsafeBackend = errors.New("backend does not honour conditional writes")
	// ErrBucketMissing: the bucket (or file:// directory) does not exist.
	ErrBucketMissing = errors.New("bucket does not exist")
	// ErrPermission: the credentials may not do this on the bucket.
	ErrPermission = errors.New("permission denied")
	// ErrLockLost: a renew or release found the lock taken over or removed.
	ErrLockLost = errors.New("lock lost")
)

// LockedError says who holds a cluster's lock.
type LockedError struct {
	Cluster string   // the lock's name: the cluster's for a LockCluster
	Kind    LockKind // LockCluster unless another kind of lock is busy
	Holder  LockInfo
	Now     time.Time
}

func (e *LockedError) Error() string {
	h := e.Holder
	if e.Kind != "" && e.Kind != LockCluster {
		return fmt.Sprintf("%s is held by %s (run %s, command %q) since %s, lease until %s (lock id %s); "+
			"wait for it to finish: a dead run's lock lapses with its lease",
			LockKey{Kind: e.Kind, Name: e.Cluster}, orUnknown(h.Actor), orUnknown(h.RunID), h.Command,
			h.Since.UTC().Format(time.RFC3339), h.Expires.UTC().Format(time.RFC3339), h.ID)
	}
	return fmt.Sprintf("cluster %q is locked by %s (run %s, command %q) since %s, lease until %s (lock id %s); "+
		"wait for it to finish, or if that run is dead: bot state unlock --cluster %s --lock-id %s",
		e.Cluster, orUnknown(h.Actor), orUnknown(h.RunID), h.Command,
		h.Since.UTC().Format(time.RFC3339), h.Expires.UTC().Format(time.RFC3339), h.ID, e.Cluster, h.ID)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}
