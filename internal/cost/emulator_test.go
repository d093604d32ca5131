package cost_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/sim/catalog"
	simscw "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// TestOnTheEmulator prices the default cluster against the Scaleway emulator
// with the catalog mounted in it, as `bot demo` and the CLI run: catalog
// prices, cross-checked by the emulator's products/servers and offers.
func TestOnTheEmulator(t *testing.T) {
	cat := catalog.New(catalog.Options{})
	emu := simscw.New(simscw.Options{
		SecretKey: "11111111-1111-1111-1111-111111111111",
		Extra:     map[string]http.Handler{"/product-catalog/": cat.Handler()},
		IPBase:    "127.18.0.0",
	})
	url, stop, err := emu.Start(ctxT(t))
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(stop)
	client, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", "11111111-1111-1111-1111-111111111111"), scw.WithDefaultZone(scw.ZoneFrPar1))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		setup  func()
		source cost.SourceName // of the compute lines
	}{
		{"catalog up", func() {}, cost.SourceCatalog},
		{"catalog down", func() { cat.SetDown(true) }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			q, err := cost.NewQuoter(cost.APISources(client)...).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
			if err != nil {
				t.Fatalf("quote: %v", err)
			}
			nano, em := lineFor(t, q, cost.KindInstance), lineFor(t, q, cost.KindBaremetal)
			want := map[cost.Kind]cost.SourceName{cost.KindInstance: tc.source, cost.KindBaremetal: tc.source}
			if tc.source == "" {
				want = map[cost.Kind]cost.SourceName{cost.KindInstance: cost.SourceInstance, cost.KindBaremetal: cost.SourceBaremetal}
			}
			if nano.Price.Source != want[cost.KindInstance] || em.Price.Source != want[cost.KindBaremetal] {
				t.Errorf("sources %s / %s, want %v", nano.Price.Source, em.Price.Source, want)
			}
			if nano.Price.Amount != cost.EUR(0, 27_540_000) || em.Price.Amount != cost.EUR(0, 77_000_000) {
				t.Errorf("prices %s / %s", nano.Price.Amount, em.Price.Amount)
			}
			for _, w := range q.Warnings {
				if strings.Contains(w, "disagrees") {
					t.Errorf("emulator's APIs and catalog disagree: %s", w)
				}
			}
			if tc.source == cost.SourceCatalog && (len(nano.CrossChecks) != 1 || len(em.CrossChecks) != 1) {
				t.Errorf("cross-checks %d / %d, want the emulator's products/servers and offers", len(nano.CrossChecks), len(em.CrossChecks))
			}
			if q.Daily != cost.EUR(4, 299_840_000) {
				t.Errorf("daily %s", q.Daily)
			}
			if tc.source != cost.SourceCatalog {
				return
			}
			// Every other item of the seed but the IP (the real catalog lists
			// none) comes from the catalog too.
			for _, k := range []cost.Kind{cost.KindBlockVolume, cost.KindSnapshot, cost.KindObjectStorage} {
				if l := lineFor(t, q, k); l.Price.Source != cost.SourceCatalog || l.Price.Unit != cost.PerGBMonth {
					t.Errorf("%s: %s %s from %s, want the catalog's per-GB-month price", k, l.Price.Amount, l.Price.Unit, l.Price.Source)
				}
			}
			if sub := em.Price.Subscription; sub == nil || sub.Source != cost.SourceCatalog || sub.Fee != cost.EUR(27, 990_000_000) {
				t.Errorf("worker subscription %+v, want the catalog's with its setup fee", sub)
			}
		})
	}
}
