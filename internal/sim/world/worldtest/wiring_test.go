package worldtest_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// The parts a test gets are production's: a Scaleway API that answers a read 503 once is retried
// by the client's transport, as it is for the bot (wiring.ScalewayClient). Before worldtest
// opened its parts through wiring.Open, its client had no retrying transport and the listing
// failed on the first 503.
func TestPartsRetryAnUnavailableScalewayAsTheBotDoes(t *testing.T) {
	w := worldtest.Start(t, world.Options{TimeFactor: 0.005, S3: "file"})
	target, err := url.Parse(w.ScalewayURL)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	var refused, passed atomic.Int32
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && armed.CompareAndSwap(true, false) {
			refused.Add(1)
			http.Error(rw, `{"message":"injected: service unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		passed.Add(1)
		rp.ServeHTTP(rw, r)
	}))
	t.Cleanup(proxy.Close)

	p := worldtest.New(t, w, worldtest.Options{ScalewayURL: proxy.URL})
	armed.Store(true)
	before := passed.Load()
	start := time.Now()
	if _, err := p.Driver.ListTagged(t.Context(), scw.ZoneFrPar1); err != nil {
		t.Fatalf("list the tagged resources through an API that answered 503 once: %v", err)
	}
	if refused.Load() != 1 || passed.Load() == before {
		t.Fatalf("the proxy refused %d requests and passed %d after: the 503 was not met, or not retried", refused.Load(), passed.Load()-before)
	}
	t.Logf("one 503, retried; the listing took %s", time.Since(start).Round(time.Millisecond))
}
