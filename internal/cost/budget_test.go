package cost_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/repoconfig"
)

func TestCheckBudget(t *testing.T) {
	def, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime})
	if err != nil {
		t.Fatal(err)
	}
	unknown, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), []cost.Item{{Kind: cost.KindInstance, SKU: "PLAY9-HUGE", Zone: scw.ZoneFrPar1}}, cost.QuoteOptions{AllowUnknown: true})
	if err != nil {
		t.Fatal(err)
	}
	running := func(n int) []cost.ClusterCost {
		out := make([]cost.ClusterCost, n)
		for i := range out {
			out[i] = cost.ClusterCost{Name: "acme-web-" + string(rune('1'+i)), Daily: def.Daily}
		}
		return out
	}
	cfg := func(f func(*repoconfig.RepoConfig)) repoconfig.RepoConfig {
		c := repoconfig.Default()
		if f != nil {
			f(&c)
		}
		return c
	}
	tests := []struct {
		name      string
		cfg       repoconfig.RepoConfig
		running   []cost.ClusterCost
		candidate cost.Quote
		limit     string
		detail    string
	}{
		{"first cluster fits", cfg(nil), nil, def, "", ""},
		{"third cluster fits 15 €: 12.90 €/day", cfg(nil), running(2), def, "", ""},
		{"fourth cluster over max_clusters", cfg(nil), running(3), def, "max_clusters",
			"3 cluster(s) already running (acme-web-1, acme-web-2, acme-web-3), the limit is 3 at once"},
		{"over max_daily_eur", cfg(func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 8_000_000_000 }), running(1), def, "max_daily_eur",
			"1 running cluster(s) cost € 4.30 per day, this one € 4.30 per day: € 8.60 per day is above the € 8.00 limit"},
		{"exactly at the limit is allowed", cfg(func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 8_599_680_000 }), running(1), def, "", ""},
		{"one nano-euro over", cfg(func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 8_599_679_999 }), running(1), def, "max_daily_eur", "€ 8.60 per day is above the € 8.60 limit"},
		{"unknown compute price refused", cfg(nil), nil, unknown, "allow_unknown_prices", "no known price for 1 × PLAY9-HUGE"},
		{"unknown compute price allowed", cfg(func(c *repoconfig.RepoConfig) { c.AllowUnknownPrices = true }), nil, unknown, "", ""},
		{"parked workers are not clusters", cfg(nil), append(running(2), cost.ClusterCost{Name: "parked worker a", Daily: cost.EUR(1, 0), Parked: true}), def, "", ""},
		{"parked workers are billed", cfg(func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 8_000_000_000 }),
			[]cost.ClusterCost{{Name: "parked worker a", Daily: cost.EUR(4, 0), Parked: true}}, def, "max_daily_eur", "above the € 8.00 limit"},
		{"partial running figures flagged", cfg(func(c *repoconfig.RepoConfig) { c.MaxDailyNanoEUR = 5_000_000_000 }),
			[]cost.ClusterCost{{Name: "x", Daily: cost.EUR(1, 0), Unknown: true}}, def, "max_daily_eur", "some prices unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := cost.CheckBudget(tc.cfg, tc.running, tc.candidate)
			if tc.limit == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var be *cost.BudgetError
			if !errors.As(err, &be) {
				t.Fatalf("err = %v, want a BudgetError on %s", err, tc.limit)
			}
			if be.Limit != tc.limit || !strings.Contains(err.Error(), tc.detail) || !strings.Contains(err.Error(), ".github/poc.yml") {
				t.Errorf("limit %s, error %q; want %s with %q", be.Limit, err, tc.limit, tc.detail)
			}
			if tc.limit == "max_daily_eur" && be.Total != be.Current.Add(be.Candidate) {
				t.Errorf("figures do not add up: %+v", be)
			}
		})
	}
}
