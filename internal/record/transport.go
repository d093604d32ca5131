package record

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// Service names the API a transport talks to; it decides how bodies are kept (Object Storage's
// object bodies are never kept, redact.go).
type Service string

// The recorded services.
const (
	Scaleway      Service = "scaleway"
	ObjectStorage Service = "s3"
	GitHub        Service = "github"
)

// Setting is the settings-table row that names the directory (POC_RECORD_DIR, `--record`).
const Setting = "record"

// Dir is the recording directory getenv names, "" when recording is off.
func Dir(getenv func(string) string) string {
	return strings.TrimSpace(getenv(settings.Lookup(Setting).Env))
}

// Wrap returns rt recording every exchange with service into the directory getenv names, or rt
// itself when it names none. Every Wrap of a process on one directory writes into one cassette;
// getenv's secrets (secretEnv) are added to what that cassette's redactor removes literally.
func Wrap(getenv func(string) string, service Service, rt http.RoundTripper) (http.RoundTripper, error) {
	dir := Dir(getenv)
	if dir == "" {
		return rt, nil
	}
	if rt == nil {
		rt = http.DefaultTransport
	}
	rec, err := recorderFor(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range secretEnv() {
		rec.red.Learn(getenv(name))
	}
	return &transport{next: rt, rec: rec, service: service}, nil
}

// secretEnv lists the variables whose values are removed wherever they appear: the settings
// table's secrets, the access keys that sign (their ids are in every signature's scope), and the
// tokens a workflow or a laptop carries.
func secretEnv() []string {
	out := []string{"SCW_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "POC_PRESIGN_ACCESS_KEY",
		"GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_TOKEN"}
	for _, s := range settings.Table {
		if s.Secret && s.Env != "" {
			out = append(out, s.Env)
		}
	}
	return out
}

// recorder is one process's recording in one directory: a cassette per service, named
// <command>-<start time>-<pid>.<service>.cassette.yaml, whose interaction ids count the process's
// requests across the services (so a replay can put the services' exchanges back in order).
type recorder struct {
	prefix string
	red    *Redactor
	nextID atomic.Int64
	warn   sync.Once

	mu    sync.Mutex
	files map[Service]*cassetteFile
}

var (
	recordersMu sync.Mutex
	recorders   = map[string]*recorder{}
)

// recorderFor is the process's recorder on dir, made (and dir with it) on first use.
func recorderFor(dir string) (*recorder, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("record: %s=%q: %w", settings.Lookup(Setting).Env, dir, err)
	}
	recordersMu.Lock()
	defer recordersMu.Unlock()
	if r := recorders[abs]; r != nil {
		return r, nil
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("record: make the recording directory %s: %w", abs, err)
	}
	name := fmt.Sprintf("%s-%s-%d", commandName(os.Args), time.Now().UTC().Format("20060102T150405.000Z"), os.Getpid())
	r := &recorder{prefix: filepath.Join(abs, name), red: NewRedactor(), files: map[Service]*cassetteFile{}}
	recorders[abs] = r
	return r, nil
}

var commandRe = regexp.MustCompile(`^[a-z][a-z-]{0,30}$`)

// commandName is the bot's subcommand (os.Args[1]) when it looks like one, for the file's name.
func commandName(args []string) string {
	if len(args) > 1 && commandRe.MatchString(args[1]) {
		return args[1]
	}
	return "bot"
}

// write redacts it and appends it; a failed write is reported once on the default logger and the
// run goes on (a recording is a diagnosis, not part of the run).
func (r *recorder) write(it *Interaction, service Service) {
	r.red.Interaction(it, service)
	r.mu.Lock()
	f := r.files[service]
	if f == nil {
		f = &cassetteFile{path: r.prefix + "." + string(service) + ".cassette.yaml"}
		r.files[service] = f
	}
	r.mu.Unlock()
	if err := f.appendItem(it); err != nil {
		r.warn.Do(func() { slog.Default().Warn("recording stopped: the run goes on unrecorded", "err", err) })
	}
}

// transport records each exchange once its answer's body is read to the end or closed; an
// exchange that got no answer is recorded with code 0 when it fails.
type transport struct {
	next    http.RoundTripper
	rec     *recorder
	service Service
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	id := int(t.rec.nextID.Add(1) - 1)
	start := time.Now()
	sent := req
	var reqBody *capture
	if req.Body != nil && req.Body != http.NoBody {
		reqBody = &capture{}
		sent = req.Clone(req.Context())
		sent.Body = &teeBody{rc: req.Body, c: reqBody}
		if req.GetBody != nil {
			// The transport asks for the body again to resend it on a fresh connection.
			sent.GetBody = func() (io.ReadCloser, error) {
				b, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				reqBody.reset()
				return &teeBody{rc: b, c: reqBody}, nil
			}
		}
	}
	resp, err := t.next.RoundTrip(sent)
	it := &Interaction{ID: id}
	finish := func(respBody *capture) {
		it.Request = requestOf(req, reqBody)
		if respBody != nil {
			it.Response.Body = respBody.text()
		}
		it.Response.Duration = time.Since(start)
		t.rec.write(it, t.service)
	}
	if err != nil {
		it.Response = Response{Status: "error: " + err.Error()}
		finish(nil)
		return resp, err
	}
	it.Response = Response{Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
		TransferEncoding: resp.TransferEncoding, ContentLength: resp.ContentLength, Uncompressed: resp.Uncompressed,
		Headers: resp.Header.Clone(), Status: resp.Status, Code: resp.StatusCode}
	if resp.Body == nil || resp.Body == http.NoBody {
		finish(nil)
		return resp, nil
	}
	c := &capture{}
	resp.Body = &teeBody{rc: resp.Body, c: c, done: func() { finish(c) }}
	return resp, nil
}

// requestOf is req as recorded, with the body the transport sent.
func requestOf(req *http.Request, body *capture) Request {
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	r := Request{Proto: req.Proto, ProtoMajor: req.ProtoMajor, ProtoMinor: req.ProtoMinor, ContentLength: req.ContentLength,
		TransferEncoding: req.TransferEncoding, Host: host, Headers: req.Header.Clone(), Method: req.Method}
	if req.URL != nil {
		r.URL = req.URL.String()
	}
	if r.Proto == "" { // client requests leave it to the transport
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	}
	if body != nil {
		r.Body = body.text()
	}
	return r
}

// maxKept is the largest body kept as text; past it a body is summarised (size and kind).
const maxKept = 1 << 20

// capture keeps the first maxKept bytes that pass through it and counts them all.
type capture struct {
	mu  sync.Mutex
	buf []byte
	n   int64
}

func (c *capture) add(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += int64(len(p))
	if room := maxKept + 1 - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
}

func (c *capture) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf, c.n = nil, 0
}

// text is the body as recorded: whole when it fits, else a summary the redactor recognises.
func (c *capture) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n > maxKept {
		return elided(c.buf, c.n, "over the recording's body limit")
	}
	return string(c.buf)
}

// teeBody copies what is read through it into c; done runs once, at the end of the body or at its
// close, whichever comes first.
type teeBody struct {
	rc   io.ReadCloser
	c    *capture
	done func()
	once sync.Once
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.c.add(p[:n])
	}
	if err != nil && b.done != nil {
		b.once.Do(b.done)
	}
	return n, err
}

func (b *teeBody) Close() error {
	err := b.rc.Close()
	if b.done != nil {
		b.once.Do(b.done)
	}
	return err
}
