package chart

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// Source is a chart archive pinned by digest: where to fetch it and the SHA-256 it must have.
type Source struct {
	URL    string
	SHA256 string // hex
}

var sourceRE = regexp.MustCompile(`^(https?://[^@\s]+)@sha256:([0-9a-f]{64})$`)

// ParseSource reads "https://host/chart-1.2.3.tgz@sha256:<64 hex>".
func ParseSource(s string) (Source, error) {
	m := sourceRE.FindStringSubmatch(s)
	if m == nil {
		return Source{}, fmt.Errorf("chart %q: want https://…/chart.tgz@sha256:<64 lowercase hex>", s)
	}

	return Source{URL: m[1], SHA256: m[2]}, nil
}

func (s Source) String() string { return s.URL + "@sha256:" + s.SHA256 }

// Cache keeps fetched archives by digest (the image bucket); Get answers ErrNotCached for a
// digest it does not hold.
type Cache interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, key string, b []byte) error
}

// ErrNotCached is a Cache's answer for a key it does not hold.
var ErrNotCached = errors.New("not cached")

// ErrDigest is an archive whose SHA-256 is not the pinned one.
var ErrDigest = errors.New("chart archive does not match its pinned digest")

// CacheKey is where a source's archive is cached.
func (s Source) CacheKey() string { return "charts/sha256/" + s.SHA256 + ".tgz" }

// Fetch returns the source's archive, checked against its digest: from cache when it holds a
// copy that verifies, else from the URL (and then into cache). Nothing is ever returned, or
// cached, that does not match the pin. cache may be nil.
func Fetch(ctx context.Context, client *http.Client, src Source, cache Cache) ([]byte, error) {
	if cache != nil {
		b, err := cache.Get(ctx, src.CacheKey())

		switch {
		case err == nil && verify(b, src) == nil:
			return b, nil
		case err != nil && !errors.Is(err, ErrNotCached):
			return nil, fmt.Errorf("read the cached chart %s: %w", src.CacheKey(), err)
		}
		// A cached copy that does not verify is fetched again and replaced.
	}

	b, err := download(ctx, client, src.URL)
	if err != nil {
		return nil, err
	}

	if err := verify(b, src); err != nil {
		return nil, err
	}

	if cache != nil {
		if err := cache.Put(ctx, src.CacheKey(), b); err != nil {
			return nil, fmt.Errorf("cache the chart as %s: %w", src.CacheKey(), err)
		}
	}

	return b, nil
}

func verify(b []byte, src Source) error {
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != src.SHA256 {
		return fmt.Errorf("%w: %s has sha256 %s, pinned %s; check the pin (settings: cilium-chart)", ErrDigest, src.URL, got, src.SHA256)
	}

	return nil
}

func download(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch chart %s: %w", url, err)
	}

	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch chart %s: %w", url, err)
	}
	defer resp.Body.Close() //nolint:errcheck

	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))

		return nil, fmt.Errorf("fetch chart %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}

	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxArchive+1))
	if err != nil {
		return nil, fmt.Errorf("fetch chart %s: %w", url, err)
	}

	if len(b) > MaxArchive {
		return nil, fmt.Errorf("fetch chart %s: over %d bytes", url, MaxArchive)
	}

	return b, nil
}
