package talos

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/testenv"
)

// TestProbeScript runs the probe pods' script with the local bash against a health responder
// (GET /hello → 200, as cilium pkg/health/probe/responder answers), a server answering 404 and a
// closed port: one line per target, "ok" for the responder only, and exit status 1.
func TestProbeScript(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "timeout"} {
		testenv.Program(t, tool, "apt-get install bash coreutils (the agent image has them)")
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
	// The targets run at once: their lines come in any order.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{"ok " + hello, "fail " + notFound + " HTTP/1.0 404", "fail " + closed + " "}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w) }) {
			t.Errorf("no line starts with %q:\n%s", w, out)
		}
	}
}

// TestStaleProbeIsNotReported: probe pods left by a check long ago (a status an hour earlier) are
// deleted and a new round is started: their result is never reported as the network's now.
func TestStaleProbeIsNotReported(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		pods    []map[string]any
		deleted []string
		posted  int
	)
	pod := func(name, node, phase string, created time.Time) map[string]any {
		return map[string]any{"metadata": map[string]any{"name": name, "creationTimestamp": created.UTC().Format(time.RFC3339)},
			"spec": map[string]any{"nodeName": node}, "status": map[string]any{"phase": phase}}
	}
	pods = []map[string]any{pod("poc-netprobe-a-old", "a", "Failed", time.Now().Add(-time.Hour))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/pods", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"items": pods})
	})
	mux.HandleFunc("POST /api/v1/namespaces/kube-system/pods", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Metadata struct{ Name string }     `json:"metadata"`
			Spec     struct{ NodeName string } `json:"spec"`
		}
		_ = json.NewDecoder(r.Body).Decode(&p)
		mu.Lock()
		defer mu.Unlock()
		posted++
		pods = append(pods, pod(p.Metadata.Name, p.Spec.NodeName, "Succeeded", time.Now()))
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("DELETE /api/v1/namespaces/kube-system/pods/{name}", func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		deleted = append(deleted, r.PathValue("name"))
		pods = slices.DeleteFunc(pods, func(p map[string]any) bool { return p["metadata"].(map[string]any)["name"] == r.PathValue("name") })
	})
	mux.HandleFunc("GET /apis/cilium.io/v2/ciliumnodes", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"items": []any{
			map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"health": map[string]any{"ipv4": "10.244.0.2"}}},
			map[string]any{"metadata": map[string]any{"name": "b"}, "spec": map[string]any{"health": map[string]any{"ipv4": "10.244.1.2"}}},
		}})
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	k := &kubeClient{server: ts.URL, httpc: ts.Client(), tr: ts.Client().Transport.(*http.Transport)}
	c := k.podNetwork(t.Context(), true)
	mu.Lock()
	defer mu.Unlock()
	if !c.OK || posted != 2 {
		t.Errorf("check = %+v after %d probe pods started, want OK from a new round of 2", c, posted)
	}
	if !slices.Contains(deleted, "poc-netprobe-a-old") || len(pods) != 0 {
		t.Errorf("deleted %v, left %v: want the stale pod and the new round deleted", deleted, pods)
	}
}
