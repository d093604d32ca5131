package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/version"
)

// QCOW2Magic starts every QCOW2 file.
const QCOW2Magic = "QFI\xfb"

// ManifestSuffix names the sidecar that records an object's size and sha256.
//
// Why a sidecar and not object metadata: metadata must be given when the
// upload starts, and the sha256 is only known once the last byte has gone
// through. The object is committed first, then its manifest; an object
// without a manifest (a crash in between) is not trusted and is fetched
// again.
const ManifestSuffix = ".manifest.json"

// Metadata keys set on the object itself (known before the upload).
const (
	MetaShared    = "pocbot-shared" // "true": never deleted by a cluster's teardown or sweep
	MetaSchematic = "schematic"
	MetaVersion   = "talos-version"
)

// Source names the factory artifact to store.
type Source struct {
	// SchematicYAML, when set, is posted to the factory first (idempotent)
	// so that the factory knows the schematic; the id it answers must equal
	// SchematicID.
	SchematicYAML []byte
	SchematicID   string
	Version       string
}

// Options tune EnsureObject. The zero value is usable.
type Options struct {
	// Force downloads again even when a complete object exists.
	Force bool
	// HTTPClient defaults to a client without overall timeout (the image is
	// large); ctx bounds the transfer.
	HTTPClient *http.Client
	Log        *slog.Logger
	// PartSize is the upload buffer (the S3 multipart part size); default
	// 5 MiB (the S3 minimum). With PartConcurrency (default 3) it bounds the memory in flight.
	PartSize        int
	PartConcurrency int
}

// Object is a stored image.
type Object struct {
	Key       string    `json:"key"`
	Size      int64     `json:"size"`
	SHA256    string    `json:"sha256"`
	Schematic string    `json:"schematic"`
	Version   string    `json:"version"`
	SourceURL string    `json:"source_url"`
	Stored    time.Time `json:"stored"`
}

// EnsureObject makes sure bucket holds the factory's scaleway qcow2 for src
// under key. When a complete object exists (object plus manifest of the same
// size) it is reused and nothing is downloaded (downloaded=false). Otherwise
// the image is streamed from the factory straight into the bucket writer (a
// multipart upload on S3) while its sha256 is computed: it is never held in
// memory nor written to local disk. The QCOW2 magic is checked before the
// upload starts, and a failed or short stream aborts the upload, so no
// partial object is ever committed. Concurrent callers for the same key may
// both download; they write identical bytes.
func EnsureObject(ctx context.Context, factoryBase string, bucket *blob.Bucket, key string, src Source, opts Options) (Object, bool, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if src.SchematicID == "" || src.Version == "" {
		return Object{}, false, errors.New("ensure image object: schematic id and Talos version are required")
	}
	if !opts.Force {
		obj, ok, err := Lookup(ctx, bucket, key)
		if err != nil {
			return Object{}, false, err
		}
		if ok {
			log.Info("reusing stored Talos image", "key", key, "size", obj.Size, "sha256", obj.SHA256)
			return obj, false, nil
		}
	}
	if len(src.SchematicYAML) > 0 {
		if err := postSchematic(ctx, hc, factoryBase, src); err != nil {
			return Object{}, false, err
		}
	}
	imageURL := ScalewayQCOW2URL(factoryBase, src.SchematicID, src.Version)
	obj, err := stream(ctx, hc, bucket, key, imageURL, src, opts, log)
	if err != nil {
		return Object{}, false, err
	}
	return obj, true, nil
}

// Lookup returns the object under key when it and its manifest agree.
func Lookup(ctx context.Context, bucket *blob.Bucket, key string) (Object, bool, error) {
	attrs, err := bucket.Attributes(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Object{}, false, nil
	}
	if err != nil {
		return Object{}, false, fmt.Errorf("look up image object %q: %w", key, err)
	}
	raw, err := bucket.ReadAll(ctx, key+ManifestSuffix)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return Object{}, false, nil // object without manifest: not trusted
	}
	if err != nil {
		return Object{}, false, fmt.Errorf("read image manifest %q: %w", key+ManifestSuffix, err)
	}
	var obj Object
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Size != attrs.Size || len(obj.SHA256) != 64 {
		// A manifest that does not describe this object is treated as
		// missing: the image is fetched again and the manifest rewritten.
		return Object{}, false, nil
	}
	obj.Key = key
	return obj, true, nil
}

// List returns every complete shared image object under prefix (e.g. "talos/").
func List(ctx context.Context, bucket *blob.Bucket, prefix string) ([]Object, error) {
	var out []Object
	it := bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		item, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("list image objects under %q: %w", prefix, err)
		}
		if item.IsDir || strings.HasSuffix(item.Key, ManifestSuffix) {
			continue
		}
		obj, ok, err := Lookup(ctx, bucket, item.Key)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, obj)
		}
	}
}

// Delete removes an image object and its manifest (manifest first, so that a
// half-done delete leaves an untrusted object, never a trusted missing one).
func Delete(ctx context.Context, bucket *blob.Bucket, key string) error {
	for _, k := range []string{key + ManifestSuffix, key} {
		if err := bucket.Delete(ctx, k); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("delete image object %q: %w", k, err)
		}
	}
	return nil
}

