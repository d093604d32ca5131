package worldtest_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/sim/cnichart"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// A pinned chart that does not render refuses the up in its pre-flight, naming the template and
// the function, before anything billed exists. Before, the chart was first rendered at the
// talos-config step, after the reserved IPs, the security group, the control planes and the
// Elastic Metal worker had been ordered.
func TestUpRefusesAChartThatDoesNotRender(t *testing.T) {
	w := worldtest.Start(t, world.Options{TimeFactor: 0.005, S3: "file"})

	archive := brokenChart()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { _, _ = rw.Write(archive) }))
	t.Cleanup(srv.Close)

	sum := sha256.Sum256(archive)
	w.CiliumChart = srv.URL + "/broken-1.0.0.tgz@sha256:" + hex.EncodeToString(sum[:])

	p := worldtest.New(t, w, worldtest.Options{StepTimeout: 30 * time.Second})
	_, err := p.Ops.Up(t.Context(), clusterops.Intent{Cluster: "chart-1", Spec: p.Spec, TTL: time.Hour, RequestedBy: "test", Command: "up"})

	for _, want := range []string{"nothing was created", "broken/templates/secret.yaml", `function "randAlphaNum" is not supported`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("up = %v, want an error with %q", err, want)
		}
	}

	if live := worldtest.Live(w, "chart-1"); len(live) != 0 {
		t.Errorf("the refused up left %v", live)
	}
}

// brokenChart is a chart of our own whose one template calls a function the renderer refuses.
func brokenChart() []byte {
	return cnichart.Pack("broken", map[string]string{
		"Chart.yaml":            "apiVersion: v2\nname: broken\nversion: 1.0.0\n",
		"templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  password: {{ randAlphaNum 16 | quote }}\n",
	})
}
