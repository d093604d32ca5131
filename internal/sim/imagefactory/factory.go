package imagefactory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	yaml "go.yaml.in/yaml/v4"
)

// EmptySchematicID is the id of the schematic without customization.
const EmptySchematicID = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

// Artifact names served under /image/<id>/<version>/.
const (
	ScalewayQCOW2 = "scaleway-amd64.qcow2"
	MetalQCOW2    = "metal-amd64.qcow2"
	MetalRawZst   = "metal-amd64.raw.zst"
	MetalRawXZ    = "metal-amd64.raw.xz"
)

// Options sizes the generated images.
type Options struct {
	// QCOW2Size is the length of each .qcow2 artifact (default 16 MiB).
	QCOW2Size int64
	// RawSize is the decompressed length of metal-amd64.raw.zst and .raw.xz
	// (default 16 MiB).
	RawSize int64
	// Log receives one line per request; nil discards.
	Log *slog.Logger
	// OtherIDs names schematics by another canonical form than the bot's (register row
	// schematic-id, reading different: a newer factory): the id answered is the sha256 of the
	// canonical YAML with a trailing newline more.
	OtherIDs bool
}

// Factory is the stand-in. It is an http.Handler; Start also listens.
type Factory struct {
	opts     Options
	served   atomic.Int64
	requests atomic.Int64
	cutAfter atomic.Int64

	mu         sync.Mutex
	schematics map[string][]byte // id -> canonical YAML
	gets       map[string]int    // path -> full or partial GETs

	srv *http.Server
	ln  net.Listener
}

// New returns a Factory that knows only the empty schematic, like a fresh
// real factory knows only what was posted to it (plus the empty one).
func New(opts Options) *Factory {
	if opts.QCOW2Size <= 0 {
		opts.QCOW2Size = 16 << 20
	}
	if opts.RawSize <= 0 {
		opts.RawSize = 16 << 20
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	f := &Factory{opts: opts, schematics: map[string][]byte{}, gets: map[string]int{}}
	empty, id, _ := Canonical([]byte("{}"))
	f.schematics[id] = empty
	return f
}

// Start serves a new Factory on addr (use "127.0.0.1:0"). Close stops it.
func Start(ctx context.Context, addr string, opts Options) (*Factory, error) {
	f := New(opts)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("image factory stand-in: listen on %s: %w", addr, err)
	}
	f.ln = ln
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return f, nil
}

// URL is the base URL to put in POC_IMAGE_FACTORY_URL (no trailing slash).
func (f *Factory) URL() string {
	if f.ln == nil {
		return ""
	}
	return "http://" + f.ln.Addr().String()
}

// Close stops the server started by Start.
func (f *Factory) Close() error {
	if f.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return f.srv.Shutdown(ctx)
}

// BytesServed is the number of response body bytes written for images.
func (f *Factory) BytesServed() int64 { return f.served.Load() }

// ImageRequests is the number of GET requests for images (HEAD excluded).
func (f *Factory) ImageRequests() int64 { return f.requests.Load() }

// CutAfter makes every later image response break off after n body bytes
// (the client sees an unexpected EOF); n <= 0 turns it off. For tests of
// failed streams.
func (f *Factory) CutAfter(n int64) { f.cutAfter.Store(n) }

// Artifact returns the decompressed content of an artifact, for tests that
// compare what landed somewhere with what the factory meant to send.
func (f *Factory) Artifact(id, version, name string) (*io.SectionReader, error) {
	g, ok := f.generator(id, version, name)
	if !ok {
		return nil, fmt.Errorf("image factory stand-in: no artifact %s for schematic %s %s", name, id, version)
	}
	return io.NewSectionReader(g, 0, g.size), nil
}

func (f *Factory) generator(id, version, name string) (generator, bool) {
	switch name {
	case ScalewayQCOW2, MetalQCOW2:
		return newGenerator(id, version, name, f.opts.QCOW2Size, true), true
	case MetalRawZst, MetalRawXZ:
		// Both compressions of one raw image hold the same bytes, as the
		// factory builds both from one disk image: the seed names the
		// raw image, not its compression.
		return newGenerator(id, version, MetalRawZst, f.opts.RawSize, false), true
	}
	return generator{}, false
}

// Schematic is the subset of the factory's schematic model the bot uses,
// with the same field order and omitempty rules, so that marshalling it with
// a yaml.v3-compatible encoder yields the factory's canonical bytes.
type Schematic struct {
	Customization Customization `yaml:"customization" json:"customization"`
}

// Customization mirrors the factory's customization block.
type Customization struct {
	ExtraKernelArgs  []string         `yaml:"extraKernelArgs,omitempty" json:"extraKernelArgs,omitempty"`
	SystemExtensions SystemExtensions `yaml:"systemExtensions,omitempty" json:"systemExtensions,omitempty"`
}

