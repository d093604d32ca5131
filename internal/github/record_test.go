package github

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With POC_RECORD_DIR set, the client AuthFromEnv configures records each exchange with GitHub
// as the API sees it (the token below the retries and the authentication), the token removed;
// without it, nothing is recorded and the transport is the default.
func TestAuthFromEnvRecords(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":1,"default_branch":"main","full_name":"acme/shop"}`)
	}))
	defer srv.Close()
	const token = "ghs_0123456789abcdefghijABCDEFGHIJ012345"
	dir := t.TempDir()
	env := map[string]string{"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": "acme/shop", "GITHUB_API_URL": srv.URL}
	off, err := AuthFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if off.Transport != nil {
		t.Errorf("recording off, the transport is %T, want the default", off.Transport)
	}
	env["POC_RECORD_DIR"] = dir
	a, err := AuthFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := c.DefaultBranch(t.Context()); err != nil || b != "main" {
		t.Fatalf("DefaultBranch = %q, %v", b, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.github.cassette.yaml"))
	if len(files) != 1 {
		t.Fatalf("cassettes %v, want one of GitHub", files)
	}
	raw, _ := os.ReadFile(files[0])
	if bytes.Contains(raw, []byte(token)) || !strings.Contains(string(raw), "Bearer REDACTED") || !strings.Contains(string(raw), "/repos/acme/shop") {
		t.Errorf("the cassette is not the exchange without its token:\n%s", raw)
	}
}