func postSchematic(ctx context.Context, hc *http.Client, base string, src Source) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	u := strings.TrimRight(base, "/") + "/schematics"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(src.SchematicYAML))
	if err != nil {
		return fmt.Errorf("post schematic to %s: %w", u, err)
	}
	req.Header.Set("User-Agent", version.UserAgent())
	req.Header.Set("Content-Type", "application/yaml")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("post schematic to image factory %s: %w (check %s)", u, err, FactoryURLEnv)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post schematic to image factory %s: HTTP %d: %s", u, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("post schematic to image factory %s: decode answer: %w", u, err)
	}
	if out.ID != src.SchematicID {
		return fmt.Errorf("image factory %s answered schematic id %s, expected %s: the local canonical form disagrees with the factory's; report this as a bug", u, out.ID, src.SchematicID)
	}
	return nil
}

// progressWriter hashes, counts and logs what goes through.
type progressWriter struct {
	n        int64
	total    int64
	last     time.Time
	log      *slog.Logger
	key      string
	hashDest io.Writer
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.hashDest.Write(b) // hash.Hash never fails
	p.n += int64(len(b))
	if now := time.Now(); now.Sub(p.last) >= 5*time.Second {
		p.last = now
		p.log.Info("streaming Talos image to object storage", "key", p.key, "bytes", p.n, "total", p.total)
	}
	return len(b), nil
}

func stream(ctx context.Context, hc *http.Client, bucket *blob.Bucket, key, imageURL string, src Source, opts Options, log *slog.Logger) (Object, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, imageURL, nil)
	if err != nil {
		return Object{}, fmt.Errorf("download %s: %w", imageURL, err)
	}
	req.Header.Set("User-Agent", version.UserAgent())
	resp, err := hc.Do(req)
	if err != nil {
		return Object{}, fmt.Errorf("download Talos image %s: %w", imageURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return Object{}, fmt.Errorf("download Talos image %s: HTTP %d: %s (is the schematic known to the factory and the version %s published?)", imageURL, resp.StatusCode, strings.TrimSpace(string(body)), src.Version)
	}
	var magic [4]byte
	if _, err := io.ReadFull(resp.Body, magic[:]); err != nil {
		return Object{}, fmt.Errorf("download Talos image %s: read the first bytes: %w", imageURL, err)
	}
	if string(magic[:]) != QCOW2Magic {
		return Object{}, fmt.Errorf("download Talos image %s: not a QCOW2 file (starts with %q, want %q); nothing was stored", imageURL, magic[:], QCOW2Magic)
	}

	// Invalidate the old manifest before replacing the object (Force): a
	// crash after this point leaves an untrusted object, refetched later.
	if err := bucket.Delete(ctx, key+ManifestSuffix); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return Object{}, fmt.Errorf("invalidate image manifest %q: %w", key+ManifestSuffix, err)
	}

	partSize := opts.PartSize
	if partSize <= 0 {
		partSize = 5 << 20
	}
	conc := opts.PartConcurrency
	if conc <= 0 {
		conc = 3
	}
	// Cancelling wctx before Close aborts the upload: no object is created.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := bucket.NewWriter(wctx, key, &blob.WriterOptions{
		ContentType:    "application/octet-stream",
		BufferSize:     partSize,
		MaxConcurrency: conc,
		Metadata: map[string]string{
			MetaShared:    "true",
			MetaSchematic: src.SchematicID,
			MetaVersion:   src.Version,
		},
	})
	if err != nil {
		return Object{}, fmt.Errorf("open upload of %q: %w", key, err)
	}
	h := sha256.New()
	pw := &progressWriter{total: resp.ContentLength, last: start, log: log, key: key, hashDest: h}
	dst := io.MultiWriter(w, pw)
	abort := func(err error) (Object, error) {
		cancel()
		_ = w.Close() // returns the cancellation; the upload is aborted
		return Object{}, err
	}
	if _, err := dst.Write(magic[:]); err != nil {
		return abort(fmt.Errorf("upload %q: %w", key, err))
	}
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(dst, resp.Body, buf); err != nil {
		return abort(fmt.Errorf("stream %s to object %q after %d bytes: %w; nothing was stored, run again", imageURL, key, pw.n, err))
	}
	if resp.ContentLength >= 0 && pw.n != resp.ContentLength {
		return abort(fmt.Errorf("stream %s to object %q: got %d bytes, the factory announced %d; nothing was stored, run again", imageURL, key, pw.n, resp.ContentLength))
	}
	if err := w.Close(); err != nil {
		return Object{}, fmt.Errorf("complete upload of %q: %w", key, err)
	}
	obj := Object{
		Key:       key,
		Size:      pw.n,
		SHA256:    hex.EncodeToString(h.Sum(nil)),
		Schematic: src.SchematicID,
		Version:   src.Version,
		SourceURL: imageURL,
		Stored:    time.Now().UTC().Truncate(time.Second),
	}
	man, _ := json.MarshalIndent(obj, "", "  ")
	if err := bucket.WriteAll(ctx, key+ManifestSuffix, man, &blob.WriterOptions{ContentType: "application/json", Metadata: map[string]string{MetaShared: "true"}}); err != nil {
		return Object{}, fmt.Errorf("write image manifest %q (the object is stored but will be fetched again next time): %w", key+ManifestSuffix, err)
	}
	el := time.Since(start)
	log.Info("stored Talos image", "key", key, "bytes", obj.Size, "sha256", obj.SHA256, "duration", el.Round(time.Millisecond),
		"MiB_per_s", fmt.Sprintf("%.1f", float64(obj.Size)/(1<<20)/max(el.Seconds(), 1e-9)))
	return obj, nil
}