// SystemExtensions mirrors the factory's systemExtensions block.
type SystemExtensions struct {
	OfficialExtensions []string `yaml:"officialExtensions,omitempty" json:"officialExtensions,omitempty"`
}

// Canonical parses a YAML or JSON schematic (unknown fields are refused, as
// the real factory does) and returns its canonical YAML and id.
func Canonical(body []byte) ([]byte, string, error) {
	var s Schematic
	dec := yaml.NewDecoder(strings.NewReader(string(body)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("invalid schematic: %w", err)
	}
	out, err := yaml.Marshal(&s)
	if err != nil {
		return nil, "", fmt.Errorf("marshal schematic: %w", err)
	}
	sum := sha256.Sum256(out)
	return out, hex.EncodeToString(sum[:]), nil
}

var (
	imagePath = regexp.MustCompile(`^/image/([0-9a-f]{64})/(v\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?)/([A-Za-z0-9._-]+)$`)
)

// ServeHTTP implements the factory's HTTP frontend subset.
func (f *Factory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.opts.Log.Debug("image factory request", "method", r.Method, "path", r.URL.Path, "range", r.Header.Get("Range"))
	switch {
	case r.URL.Path == "/schematics":
		f.postSchematic(w, r)
	case strings.HasPrefix(r.URL.Path, "/image/"):
		f.serveImage(w, r)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

func (f *Factory) postSchematic(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	canon, id, err := Canonical(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if f.opts.OtherIDs {
		sum := sha256.Sum256(append(append([]byte(nil), canon...), '\n'))
		id = hex.EncodeToString(sum[:])
	}
	f.mu.Lock()
	f.schematics[id] = canon
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": id})
}

func (f *Factory) serveImage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	m := imagePath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	id, version, name := m[1], m[2], m[3]
	f.mu.Lock()
	_, known := f.schematics[id]
	f.mu.Unlock()
	if !known {
		http.Error(w, "schematic ID "+id+" not found", http.StatusNotFound)
		return
	}
	g, ok := f.generator(id, version, name)
	if !ok {
		http.Error(w, "asset not found", http.StatusNotFound)
		return
	}
	var content io.ReaderAt = g
	size := g.size
	switch name {
	case MetalRawZst:
		z := zstdFrame{g: g}
		content, size = z, z.Size()
	case MetalRawXZ:
		z := newXZ(g)
		content, size = z, z.Size()
	}
	if r.Method == http.MethodGet {
		f.requests.Add(1)
		f.mu.Lock()
		f.gets[r.URL.Path]++
		f.mu.Unlock()
	}
	cw := &countingWriter{ResponseWriter: w, served: &f.served, cut: f.cutAfter.Load()}
	w.Header().Set("Content-Type", contentType(name))
	// A fixed modification time keeps ETag-less conditional requests sane.
	http.ServeContent(cw, r, name, time.Unix(0, 0), io.NewSectionReader(content, 0, size))
	if cw.cutHit {
		// Abort the connection so the client sees a truncated body rather
		// than a clean end of stream.
		panic(http.ErrAbortHandler)
	}
}

// contentType is the factory's type for an artifact name (image-factory
// internal/mime/mime.go; .zst is answered application/zstd, as its
// integration test download_test.go expects).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".xz":
		return "application/x-xz"
	case ".zst":
		return "application/zstd"
	case ".qcow2":
		return "application/x-qemu-disk"
	}
	return "application/octet-stream"
}

// GetCount returns how many GETs asked for path (e.g. /image/<id>/<ver>/<name>).
func (f *Factory) GetCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets[path]
}

type countingWriter struct {
	http.ResponseWriter
	served *atomic.Int64
	cut    int64
	n      int64
	cutHit bool
}

var errCut = errors.New("imagefactory: response cut on purpose")

// Write counts bytes before handing them to the connection, and takes back what the connection
// refused: a client that has read the whole body therefore finds every one of its bytes already
// counted (counting after the write returned let a fast client finish, and a test read the figure,
// before the last chunk was added).
func (c *countingWriter) Write(p []byte) (int, error) {
	cut := c.cut > 0 && c.n+int64(len(p)) > c.cut
	if cut {
		p = p[:c.cut-c.n]
		c.cutHit = true
	}
	c.served.Add(int64(len(p)))
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	c.served.Add(int64(n - len(p)))
	if cut {
		// Flush so the client has the headers and a part of the body, like
		// a connection lost mid-transfer.
		if fl, ok := c.ResponseWriter.(http.Flusher); ok {
			fl.Flush()
		}
		return n, errCut
	}
	return n, err
}
