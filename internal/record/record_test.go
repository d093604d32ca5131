package record

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
)

// env is a getenv over m.
func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Recording off: Wrap hands back the very transport it was given, so a run that does not record
// goes through nothing of this package.
func TestWrapOffReturnsTheTransport(t *testing.T) {
	base := &http.Transport{}
	got, err := Wrap(env(nil), Scaleway, base)
	if err != nil {
		t.Fatal(err)
	}
	if got != http.RoundTripper(base) {
		t.Fatalf("recording off wrapped the transport: %T", got)
	}
}

// cassetteIn loads the cassettes of dir with go-vcr itself, and returns their interactions in the
// order of their ids (the process's request order across the services) and the files' bytes.
func cassetteIn(t *testing.T, dir string) (*cassette.Cassette, []byte) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.cassette.yaml"))
	if len(files) == 0 {
		t.Fatalf("no cassette in %s", dir)
	}
	all := &cassette.Cassette{}
	var raw []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(raw, b...)
		c, err := cassette.Load(strings.TrimSuffix(f, ".yaml"))
		if err != nil {
			t.Fatalf("go-vcr cannot load %s: %v\n%s", f, err, b)
		}
		all.Interactions = append(all.Interactions, c.Interactions...)
	}
	slices.SortFunc(all.Interactions, func(a, b *cassette.Interaction) int { return a.ID - b.ID })
	for i, it := range all.Interactions {
		if it.ID != i {
			t.Fatalf("interaction ids %d…: not the requests' order 0, 1, 2…", it.ID)
		}
	}
	return all, raw
}

// What the transport writes is a go-vcr v4 cassette: go-vcr loads it, with every exchange in the
// order the requests started, bodies whole up to the limit and summarised past it, an exchange
// that got no answer with code 0, and the file a whole cassette after each exchange.
func TestCassetteLoadsWithGoVCR(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/big":
			w.Write(bytes.Repeat([]byte("x"), maxKept+10))
		case "/missing":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"resource not found","type":"not_found"}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"echo":`+string(body)+`,"method":"`+r.Method+`"}`)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	rt, err := Wrap(env(map[string]string{"POC_RECORD_DIR": dir}), Scaleway, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: rt}
	do := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if body == "" {
			req.Body = http.NoBody
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	do("POST", "/instance/v1/zones/fr-par-1/ips", `{"type":"routed_ipv4"}`)
	do("GET", "/missing", "")
	do("HEAD", "/head", "")
	do("GET", "/big", "")
	c, _ := cassetteIn(t, dir)
	if len(c.Interactions) != 4 {
		t.Fatalf("%d interactions, want 4", len(c.Interactions))
	}
	post := c.Interactions[0]
	if post.Request.Method != "POST" || post.Request.Body != `{"type":"routed_ipv4"}` || post.Response.Code != 200 ||
		post.Response.Body != `{"echo":{"type":"routed_ipv4"},"method":"POST"}` || post.ID != 0 {
		t.Errorf("POST recorded as %+v", post)
	}
	if c.Interactions[1].Response.Code != 404 || !strings.Contains(c.Interactions[1].Response.Body, "not_found") {
		t.Errorf("404 recorded as %+v", c.Interactions[1].Response)
	}
	if c.Interactions[2].Request.Method != "HEAD" || c.Interactions[2].Response.Body != "" {
		t.Errorf("HEAD recorded as %+v", c.Interactions[2])
	}
	if b := c.Interactions[3].Response.Body; !strings.HasPrefix(b, ElidedPrefix) || !strings.Contains(b, "1048586 bytes") {
		t.Errorf("a body over the limit is kept as %.80q, want its summary", b)
	}
	// A request that gets no answer.
	srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/gone", nil)
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a closed server answered")
	}
	c, _ = cassetteIn(t, dir)
	last := c.Interactions[len(c.Interactions)-1]
	if len(c.Interactions) != 5 || last.Response.Code != 0 || !strings.HasPrefix(last.Response.Status, "error: ") || last.ID != 4 {
		t.Errorf("the failed exchange is recorded as %+v", last)
	}
}
