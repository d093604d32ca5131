package statestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/secrets"
	_ "gocloud.dev/secrets/localsecrets" // base64key:// key URLs
	"golang.org/x/sync/errgroup"
)

const (
	prefixClusters  = "clusters/"
	suffixState     = ".state"
	prefixLocks     = "locks/"
	prefixArtifacts = "artifacts/"
	prefixPublic    = "public/"
	prefixProbe     = "probe/"
	listParallelism = 16 // bounded: a reaper listing thousands of clusters must not open thousands of connections
)

// Store is the state of every cluster in one bucket, protected by one key.
type Store struct {
	be     backend
	keeper *secrets.Keeper
	ownKey bool
	now    func() time.Time
	log    *slog.Logger

	mu   sync.Mutex
	seen map[string]int64 // highest serial read or written per cluster, by this process

	macMu  sync.Mutex
	macKey []byte // header MAC key, unwrapped once (see mac.go)

	linkClient *http.Client // fetches the first byte of every fresh signed link (link.go)
}

// Document is one cluster's state: a public header and an opaque, encrypted body.
type Document struct {
	Header Header
	Body   []byte

	version string // ETag (S3) or content hash (file) of what was read or last written
}

// Option configures Open.
type Option func(*options)

type options struct {
	bucket     *blob.Bucket
	presign    *blob.Bucket
	bucketName string
	keeper     *secrets.Keeper
	now        func() time.Time
	log        *slog.Logger
	linkClient *http.Client
	hook       func(Request)
}

// WithBucket uses an already opened S3 bucket (e.g. with explicit credentials) instead of
// opening Config.StateURL; the store does not close it. Config.StateURL, if set, only names it.
func WithBucket(b *blob.Bucket) Option { return func(o *options) { o.bucket = b } }

// WithPresignBucket signs SignedURL's links with another handle on the same bucket, opened with a
// credential that may only read public/ objects: a signed URL names its signer's access key id in
// X-Amz-Credential, and these links are posted in public places. The store never sends a request
// through it (signing is local) and does not close it.
func WithPresignBucket(b *blob.Bucket) Option { return func(o *options) { o.presign = b } }

// WithKeeper uses an already opened keeper instead of Config.KeyURL; the store does not close it.
func WithKeeper(k *secrets.Keeper) Option { return func(o *options) { o.keeper = k } }

