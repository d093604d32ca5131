package statestore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// fileBackend keeps objects as files under a directory, with the same conditional semantics
// as S3 across processes: a new object appears by link(2) of a complete temp file (fails if the
// name exists, and readers never see half a file); an update or conditional delete holds an
// exclusive flock on a per-object lock file while it compares and renames.
type fileBackend struct {
	root string
}

// fileWriteHook, when set (tests only), is called after part of a temp file is written; a test
// child process uses it to die mid-write.
var fileWriteHook func(written int)

const lockDir = ".flock"

func newFileBackend(u *url.URL) (*fileBackend, error) {
	root := fileURLPath(u)
	fi, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if v := u.Query().Get("create_dir"); v == "true" || v == "1" {
			if err := os.MkdirAll(root, 0o700); err != nil {
				return nil, fmt.Errorf("create state directory %s: %w", root, err)
			}
			break
		}
		return nil, fmt.Errorf("%w: state directory %s (from %s) does not exist: create it (mkdir -p %s) or add ?create_dir=true", ErrBucketMissing, root, EnvStateURL, root)
	case err != nil:
		return nil, mapFileErr(err, root)
	case !fi.IsDir():
		return nil, fmt.Errorf("state path %s (from %s) is not a directory", root, EnvStateURL)
	}
	return &fileBackend{root: root}, nil
}

func (b *fileBackend) path(key string) string { return filepath.Join(b.root, filepath.FromSlash(key)) }

func (b *fileBackend) get(ctx context.Context, key string) ([]byte, string, error) {
	data, err := os.ReadFile(b.path(key))
	if err != nil {
		return nil, "", mapFileErr(err, key)
	}
	return data, fileVersion(data), nil
}

// fileVersion is a content hash: every object the store writes carries fresh random bytes
// (nonce, data key, lock id), so equal hashes mean the same write.
func fileVersion(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:16])
}

func (b *fileBackend) head(ctx context.Context, key string, n int) ([]byte, error) {
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, mapFileErr(err, key)
	}
	defer f.Close()
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return buf[:m], nil
}

// temp writes data to a complete, synced temp file next to the target (same file system, so
// link and rename are atomic). Dot-names are skipped by list.
func (b *fileBackend) temp(key string, data []byte) (string, error) {
	dst := b.path(key)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return "", mapFileErr(err, key)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", mapFileErr(err, key)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	half := len(data) / 2
	if _, err := f.Write(data[:half]); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if fileWriteHook != nil {
		fileWriteHook(half)
	}
	if _, err := f.Write(data[half:]); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", tmp, err)
	}
	ok = true
	return tmp, nil
}

func (b *fileBackend) create(ctx context.Context, key string, data []byte) (string, error) {
	tmp, err := b.temp(key, data)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	// link(2) is the exclusive create: it fails with EEXIST when the name is taken, in every
	// process, and the object appears complete.
	if err := os.Link(tmp, b.path(key)); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", errPrecondition
		}
		return "", mapFileErr(err, key)
	}
	syncDir(filepath.Dir(b.path(key)))
	return fileVersion(data), nil
}

func (b *fileBackend) replace(ctx context.Context, key string, data []byte, ifVersion string) (string, error) {
	tmp, err := b.temp(key, data)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	unlock, err := b.flock(ctx, key)
	if err != nil {
		return "", err
	}
	defer unlock()
	cur, err := os.ReadFile(b.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", errPrecondition
	}
	if err != nil {
		return "", mapFileErr(err, key)
	}
	if fileVersion(cur) != ifVersion {
		return "", errPrecondition
	}
	if err := os.Rename(tmp, b.path(key)); err != nil {
		return "", mapFileErr(err, key)
	}
	syncDir(filepath.Dir(b.path(key)))
	return fileVersion(data), nil
}

func (b *fileBackend) write(ctx context.Context, key string, data []byte) error {
	tmp, err := b.temp(key, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Rename(tmp, b.path(key)); err != nil {
		return mapFileErr(err, key)
	}
	return nil
}

func (b *fileBackend) remove(ctx context.Context, key string) error {
	unlock, err := b.flock(ctx, key)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(b.path(key)); err != nil {
		return mapFileErr(err, key)
	}
	return nil
}

// flock takes an exclusive OS lock on the lock file of key. The lock files stay (removing a
// lock file that another process may be waiting on would let two processes hold "the" lock).
func (b *fileBackend) flock(ctx context.Context, key string) (func(), error) {
	dir := filepath.Join(b.root, lockDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, mapFileErr(err, key)
	}
	s := sha256.Sum256([]byte(key))
	f, err := os.OpenFile(filepath.Join(dir, hex.EncodeToString(s[:12])), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, mapFileErr(err, key)
	}
	// Non-blocking attempts so that ctx bounds the wait; holders keep it for a read and a rename.
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", key, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for file lock on %s: %w", key, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (b *fileBackend) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	start := b.root
	// Walk only the prefix's directory when it names one: listing clusters/ should not walk
	// every artifact.
	if d := path.Dir(prefix); strings.HasSuffix(prefix, "/") {
		start = filepath.Join(b.root, filepath.FromSlash(prefix))
	} else if d != "." {
		start = filepath.Join(b.root, filepath.FromSlash(d))
	}
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == start {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != start {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(b.root, p)
		if err != nil {
			return err
		}
		k := filepath.ToSlash(rel)
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, mapFileErr(err, prefix)
	}
	sort.Strings(keys)
	return keys, nil
}

func (b *fileBackend) signedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if _, err := os.Stat(b.path(key)); err != nil {
		return "", mapFileErr(err, key)
	}
	// A local directory has no signed URLs: hand out the path, which only this machine can read.
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.path(key))}).String(), nil
}

func (b *fileBackend) location(key string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.path(key))}).String()
}

func (b *fileBackend) describe() string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.root)}).String()
}

func (b *fileBackend) close() error { return nil }

func mapFileErr(err error, what string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", what, errNotExist)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w on %s: %v", ErrPermission, what, err)
	}
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
