// Package objstoretest starts a versitygw S3 server for one test and stops it when the test ends.
package objstoretest

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/testenv"
)

// Versity starts a versitygw server serving a fresh temp dir, in Scaleway's dialect, and
// registers its cleanup. When the binary is missing it fails the test in CI (CI env set) and
// skips it elsewhere, naming the install command.
func Versity(t testing.TB) *objstore.Server {
	t.Helper()
	return VersityWith(t, objstore.Options{})
}

// VersityWith is Versity in the dialect opts chooses.
func VersityWith(t testing.TB, opts objstore.Options) *objstore.Server {
	t.Helper()
	Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // the start only: the server outlives it
	defer cancel()
	s, err := objstore.StartVersityWith(ctx, t.TempDir(), opts)
	if err != nil {
		if errors.Is(err, objstore.ErrNoVersity) {
			testenv.Unavailable(t, "versitygw", objstore.InstallHint, err)
		}
		t.Fatalf("start versitygw: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stop versitygw: %v", err)
		}
	})
	return s
}

// Require fails t in CI (CI env set) and skips it elsewhere, naming the install command, when the
// versitygw binary is missing.
func Require(t testing.TB) {
	t.Helper()
	if _, err := objstore.LookVersity(); err != nil {
		testenv.Unavailable(t, "versitygw", objstore.InstallHint, err)
	}
}

// Writes records the requests s receives other than reads (GET, HEAD), as "METHOD path"; the
// function it returns hands over those recorded since its last call.
func Writes(s *objstore.Server) func() []string {
	var mu sync.Mutex
	var writes []string
	s.Observe(func(method, path string, _ http.Header) {
		if method != http.MethodGet && method != http.MethodHead {
			mu.Lock()
			writes = append(writes, method+" "+path)
			mu.Unlock()
		}
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		w := writes
		writes = nil
		return w
	}
}

// Bucket starts (or reuses) s, creates a bucket with the given name and returns its name.
func Bucket(t testing.TB, s *objstore.Server, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.CreateBucket(ctx, name); err != nil {
		t.Fatalf("%v", err)
	}
	return name
}
