package statestore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	simclock "github.com/pocbot/pocbot/internal/sim/clock"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
	"gocloud.dev/secrets"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// world is one backend under test: how to open stores on it and how to reach its raw objects.
type world struct {
	name string
	cfg  func(key string) Config
	// env is what a child process needs to open the same bucket from Config alone.
	env  []string
	open func(t testing.TB, key string, opts ...Option) *Store
	raw  rawAccess
	srv  *objstore.Server // S3 only
	// dir is where the objects lie on disk (for S3: versitygw's posix directory), used to seed
	// many objects quickly; reads always go through the backend under test.
	dir string
}

type rawAccess interface {
	read(t testing.TB, key string) []byte
	write(t testing.TB, key string, data []byte)
}

func newKey(t testing.TB) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return "base64key://" + base64.URLEncoding.EncodeToString(k)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// inWorlds runs test in each world (file://, S3), each with a fresh bucket, a context with the
// tests' deadline, a fresh key and a store opened with it.
func inWorlds(t *testing.T, test func(t *testing.T, ctx context.Context, w *world, key string, s *Store)) {
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			key := newKey(t)
			test(t, testCtx(t), w, key, w.open(t, key))
		})
	}
}

// worlds returns a file:// world and an S3 (versitygw) world, each with a fresh bucket.
func worlds(t *testing.T) []*world {
	return []*world{fileWorld(t), s3World(t)}
}

func fileWorld(t testing.TB) *world {
	dir := t.TempDir()
	stateURL := (&url.URL{Scheme: "file", Path: dir}).String()
	w := &world{name: "file"}
	w.cfg = func(key string) Config { return Config{StateURL: stateURL, KeyURL: key} }
	w.open = func(t testing.TB, key string, opts ...Option) *Store {
		t.Helper()
		s, err := Open(testCtx(t), w.cfg(key), opts...)
		if err != nil {
			t.Fatalf("open %s: %v", stateURL, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	w.raw = fileRaw(dir)
	w.dir = dir
	return w
}

type fileRaw string

func (d fileRaw) read(t testing.TB, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(string(d), key))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (d fileRaw) write(t testing.TB, key string, data []byte) {
	t.Helper()
	p := filepath.Join(string(d), key)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func s3World(t testing.TB) *world { return s3WorldWith(t, objstore.Options{}) }

// s3WorldWith is an S3 world whose stand-in speaks the dialect given.
func s3WorldWith(t testing.TB, dialect objstore.Options) *world {
	srv := objstoretest.VersityWith(t, dialect)
	name := "state-" + randomID()[:12]
	objstoretest.Bucket(t, srv, name)
	b, err := srv.OpenBucket(testCtx(t), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w := &world{name: "s3", srv: srv}
	w.cfg = func(key string) Config { return Config{StateURL: srv.BucketURL(name), KeyURL: key} }
	w.env = []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
	w.open = func(t testing.TB, key string, opts ...Option) *Store {
		t.Helper()
		s, err := Open(testCtx(t), w.cfg(key), append([]Option{WithBucket(b)}, opts...)...)
		if err != nil {
			t.Fatalf("open s3 bucket %s: %v", name, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	w.raw = blobRaw{b}
	w.dir = filepath.Join(srv.Dir, name)
	return w
}

type blobRaw struct{ b *blob.Bucket }

func (r blobRaw) read(t testing.TB, key string) []byte {
	t.Helper()
	d, err := r.b.ReadAll(testCtx(t), key)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (r blobRaw) write(t testing.TB, key string, data []byte) {
	t.Helper()
	if err := r.b.WriteAll(testCtx(t), key, data, nil); err != nil {
		t.Fatal(err)
	}
}

// fakeClock is a settable clock for lease tests.
type fakeClock = simclock.Manual

type testContext = context.Context

// countingKeeper is a keeper that counts its uses: with no inner keeper it can do nothing
// (proof that ListUnverified reads no secrets), with one it passes the calls on.
type countingKeeper struct {
	mu    sync.Mutex
	n     int
	inner *secrets.Keeper
}

// openKeeper opens a keeper from a base64key:// URL.
func openKeeper(t testing.TB, url string) *secrets.Keeper {
	t.Helper()
	k, err := secrets.OpenKeeper(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

func (k *countingKeeper) keeper() *secrets.Keeper { return secrets.NewKeeper(k) }
func (k *countingKeeper) inc()                    { k.mu.Lock(); k.n++; k.mu.Unlock() }
func (k *countingKeeper) calls() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n
}
func (k *countingKeeper) Decrypt(ctx context.Context, b []byte) ([]byte, error) {
	k.inc()
	if k.inner != nil {
		return k.inner.Decrypt(ctx, b)
	}
	return nil, errors.New("countingKeeper cannot decrypt")
}
func (k *countingKeeper) Encrypt(ctx context.Context, b []byte) ([]byte, error) {
	k.inc()
	if k.inner != nil {
		return k.inner.Encrypt(ctx, b)
	}
	return nil, errors.New("countingKeeper cannot encrypt")
}
func (k *countingKeeper) Close() error                       { return nil }
func (k *countingKeeper) ErrorAs(err error, i any) bool      { return false }
func (k *countingKeeper) ErrorCode(error) gcerrors.ErrorCode { return gcerrors.Unknown }
