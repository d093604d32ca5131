package chart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
)

type memCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCache) Get(_ context.Context, k string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	if b, ok := c.m[k]; ok {
		return b, nil
	}

	return nil, ErrNotCached
}

func (c *memCache) Put(_ context.Context, k string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = b

	return nil
}

// TestFetchPinnedByDigest: the archive comes from the cache when a copy there verifies, else
// from the URL, and only ever when its SHA-256 is the pinned one; a bad cached copy is replaced.
func TestFetchPinnedByDigest(t *testing.T) {
	t.Parallel()

	good := []byte("chart bytes")
	sum := sha256.Sum256(good)
	served := good

	var hits atomic.Int32

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write(served)
	}))
	defer srv.Close()

	src := Source{URL: srv.URL + "/c.tgz", SHA256: hex.EncodeToString(sum[:])}
	cache := &memCache{m: map[string][]byte{}}
	ctx := t.Context()

	if b, err := Fetch(ctx, srv.Client(), src, cache); err != nil || string(b) != string(good) || hits.Load() != 1 {
		t.Fatalf("first fetch = %q, %v (%d downloads)", b, err, hits.Load())
	}

	if b, err := Fetch(ctx, srv.Client(), src, cache); err != nil || string(b) != string(good) || hits.Load() != 1 {
		t.Fatalf("cached fetch = %q, %v (%d downloads, want the cache)", b, err, hits.Load())
	}

	cache.m[src.CacheKey()] = []byte("tampered")

	if b, err := Fetch(ctx, srv.Client(), src, cache); err != nil || string(b) != string(good) || string(cache.m[src.CacheKey()]) != string(good) {
		t.Fatalf("fetch over a tampered cache = %q, %v", b, err)
	}

	served = []byte("another chart")
	delete(cache.m, src.CacheKey())

	if _, err := Fetch(ctx, srv.Client(), src, cache); !errors.Is(err, ErrDigest) || cache.m[src.CacheKey()] != nil {
		t.Fatalf("fetch of other bytes = %v (cached %q), want ErrDigest and nothing cached", err, cache.m[src.CacheKey()])
	}
}

func TestParseSource(t *testing.T) {
	t.Parallel()

	const d = "36aa882be2a35ac69f708f6e62e1e1f975ff48c561ce079d35ad35718284af22"

	if s, err := ParseSource("https://helm.cilium.io/cilium-1.18.1.tgz@sha256:" + d); err != nil || s.URL != "https://helm.cilium.io/cilium-1.18.1.tgz" || s.SHA256 != d {
		t.Errorf("ParseSource = %+v, %v", s, err)
	}

	for _, bad := range []string{"https://x/c.tgz", "https://x/c.tgz@sha256:abc", "ftp://x/c.tgz@sha256:" + d, "https://x/c.tgz@sha256:" + d + "0"} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
		}
	}
}
