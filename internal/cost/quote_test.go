package cost_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	pc "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
)

var quoteTime = time.Date(2026, 10, 18, 9, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func lineFor(t *testing.T, q cost.Quote, kind cost.Kind) cost.Line {
	t.Helper()
	for _, l := range q.Lines {
		if l.Item.Kind == kind {
			return l
		}
	}
	t.Fatalf("no %s line in quote", kind)
	return cost.Line{}
}

// The seed says "about 4 € per day". From the dated table, the defaults cost
// per hour: 3×0.02754 (PLAY2-NANO) + 0.077 (EM-A116X-SSD) + 3×0.004 (IPv4,
// estimate) + 3×20 GB×0.000118 (5K volumes, estimate) + 10 GB×0.000044
// (snapshot, estimate) + 1 GB×0.0146/730 (object, estimate)
// = 0.08262 + 0.077 + 0.012 + 0.00708 + 0.00044 + 0.00002 = 0.17916 €/h,
// so 4.29984 €/day (printed € 4.30) and 130.7868 € per 730-h month.
func TestDefaultDailyFromTable(t *testing.T) {
	q, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
	if err != nil {
		t.Fatalf("quote: %v", err)
	}
	if want := cost.EUR(0, 179_160_000); q.Hourly != want {
		t.Errorf("hourly = %s, want %s", q.Hourly, want)
	}
	if want := cost.EUR(4, 299_840_000); q.Daily != want {
		t.Errorf("daily = %s, want %s", q.Daily, want)
	}
	if got := q.Daily.Format(2); got != "€ 4.30" {
		t.Errorf("daily printed %q, want € 4.30", got)
	}
	if want := cost.EUR(130, 786_800_000); q.Monthly != want {
		t.Errorf("monthly = %s, want %s", q.Monthly, want)
	}
	// Compute lines are recorded figures; every minor one is a labelled estimate.
	for _, l := range q.Lines {
		if l.Price.Source != cost.SourceTable || l.Price.Date != cost.TableDate {
			t.Errorf("%s: provenance %q", l.Item.Label(), l.Price.Provenance())
		}
		if l.Price.Estimate == l.Item.Kind.Compute() {
			t.Errorf("%s: estimate=%v", l.Item.Label(), l.Price.Estimate)
		}
	}
	if l := lineFor(t, q, cost.KindInstance); l.Daily != cost.EUR(1, 982_880_000) {
		t.Errorf("control planes per day = %s, want € 1.98288", l.Daily)
	}
}

func TestCatalogPrices(t *testing.T) {
	w := newWorld(t)
	q, err := cost.NewQuoter(cost.APISources(w.Client)...).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
	if err != nil {
		t.Fatalf("quote: %v", err)
	}
	// Every item of the seed is found in the catalog's real shapes, in its own
	// unit, but the flexible IPv4: the real catalog lists no IP (the table's
	// estimate prices it).
	tests := []struct {
		kind   cost.Kind
		amount cost.Money
		unit   cost.Unit
		source cost.SourceName
		checks int // cross-checks by the other APIs
	}{
		{cost.KindInstance, cost.EUR(0, 27_540_000), cost.PerHour, cost.SourceCatalog, 1},
		{cost.KindBaremetal, cost.EUR(0, 77_000_000), cost.PerHour, cost.SourceCatalog, 1},
		{cost.KindBlockVolume, cost.EUR(0, 86_140_000), cost.PerGBMonth, cost.SourceCatalog, 0},
		{cost.KindSnapshot, cost.EUR(0, 32_120_000), cost.PerGBMonth, cost.SourceCatalog, 0},
		{cost.KindObjectStorage, cost.EUR(0, 14_600_000), cost.PerGBMonth, cost.SourceCatalog, 0},
		{cost.KindIP, cost.EUR(0, 4_000_000), cost.PerHour, cost.SourceTable, 0},
	}
	for _, tc := range tests {
		l := lineFor(t, q, tc.kind)
		if l.Price.Source != tc.source || l.Price.Amount != tc.amount || l.Price.Unit != tc.unit {
			t.Errorf("%s: %s %s (%s), want %s %s from %s", tc.kind, l.Price.Amount, l.Price.Unit, l.Price.Provenance(), tc.amount, tc.unit, tc.source)
		}
		if tc.source == cost.SourceCatalog && (l.Price.Date != "2026-10-18" || !strings.HasPrefix(l.Price.Ref, "/")) {
			t.Errorf("%s: date %q ref %q", tc.kind, l.Price.Date, l.Price.Ref)
		}
		if len(l.CrossChecks) != tc.checks {
			t.Errorf("%s: %d cross-checks, want %d", tc.kind, len(l.CrossChecks), tc.checks)
		}
	}
	if len(q.Warnings) != 1 || !strings.Contains(q.Warnings[0], "flexible IPv4: labelled estimate") {
		t.Errorf("warnings: %q, want only the IP's estimate", q.Warnings)
	}
	// The emulator serves the table's figures: same total as the table.
	if q.Daily != cost.EUR(4, 299_840_000) {
		t.Errorf("daily from catalog = %s", q.Daily)
	}
	em := lineFor(t, q, cost.KindBaremetal)
	if sub := em.Price.Subscription; sub == nil || sub.Amount != cost.EUR(27, 990_000_000) || sub.Unit != cost.PerMonth ||
		sub.Fee != cost.EUR(27, 990_000_000) || sub.Ref != "/baremetal/em-a116x-ssd/monthly/run_par1" || !em.Price.Fee.IsZero() {
		t.Errorf("EM subscription from catalog = %+v, hourly fee %s; want 27.99 a month plus a 27.99 setup fee, no fee hourly", sub, em.Price.Fee)
	}
}

func TestCrossCheck(t *testing.T) {
	tests := []struct {
		name     string
		nano     float32
		sku      string
		warnings int
	}{
		{"agree", 0.02754, "PLAY2-NANO", 0},
		{"float rounding within tolerance", 0.02754, "DEV1-XL", 0}, // catalog 0.065075999, products 0.065076
		{"disagree", 0.03, "PLAY2-NANO", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.set(func(w *world) { w.nanoHourly = tc.nano })
			items := []cost.Item{{Kind: cost.KindInstance, SKU: tc.sku, Zone: scw.ZoneFrPar1, Count: 1}}
			q, err := cost.NewQuoter(cost.APISources(w.Client)...).Quote(ctxT(t), items, cost.QuoteOptions{Now: quoteTime})
			if err != nil {
				t.Fatalf("quote: %v", err)
			}
			if len(q.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", q.Warnings, tc.warnings)
			}
			if tc.warnings > 0 && !strings.Contains(q.Warnings[0], "instance-api disagrees: € 0.03/h vs € 0.02754/h from catalog") {
				t.Errorf("warning text %q", q.Warnings[0])
			}
			if l := q.Lines[0]; l.Price.Source != cost.SourceCatalog {
				t.Errorf("chosen source %s, want catalog (most authoritative)", l.Price.Source)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(*world)
		instanceSrc cost.SourceName
		emSrc       cost.SourceName
		ipSrc       cost.SourceName
		ipEstimate  bool
		warnSubstr  string
	}{
		{"catalog down", func(w *world) { w.Catalog.SetDown(true) },
			cost.SourceInstance, cost.SourceBaremetal, cost.SourceTable, true, "price source catalog unavailable"},
		{"catalog and APIs down", func(w *world) {
			w.Catalog.SetDown(true)
			w.set(func(w *world) { w.instanceDown, w.baremetalDown = true, true })
		}, cost.SourceTable, cost.SourceTable, cost.SourceTable, true, "price source baremetal-api unavailable"},
		{"minor item omitted from catalog", func(w *world) { w.Catalog.Omit("Block Storage Snapshot") },
			cost.SourceCatalog, cost.SourceCatalog, cost.SourceTable, true, "10 GB block snapshot: labelled estimate from the 2026-10-17 table"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.setup(w)
			q, err := cost.NewQuoter(cost.APISources(w.Client)...).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
			if err != nil {
				t.Fatalf("quote: %v", err)
			}
			for kind, want := range map[cost.Kind]cost.SourceName{cost.KindInstance: tc.instanceSrc, cost.KindBaremetal: tc.emSrc, cost.KindIP: tc.ipSrc} {
				if got := lineFor(t, q, kind).Price.Source; got != want {
					t.Errorf("%s priced by %s, want %s", kind, got, want)
				}
			}
			if ip := lineFor(t, q, cost.KindIP); ip.Price.Estimate != tc.ipEstimate || ip.Price.Amount != cost.EUR(0, 4_000_000) {
				t.Errorf("ip price %s estimate=%v", ip.Price.Amount, ip.Price.Estimate)
			}
			if !strings.Contains(strings.Join(q.Warnings, "\n"), tc.warnSubstr) {
				t.Errorf("warnings %q lack %q", q.Warnings, tc.warnSubstr)
			}
			if q.Daily != cost.EUR(4, 299_840_000) {
				t.Errorf("daily = %s, want the same € 4.29984 from every source", q.Daily)
			}
		})
	}
}

func TestUnknownPrice(t *testing.T) {
	tests := []struct {
		name        string
		items       []cost.Item
		setup       func(*world)
		allow       bool
		wantErr     bool
		reason      string
		unknownRows int
	}{
		{"unknown instance type refused", []cost.Item{{Kind: cost.KindInstance, SKU: "PLAY9-HUGE", Zone: scw.ZoneFrPar1, Count: 3}}, nil, false, true, "no source has a price", 1},
		{"unknown instance type allowed", []cost.Item{{Kind: cost.KindInstance, SKU: "PLAY9-HUGE", Zone: scw.ZoneFrPar1}}, nil, true, false, "", 1},
		{"end of sale in catalog beats the table", cost.DefaultCluster().Items(), func(w *world) {
			w.Catalog.SetStatus("PLAY2-NANO", pc.PublicCatalogProductStatusEndOfSale)
		}, false, true, "withdrawn from sale per catalog", 1},
		{"end of service in products/servers", []cost.Item{{Kind: cost.KindInstance, SKU: "START1-S", Zone: scw.ZoneFrPar1}}, func(w *world) {
			w.Catalog.Omit("START1-S")
		}, false, true, "withdrawn from sale per instance-api: end_of_service", 1},
		{"unknown minor item is no error", []cost.Item{{Kind: cost.KindBlockVolume, IOPS: 7000, Quantity: 20 * cost.GB, Zone: scw.ZoneFrPar1}}, nil, false, false, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			if tc.setup != nil {
				tc.setup(w)
			}
			q, err := cost.NewQuoter(cost.APISources(w.Client)...).Quote(ctxT(t), tc.items, cost.QuoteOptions{AllowUnknown: tc.allow, Now: quoteTime})
			var ue *cost.UnknownPriceError
			if got := errors.As(err, &ue); got != tc.wantErr {
				t.Fatalf("err = %v, want UnknownPriceError: %v", err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q lacks %q", err, tc.reason)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "allow_unknown_prices") {
				t.Errorf("error %q does not say how to proceed", err)
			}
			if n := len(q.Unknown()); n != tc.unknownRows {
				t.Errorf("%d unknown lines, want %d", n, tc.unknownRows)
			}
			for _, l := range q.Unknown() {
				if !l.Hourly.IsZero() || l.Price.IsKnown() {
					t.Errorf("unknown line carries an amount: %+v", l)
				}
			}
		})
	}
}

func TestAccruedAndUntilExpiry(t *testing.T) {
	q, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 10, 18, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name             string
		now, expires     time.Time
		accrued, pending cost.Money
	}{
		{"just created", created, created.Add(24 * time.Hour), cost.EUR(0, 0), cost.EUR(4, 299_840_000)},
		{"one second counts a started hour", created.Add(time.Second), created.Add(2 * time.Hour), cost.EUR(0, 179_160_000), cost.EUR(0, 179_160_000)},
		{"accrued + until expiry = lifetime", created.Add(5*time.Hour + time.Minute), created.Add(8 * time.Hour), cost.EUR(1, 74_960_000), cost.EUR(0, 358_320_000)},
		{"3h exactly", created.Add(3 * time.Hour), created.Add(3 * time.Hour), cost.EUR(0, 537_480_000), cost.EUR(0, 0)},
		{"past expiry", created.Add(5 * time.Hour), created.Add(3 * time.Hour), cost.EUR(0, 895_800_000), cost.EUR(0, 0)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := q.Accrued(created, tc.now); got != tc.accrued {
				t.Errorf("accrued = %s, want %s", got, tc.accrued)
			}
			// The reaper knows only the daily cost a state records: the same rule from it.
			if got := cost.AccruedAtDaily(q.Daily, created, tc.now); got != tc.accrued {
				t.Errorf("accrued from the daily cost = %s, want %s", got, tc.accrued)
			}
			if got := q.UntilExpiry(tc.now, tc.expires); got != tc.pending {
				t.Errorf("until expiry = %s, want %s", got, tc.pending)
			}
		})
	}
}

