package statestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Request is one request the store sent to its bucket, as WithRequestHook reports it: what a
// test counts to hold an operation to what it reads and locks (storetest.Counter).
type Request struct {
	Op   string // "get", "head", "create", "replace", "write", "remove" or "list"
	Key  string // the object's key (the prefix of a list)
	Data []byte // what a create, replace or write sent
	Err  error  // the request's answer
}

// WithRequestHook calls hook after every request the store sends to its bucket, with its answer.
// Requests run concurrently (a listing reads many headers at once): hook must be safe for that.
func WithRequestHook(hook func(Request)) Option {
	return func(o *options) { o.hook = hook }
}

// DocumentRead names the cluster whose state document the request read whole, or found missing
// (Get; a listing reads headers only, with head), when it did.
func (r Request) DocumentRead() (string, bool) {
	if r.Op != "get" || (r.Err != nil && !errors.Is(r.Err, errNotExist)) || !strings.HasPrefix(r.Key, prefixClusters) || !strings.HasSuffix(r.Key, suffixState) {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(r.Key, prefixClusters), suffixState), true
}

// LockWritten names the lock whose object the request wrote, and the holder it wrote there (a
// zero LockInfo for a release's tombstone), when it wrote one.
func (r Request) LockWritten() (LockKey, LockInfo, bool) {
	if (r.Op != "create" && r.Op != "replace") || r.Err != nil || !strings.HasPrefix(r.Key, prefixLocks) || !strings.HasSuffix(r.Key, ".lock") {
		return LockKey{}, LockInfo{}, false
	}
	name := strings.TrimSuffix(strings.TrimPrefix(r.Key, prefixLocks), ".lock")
	key := ClusterLock(name)
	if kind, rest, ok := strings.Cut(name, "/"); ok {
		key = LockKey{Kind: LockKind(kind), Name: rest}
	}
	var li LockInfo
	if json.Unmarshal(r.Data, &li) != nil {
		li = LockInfo{}
	}
	return key, li, true
}

// traced reports every request of be to hook.
type traced struct {
	backend
	hook func(Request)
}

func (t traced) get(ctx context.Context, key string) ([]byte, string, error) {
	data, v, err := t.backend.get(ctx, key)
	t.hook(Request{Op: "get", Key: key, Err: err})
	return data, v, err
}

func (t traced) head(ctx context.Context, key string, n int) ([]byte, error) {
	data, err := t.backend.head(ctx, key, n)
	t.hook(Request{Op: "head", Key: key, Err: err})
	return data, err
}

func (t traced) create(ctx context.Context, key string, data []byte) (string, error) {
	v, err := t.backend.create(ctx, key, data)
	t.hook(Request{Op: "create", Key: key, Data: data, Err: err})
	return v, err
}

func (t traced) replace(ctx context.Context, key string, data []byte, ifVersion string) (string, error) {
	v, err := t.backend.replace(ctx, key, data, ifVersion)
	t.hook(Request{Op: "replace", Key: key, Data: data, Err: err})
	return v, err
}

func (t traced) write(ctx context.Context, key string, data []byte) error {
	err := t.backend.write(ctx, key, data)
	t.hook(Request{Op: "write", Key: key, Data: data, Err: err})
	return err
}

func (t traced) remove(ctx context.Context, key string) error {
	err := t.backend.remove(ctx, key)
	t.hook(Request{Op: "remove", Key: key, Err: err})
	return err
}

func (t traced) list(ctx context.Context, prefix string) ([]string, error) {
	keys, err := t.backend.list(ctx, prefix)
	t.hook(Request{Op: "list", Key: prefix, Err: err})
	return keys, err
}

func (t traced) signedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	return t.backend.signedURL(ctx, key, ttl)
}

// writeStream and readStream pass a streaming backend's streams through (the etcd snapshot).
func (t traced) writeStream(ctx context.Context, key string, fill func(io.Writer) error) error {
	sb, ok := t.backend.(streamBackend)
	if !ok {
		return fmt.Errorf("the state backend %s cannot stream", t.describe())
	}
	err := sb.writeStream(ctx, key, fill)
	t.hook(Request{Op: "write", Key: key, Err: err})
	return err
}

func (t traced) readStream(ctx context.Context, key string) (io.ReadCloser, error) {
	sb, ok := t.backend.(streamBackend)
	if !ok {
		return nil, fmt.Errorf("the state backend %s cannot stream", t.describe())
	}
	rc, err := sb.readStream(ctx, key)
	t.hook(Request{Op: "get", Key: key, Err: err})
	return rc, err
}
