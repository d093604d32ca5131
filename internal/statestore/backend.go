package statestore

import (
	"context"
	"errors"
	"time"
)

// backend is the small set of object operations the store needs; both implementations give
// the same guarantees: create fails if the key exists, replace and delete fail unless the object
// is still the version that was read.
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
	// remove deletes key; with ifVersion != "" only if it is still that version.
	remove(ctx context.Context, key, ifVersion string) error
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
)
