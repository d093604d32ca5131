package doctor

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/sim/cnichart"
)

// TestCiliumChart: the pinned chart is fetched, checked against its digest and rendered as an
// up's pre-flight renders it; each failure says what to fix.
func TestCiliumChart(t *testing.T) {
	broken := cnichart.Pack("broken", map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: broken\nversion: 1.0.0\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  at: {{ uuidv4 | quote }}\n",
	})
	archives := map[string][]byte{"/good.tgz": cnichart.Archive(), "/broken.tgz": broken}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, ok := archives[r.URL.Path]
		if !ok {
			http.NotFound(rw, r)
			return
		}
		_, _ = rw.Write(b)
	}))
	t.Cleanup(srv.Close)

	digest := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	for _, tc := range []struct {
		name, pin string
		status    Status
		want      string
	}{
		{"renders", srv.URL + "/good.tgz@sha256:" + digest(cnichart.Archive()), OK, "digest matches, renders"},
		{"wrong digest", srv.URL + "/good.tgz@sha256:" + digest(broken), Fail, "sha256"},
		{"does not render", srv.URL + "/broken.tgz@sha256:" + digest(broken), Fail, `broken/templates/cm.yaml:6:9: function "uuidv4" is not supported`},
		{"not found", srv.URL + "/gone.tgz@sha256:" + digest(broken), Fail, "404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := chart.ParseSource(tc.pin)
			if err != nil {
				t.Fatal(err)
			}
			items := CiliumChart(src, srv.Client())(t.Context())
			if len(items) != 1 || items[0].Status != tc.status || !strings.Contains(items[0].Detail, tc.want) {
				t.Fatalf("CiliumChart: %+v, want status %v with %q", items, tc.status, tc.want)
			}
			if tc.status != OK && !strings.Contains(items[0].Fix, "POC_CILIUM_CHART") {
				t.Errorf("the fix %q does not name the setting", items[0].Fix)
			}
		})
	}
}