func TestMonthlyAlternative(t *testing.T) {
	items := []cost.Item{{Kind: cost.KindBaremetal, SKU: "EM-A116X-SSD", Zone: scw.ZoneFrPar1}}
	tests := []struct {
		name     string
		lifetime time.Duration
		want     bool
		saving   cost.Money
	}{
		{"one day: hourly is cheaper", 24 * time.Hour, false, cost.Money{}},
		{"15 days: 27.72 hourly vs 27.99", 360 * time.Hour, false, cost.Money{}},
		{"16 days: 29.568 hourly vs 27.99", 384 * time.Hour, true, cost.EUR(1, 578_000_000)},
		{"45 days: 83.16 hourly vs 2 months 55.98", 1080 * time.Hour, true, cost.EUR(27, 180_000_000)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), items, cost.QuoteOptions{Lifetime: tc.lifetime, Now: quoteTime})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(q.Alternatives) == 1; got != tc.want {
				t.Fatalf("alternatives %+v, want one: %v", q.Alternatives, tc.want)
			}
			if tc.want {
				a := q.Alternatives[0]
				if a.Saving != tc.saving || !a.Subscription.Estimate {
					t.Errorf("saving %s (want %s), subscription %s", a.Saving, tc.saving, a.Subscription.Provenance())
				}
			}
		})
	}
}

func TestQuoteRejectsBadItems(t *testing.T) {
	bad := []cost.Item{
		{Kind: cost.KindInstance, Zone: scw.ZoneFrPar1},
		{Kind: cost.KindBlockVolume, Quantity: cost.GB, Zone: scw.ZoneFrPar1},
		{Kind: "gpu", Zone: scw.ZoneFrPar1},
		{Kind: cost.KindIP, Count: -1},
	}
	for _, it := range bad {
		if _, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), []cost.Item{it}, cost.QuoteOptions{}); err == nil || cost.IsUnknownPrice(err) {
			t.Errorf("item %+v: err = %v, want a validation error", it, err)
		}
	}
}