// WithClock sets the clock used for lock leases and creation times.
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Open opens the bucket and the key named by cfg.
func Open(ctx context.Context, cfg Config, opts ...Option) (*Store, error) {
	o := options{now: time.Now, log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Store{now: o.now, log: o.log, seen: map[string]int64{}, linkClient: o.linkClient}
	if s.linkClient == nil {
		s.linkClient = &http.Client{Timeout: linkCheckTimeout}
	}
	var err error
	switch {
	case o.bucket != nil:
		name := ""
		if u, perr := url.Parse(cfg.StateURL); perr == nil && u.Scheme == "s3" {
			name = u.Host
		}
		s.be, err = newBlobBackend(o.bucket, name, false)
		if err == nil && o.presign != nil {
			s.be.(*blobBackend).signer = o.presign
		}
	default:
		if err := cfg.validateStateURL(); err != nil {
			return nil, err
		}
		u, _ := url.Parse(cfg.StateURL)
		switch u.Scheme {
		case "file":
			s.be, err = newFileBackend(u)
		case "s3":
			var b *blob.Bucket
			b, err = openS3URL(ctx, u)
			if err != nil {
				return nil, fmt.Errorf("open state bucket %s (%s): %w", "s3://"+u.Host, EnvStateURL, err)
			}
			s.be, err = newBlobBackend(b, u.Host, true)
			if err != nil {
				b.Close()
			} else if o.presign != nil {
				s.be.(*blobBackend).signer = o.presign
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if o.keeper != nil {
		s.keeper = o.keeper
	} else {
		if err := cfg.validateKeyURL(); err != nil {
			s.be.close()
			return nil, err
		}
		k, err := secrets.OpenKeeper(ctx, cfg.KeyURL)
		if err != nil {
			s.be.close()
			// gocloud's errors for key URLs never include the key itself.
			return nil, fmt.Errorf("open the key in %s: %w", EnvStateKey, err)
		}
		s.keeper, s.ownKey = k, true
	}
	if o.hook != nil {
		s.be = traced{backend: s.be, hook: o.hook}
	}
	return s, nil
}

// Close releases the bucket and keeper the store opened.
func (s *Store) Close() error {
	err := s.be.close()
	if s.ownKey {
		err = errors.Join(err, s.keeper.Close())
	}
	return err
}

// Location is where the state lives, for messages ("s3://bucket" or "file:///dir").
func (s *Store) Location() string { return s.be.describe() }

// CheckBackend verifies that the bucket is reachable and does what the store relies on, and no
// more: a conditional PutObject with If-None-Match: * fails on an existing key, one with a stale
// If-Match fails, and one with the current ETag succeeds; a failure is recognised by its status
// (412). Deletes are never relied on (Scaleway documents no conditional DeleteObject). A refusal
// wraps ErrUnsafeBackend and names the missing feature.
func (s *Store) CheckBackend(ctx context.Context) error {
	key := prefixProbe + randomID()
	v, err := s.ownWrite(ctx, key, []byte("probe "+key), func(data []byte) (string, error) { return s.be.create(ctx, key, data) })
	if err != nil {
		return fmt.Errorf("check state backend %s: write a probe object with If-None-Match: %w", s.be.describe(), err)
	}
	defer func() {
		// The probe's key is random and this call's alone: removing it cannot race.
		if err := s.be.remove(context.WithoutCancel(ctx), key); err != nil && !errors.Is(err, errNotExist) {
			s.log.Warn("remove state backend probe", "key", key, "err", err)
		}
	}()
	if _, err := s.be.create(ctx, key, []byte("second "+key)); !errors.Is(err, errPrecondition) {
		if err == nil {
			return fmt.Errorf("%w: %s accepted a second PutObject of %s despite If-None-Match: * (missing feature: conditional create); two runs could overwrite each other's state, so pocbot refuses this bucket", ErrUnsafeBackend, s.be.describe(), key)
		}
		return fmt.Errorf("check state backend %s: second PutObject with If-None-Match: * (want 412 Precondition Failed): %w", s.be.describe(), err)
	}
	if _, err := s.be.replace(ctx, key, []byte("stale "+key), "\"00000000000000000000000000000000\""); !errors.Is(err, errPrecondition) && !errors.Is(err, errNotExist) {
		if err == nil {
			return fmt.Errorf("%w: %s accepted a PutObject of %s with a stale If-Match (missing feature: conditional update); pocbot refuses this bucket", ErrUnsafeBackend, s.be.describe(), key)
		}
		return fmt.Errorf("check state backend %s: PutObject with a stale If-Match (want 412 Precondition Failed): %w", s.be.describe(), err)
	}
	if _, err := s.ownWrite(ctx, key, []byte("third "+key), func(data []byte) (string, error) { return s.be.replace(ctx, key, data, v) }); err != nil {
		if errors.Is(err, errPrecondition) {
			return fmt.Errorf("%w: %s refused a PutObject of %s with the current ETag in If-Match (missing feature: conditional update on the ETag it returned)", ErrUnsafeBackend, s.be.describe(), key)
		}
		return fmt.Errorf("check state backend %s: PutObject with the current ETag in If-Match: %w", s.be.describe(), err)
	}
	return nil
}

// ownWrite runs a conditional write of data to key whose key and bytes are this call's alone
// (the probe's random key). A precondition failure may be the write's own effect: it took
// effect, its answer was lost, and the client's retry failed on it. The object is read back and
// the write counts as done when it holds exactly data.
func (s *Store) ownWrite(ctx context.Context, key string, data []byte, write func([]byte) (string, error)) (string, error) {
	v, err := write(data)
	if !errors.Is(err, errPrecondition) {
		return v, err
	}
	got, gv, gerr := s.be.get(ctx, key)
	if gerr == nil && bytes.Equal(got, data) {
		return gv, nil
	}
	return "", err
}

var clusterRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62})$`)
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func checkCluster(cluster string) error {
	if !clusterRE.MatchString(cluster) || strings.Contains(cluster, "..") {
		return fmt.Errorf("cluster name %q: use 1-63 of a-z, 0-9, '.', '_', '-', starting with a letter or digit", cluster)
	}
	return nil
}

func stateKey(cluster string) string { return prefixClusters + cluster + suffixState }

// Get reads and decrypts the document of cluster.
func (s *Store) Get(ctx context.Context, cluster string) (*Document, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	data, version, err := s.be.get(ctx, stateKey(cluster))
	if err != nil {
		if errors.Is(err, errNotExist) {
			return nil, fmt.Errorf("state of cluster %q: %w in %s", cluster, ErrNotFound, s.be.describe())
		}
		return nil, fmt.Errorf("read state of cluster %q: %w", cluster, err)
	}
	if isStateTombstone(data) {
		return nil, fmt.Errorf("state of cluster %q: %w in %s (deleted)", cluster, ErrNotFound, s.be.describe())
	}
	h, body, err := s.open(ctx, data, objectState, cluster, "")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if last := s.seen[cluster]; h.Serial < last {
		return nil, fmt.Errorf("state of cluster %q: %w: the bucket returned serial %d after this process saw serial %d; refusing to work from an older state", cluster, ErrRollback, h.Serial, last)
	}
	s.seen[cluster] = h.Serial
	return &Document{Header: h.Header, Body: body, version: version}, nil
}

// open decodes and decrypts an object and checks it is the object it should be.
func (s *Store) open(ctx context.Context, data []byte, object, cluster, name string) (wireHeader, []byte, error) {
	what := fmt.Sprintf("state of cluster %q", cluster)
	if object == objectArtifact {
		what = fmt.Sprintf("artifact %q of cluster %q", name, cluster)
	}
	if object == objectShared {
		what = fmt.Sprintf("shared document %q", name)
	}
	env, err := decode(data)
	if err != nil {
		return wireHeader{}, nil, fmt.Errorf("decode %s: %w", what, err)
	}
	h := env.header
	if h.Object != object || h.Cluster != cluster || h.Name != name {
		return wireHeader{}, nil, fmt.Errorf("decode %s: %w: the object holds %s %q of cluster %q", what, ErrTampered, h.Object, h.Name, h.Cluster)
	}
	body, err := env.open(ctx, s.keeper)
	if errors.Is(err, ErrWrongKey) {
		return wireHeader{}, nil, fmt.Errorf("decrypt %s: %w: the key in %s is not the one that wrote it", what, ErrWrongKey, EnvStateKey)
	}
	if err != nil {
		return wireHeader{}, nil, fmt.Errorf("decrypt %s: %w", what, err)
	}
	return h, body, nil
}

// Put writes doc: a new document only if none exists, an existing one only if unchanged since
// it was read. On success doc.Header.Serial has grown by one (Format and Created are filled in).
// A concurrent write yields ErrConflict: Get again, reapply, Put again.
func (s *Store) Put(ctx context.Context, doc *Document) error {
	cluster := doc.Header.Cluster
	if err := checkCluster(cluster); err != nil {
		return err
	}
	h := doc.Header
	h.Labels = maps.Clone(doc.Header.Labels)
	h.Format = FormatVersion
	if h.Created.IsZero() {
		h.Created = s.now().UTC()
	}
	s.mu.Lock()
	last := s.seen[cluster]
	s.mu.Unlock()
	switch {
	case doc.version == "":
		// A new document continues the serials this process saw, so they never go back even
		// across a delete and re-create.
		h.Serial = max(h.Serial, last) + 1
	case h.Serial < last:
		return fmt.Errorf("write state of cluster %q: %w: this document is serial %d but serial %d was already seen; Get it again", cluster, ErrConflict, h.Serial, last)
	default:
		h.Serial++
	}
	mk, err := s.headerKey(ctx, true)
	if err != nil {
		return fmt.Errorf("write state of cluster %q: %w", cluster, err)
	}
	data, err := seal(ctx, s.keeper, mk, wireHeader{Object: objectState, Header: h}, doc.Body)
	if err != nil {
		return fmt.Errorf("encrypt state of cluster %q: %w", cluster, err)
	}
	// The sealed bytes are this write's alone (a fresh nonce): a write that took effect but lost
	// its answer, and whose retry then failed its precondition, is recognised as ours.
	version, err := s.ownWrite(ctx, stateKey(cluster), data, func(data []byte) (string, error) {
		if doc.version == "" {
			return s.createOverTombstone(ctx, stateKey(cluster), data)
		}
		return s.be.replace(ctx, stateKey(cluster), data, doc.version)
	})
	if errors.Is(err, errPrecondition) || (doc.version != "" && errors.Is(err, errNotExist)) {
		if doc.version == "" {
			return fmt.Errorf("create state of cluster %q: %w: a document already exists (another run created it); Get it and retry", cluster, ErrConflict)
		}
		return fmt.Errorf("write state of cluster %q: %w: another writer changed or removed it after serial %d was read; Get it and retry", cluster, ErrConflict, doc.Header.Serial)
	}
	if err != nil {
		return fmt.Errorf("write state of cluster %q: %w", cluster, err)
	}
	doc.Header, doc.version = h, version
	s.mu.Lock()
	s.seen[cluster] = max(s.seen[cluster], h.Serial)
	s.mu.Unlock()
	s.log.Debug("state written", "cluster", cluster, "serial", h.Serial, "phase", h.Phase, "bytes", len(data))
	return nil
}

// Delete removes doc's document, only if unchanged since doc was read or written: a tombstone
// written with If-Match on doc's version (Scaleway documents no conditional DeleteObject). Get
// and List then find no document; the next Put of a new document replaces the tombstone, again
// conditionally.
func (s *Store) Delete(ctx context.Context, doc *Document) error {
	cluster := doc.Header.Cluster
	if err := checkCluster(cluster); err != nil {
		return err
	}
	if doc.version == "" {
		return fmt.Errorf("delete state of cluster %q: the document was never read or written by this store; Get it first", cluster)
	}
	_, err := s.be.replace(ctx, stateKey(cluster), stateTombstone(doc.Header.Serial, s.now()), doc.version)
	switch {
	case errors.Is(err, errNotExist):
		return fmt.Errorf("delete state of cluster %q: %w", cluster, ErrNotFound)
	case errors.Is(err, errPrecondition):
		return fmt.Errorf("delete state of cluster %q: %w: another writer changed it after serial %d; Get it and retry", cluster, ErrConflict, doc.Header.Serial)
	case err != nil:
		return fmt.Errorf("delete state of cluster %q: %w", cluster, err)
	}
	doc.version = ""
	return nil
}

// List returns the authenticated headers of every document, sorted by cluster. It reads only the
// start of each object and checks its MAC, with no keeper call per object (one per process, to
// unwrap the MAC key). A header without a valid MAC (an object of format 1, or one written before
// the MAC key was replaced, or an edited one) is authenticated by decrypting its document instead;
// if that fails too the header is not returned: the error names it (a *ListError). Callers decide
// on the headers returned, never on what the error names.
func (s *Store) List(ctx context.Context) ([]Header, error) {
	mk, err := s.headerKey(ctx, false)
	if err != nil && !errors.Is(err, errNoMACKey) {
		return nil, fmt.Errorf("list states in %s: %w", s.be.describe(), err)
	}
	return s.list(ctx, func(ctx context.Context, key string, rh rawHeader) (Header, error) {
		if mk != nil && verifyHeader(mk, rh) {
			return rh.header.Header, nil
		}
		doc, err := s.Get(ctx, rh.header.Cluster)
		if err != nil {
			return Header{}, fmt.Errorf("%w: its header does not carry a valid MAC, and the document does not decrypt: %w", ErrTampered, err)
		}
		s.log.Warn("state header authenticated by decrypting its document (no valid MAC: an older format, or the MAC key was replaced)", "key", key)
		return doc.Header, nil
	})
}

// ListUnverified returns the headers as the bucket holds them, without the key and without
// authenticating them: for display only (`bot state ls` without POC_STATE_KEY). Anyone who can
// write to the bucket can change what it returns; decide nothing on it.
func (s *Store) ListUnverified(ctx context.Context) ([]Header, error) {
	return s.list(ctx, func(_ context.Context, _ string, rh rawHeader) (Header, error) { return rh.header.Header, nil })
}

// ListError names the state objects List could not read or authenticate.
type ListError struct {
	Bad []BadObject
}

// BadObject is one state object List left out, and why.
type BadObject struct {
	Key string // e.g. clusters/acme-shop-42.state
	Err error
}

func (e *ListError) Error() string {
	msgs := make([]string, len(e.Bad))
	for i, b := range e.Bad {
		msgs[i] = fmt.Sprintf("read header of %s: %v", b.Key, b.Err)
	}
	return strings.Join(msgs, "\n")
}

// Unwrap makes errors.Is(err, ErrTampered) (and the others) see through.
func (e *ListError) Unwrap() []error {
	out := make([]error, len(e.Bad))
	for i, b := range e.Bad {
		out[i] = b.Err
	}
	return out
}

func (s *Store) list(ctx context.Context, accept func(context.Context, string, rawHeader) (Header, error)) ([]Header, error) {
	keys, err := s.be.list(ctx, prefixClusters)
	if err != nil {
		return nil, fmt.Errorf("list states in %s: %w", s.be.describe(), err)
	}
	var (
		mu      sync.Mutex
		headers = make([]Header, 0, len(keys))
		bad     []BadObject
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(listParallelism)
	for _, k := range keys {
		if !strings.HasSuffix(k, suffixState) {
			continue
		}
		g.Go(func() error {
			rh, err := s.readHeader(gctx, k)
			var h Header
			if err == nil {
				h, err = accept(gctx, k, rh)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, errNotExist) || errors.Is(err, ErrNotFound): // deleted since the listing
			case err != nil:
				bad = append(bad, BadObject{Key: k, Err: err})
			default:
				headers = append(headers, h)
			}
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list states in %s: %w", s.be.describe(), err)
	}
	sort.Slice(headers, func(i, j int) bool { return headers[i].Cluster < headers[j].Cluster })
	if len(bad) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].Key < bad[j].Key })
		return headers, &ListError{Bad: bad}
	}
	return headers, nil
}

func (s *Store) readHeader(ctx context.Context, key string) (rawHeader, error) {
	data, err := s.be.head(ctx, key, headerProbe)
	if err != nil {
		return rawHeader{}, err
	}
	if isStateTombstone(data) {
		return rawHeader{}, fmt.Errorf("%s: deleted: %w", key, errNotExist)
	}
	rh, err := decodeHeader(data)
	if errors.Is(err, errShortHeader) {
		if data, err = s.be.head(ctx, key, rh.end); err == nil {
			rh, err = decodeHeader(data)
		}
	}
	if err != nil {
		return rawHeader{}, err
	}
	want := strings.TrimSuffix(strings.TrimPrefix(key, prefixClusters), suffixState)
	if rh.header.Object != objectState || rh.header.Cluster != want {
		return rawHeader{}, fmt.Errorf("%w: %s holds %s of cluster %q", ErrTampered, key, rh.header.Object, rh.header.Cluster)
	}
	return rh, nil
}

func artifactKey(cluster, name string) string { return prefixArtifacts + cluster + "/" + name }

// PutArtifact stores data encrypted as its own object (e.g. a kubeconfig) and returns where it
// is, for messages (not a URL anyone can fetch).
func (s *Store) PutArtifact(ctx context.Context, cluster, name string, data []byte) (string, error) {
	if err := checkCluster(cluster); err != nil {
		return "", err
	}
	if !nameRE.MatchString(name) {
		return "", fmt.Errorf("artifact name %q: use letters, digits, '.', '_', '-'", name)
	}
	h := wireHeader{Object: objectArtifact, Name: name, Header: Header{Format: FormatVersion, Cluster: cluster, Created: s.now().UTC()}}
	mk, err := s.headerKey(ctx, true)
	if err != nil {
		return "", fmt.Errorf("write artifact %q of cluster %q: %w", name, cluster, err)
	}
	obj, err := seal(ctx, s.keeper, mk, h, data)
	if err != nil {
		return "", fmt.Errorf("encrypt artifact %q of cluster %q: %w", name, cluster, err)
	}
	key := artifactKey(cluster, name)
	if err := s.be.write(ctx, key, obj); err != nil {
		return "", fmt.Errorf("write artifact %q of cluster %q: %w", name, cluster, err)
	}
	return s.be.location(key), nil
}

// GetArtifact reads and decrypts an artifact.
func (s *Store) GetArtifact(ctx context.Context, cluster, name string) ([]byte, error) {
	if err := checkCluster(cluster); err != nil {
		return nil, err
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("artifact name %q: use letters, digits, '.', '_', '-'", name)
	}
	data, _, err := s.be.get(ctx, artifactKey(cluster, name))
	if errors.Is(err, errNotExist) {
		return nil, fmt.Errorf("artifact %q of cluster %q: %w", name, cluster, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read artifact %q of cluster %q: %w", name, cluster, err)
	}
	_, body, err := s.open(ctx, data, objectArtifact, cluster, name)
	return body, err
}

// DeleteArtifact removes one artifact of a cluster; a missing one is not an error.
func (s *Store) DeleteArtifact(ctx context.Context, cluster, name string) error {
	if err := checkCluster(cluster); err != nil {
		return err
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("artifact name %q: use letters, digits, '.', '_', '-'", name)
	}
	k := prefixArtifacts + cluster + "/" + name
	if err := s.be.remove(ctx, k); err != nil && !errors.Is(err, errNotExist) {
		return fmt.Errorf("delete artifact %s: %w", k, err)
	}
	return nil
}

// DeleteArtifacts removes every artifact of cluster (none is not an error).
func (s *Store) DeleteArtifacts(ctx context.Context, cluster string) error {
	if err := checkCluster(cluster); err != nil {
		return err
	}
	keys, err := s.be.list(ctx, prefixArtifacts+cluster+"/")
	if err != nil {
		return fmt.Errorf("list artifacts of cluster %q: %w", cluster, err)
	}
	for _, k := range keys {
		if err := s.be.remove(ctx, k); err != nil && !errors.Is(err, errNotExist) {
			return fmt.Errorf("delete artifact %s of cluster %q: %w", k, cluster, err)
		}
	}
	return nil
}

func publicKey(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return "", fmt.Errorf("public object key %q: use a relative path without '..' or '//'", key)
	}
	for _, part := range strings.Split(key, "/") {
		if !nameRE.MatchString(part) {
			return "", fmt.Errorf("public object key %q: part %q: use letters, digits, '.', '_', '-'", key, part)
		}
	}
	return prefixPublic + key, nil
}

// PutPublic stores data as is under public/<key>: only for data that is safe to hand out
// (e.g. an age-encrypted kubeconfig for one user), typically through SignedURL.
func (s *Store) PutPublic(ctx context.Context, key string, data []byte) error {
	k, err := publicKey(key)
	if err != nil {
		return err
	}
	if err := s.be.write(ctx, k, data); err != nil {
		return fmt.Errorf("write public object %s: %w", k, err)
	}
	return nil
}

// DeletePublic removes every public object under prefix (a directory of keys given to PutPublic,
// e.g. the ciphertexts handed to one cluster's users).
func (s *Store) DeletePublic(ctx context.Context, prefix string) error {
	k, err := publicKey(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return err
	}
	keys, err := s.be.list(ctx, k+"/")
	if err != nil {
		return fmt.Errorf("list public objects under %s: %w", k, err)
	}
	for _, key := range keys {
		if err := s.be.remove(ctx, key); err != nil && !errors.Is(err, errNotExist) {
			return fmt.Errorf("delete public object %s: %w", key, err)
		}
	}
	return nil
}

// SignedURL returns a URL that lets anyone GET public/<key> (the key given to PutPublic) for
// ttl. With file:// there is no signing: it returns the file:// URL of the object, readable only
// on this machine. A signed URL is checked before it is returned — its first byte fetched through
// the link itself — since signing is local and a link the bucket refuses (a signing key without
// the IAM or bucket-policy grant) would otherwise be handed out as if it worked: such a link is a
// *DeadLinkError (ErrDeadLink) saying what to fix, and no URL.
func (s *Store) SignedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	k, err := publicKey(key)
	if err != nil {
		return "", err
	}
	if ttl <= 0 || ttl > 7*24*time.Hour {
		return "", fmt.Errorf("signed URL for %s: ttl %s must be between 0 and 7 days (the S3 maximum)", k, ttl)
	}
	u, err := s.be.signedURL(ctx, k, ttl)
	if errors.Is(err, errNotExist) {
		return "", fmt.Errorf("signed URL for %s: %w", k, ErrNotFound)
	}
	if err != nil {
		return "", err
	}
	if isHTTPURL(u) {
		if err := s.checkLink(ctx, k, u); err != nil {
			return "", err
		}
	}
	return u, nil
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// A deleted document is this tombstone (plaintext: that a cluster's state was deleted, and at
// which serial, is no secret). Its magic differs from a document's, so nothing reads it as one.
const tombstoneMagic = "PBGONE\x00\x00"

func stateTombstone(serial int64, at time.Time) []byte {
	return []byte(fmt.Sprintf("%sdeleted at serial %d, %s\n", tombstoneMagic, serial, at.UTC().Format(time.RFC3339)))
}

func isStateTombstone(data []byte) bool { return bytes.HasPrefix(data, []byte(tombstoneMagic)) }

// createOverTombstone writes a new object at key: a conditional create, or, when the key holds
// a tombstone, a conditional replace of that tombstone's version. Anything else there is
// errPrecondition, as for a plain create.
func (s *Store) createOverTombstone(ctx context.Context, key string, data []byte) (string, error) {
	v, err := s.be.create(ctx, key, data)
	if !errors.Is(err, errPrecondition) {
		return v, err
	}
	cur, cv, gerr := s.be.get(ctx, key)
	if gerr != nil || !isStateTombstone(cur) {
		return "", err
	}
	return s.be.replace(ctx, key, data, cv)
}
