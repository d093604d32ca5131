package talos

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// TestProbeScript runs the probe pods' script with the local bash against a health responder
// (GET /hello → 200, as cilium pkg/health/probe/responder answers), a server answering 404 and a
// closed port: one line per target, "ok" for the first only, and exit status 1.
func TestProbeScript(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "timeout"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed here (the agent image has it): %v", tool, err)
		}
	}
	serve := func(h http.HandlerFunc) string {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	hello := serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/hello" {
			w.WriteHeader(http.StatusNotFound)
		}
	})
	notFound := serve(http.NotFound)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()

	cmd := exec.CommandContext(t.Context(), "bash", "-c", probeScript, "netprobe", hello, notFound, closed)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit = %v, want status 1; output:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"ok " + hello, "fail " + notFound + " HTTP/1.0 404", "fail " + closed + " "}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}
