package statestore

import (
	"context"
	"errors"
	"time"
)

// backend is the small set of object operations the store needs; both implementations give
// the same guarantees: create fails if the key exists, replace fails unless the object is still
// the version that was read. remove is unconditional: Scaleway documents conditional headers for
// PutObject, CopyObject and CompleteMultipartUpload only, so no correctness property of the store
// rests on a delete (a released lock or a deleted state is a tombstone written with If-Match, and
// remove is used only on keys nobody else writes: probes, artifacts, public objects).
type backend interface {
	// get returns the object and an opaque version token for replace/remove.
	get(ctx context.Context, key string) (data []byte, version string, err error)
	// head returns at most n bytes from the start of the object.
	head(ctx context.Context, key string, n int) ([]byte, error)
	// create writes key only if it does not exist (errPrecondition otherwise).
	create(ctx context.Context, key string, data []byte) (version string, err error)
	// replace writes key only if its current version is ifVersion (errPrecondition otherwise).
	replace(ctx context.Context, key string, data []byte, ifVersion string) (version string, err error)
	// write writes key unconditionally (artifacts, public objects).
	write(ctx context.Context, key string, data []byte) error
	// remove deletes key, unconditionally.
	remove(ctx context.Context, key string) error
	// list returns the keys under prefix.
	list(ctx context.Context, prefix string) ([]string, error)
	// signedURL returns a GET URL of key valid for ttl, signed locally (no request) with the
	// presigning credential when one is set, else with the main one; errNotExist if key is absent.
	signedURL(ctx context.Context, key string, ttl time.Duration) (string, error)
	location(key string) string
	describe() string // for messages: "s3://bucket" or "file:///dir"
	close() error
}

var (
	errNotExist     = errors.New("object does not exist")
	errPrecondition = errors.New("precondition failed")
	// errBusy: the server answered 409 to a conditional write (another conditional write of the
	// same key in flight); the write did not take effect and is retried.
	errBusy = errors.New("conflicting conditional write in flight (409)")
)
