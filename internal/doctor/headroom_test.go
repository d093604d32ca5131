package doctor

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/preflight"
)

func TestHeadroom(t *testing.T) {
	needs := []preflight.Need{{Quota: "instances_pro2_xxs_servers", What: "PRO2-XXS Instances", Count: 1}}
	offers := []preflight.Offer{{Name: "EM-A115X-SSD", QuotaName: "em_a115x_ssd", Stock: preflight.StockAvailable, Priced: true}}
	for _, tc := range []struct {
		name   string
		in     preflight.Input
		status Status
		want   string
	}{
		{"fits", preflight.Input{Needs: needs, Offers: offers, Quotas: map[string]preflight.Quota{"instances_pro2_xxs_servers": {Limit: 3}}, Usage: map[string]int{}},
			OK, "instances_pro2_xxs_servers 2 left"},
		{"quota full", preflight.Input{Needs: needs, Offers: offers, Quotas: map[string]preflight.Quota{"instances_pro2_xxs_servers": {Limit: 1}}, Usage: map[string]int{"instances_pro2_xxs_servers": 1}},
			Fail, "would be exceeded"},
		{"out of stock", preflight.Input{Needs: needs, Offers: []preflight.Offer{{Name: "EM-A115X-SSD", Stock: preflight.StockEmpty, Priced: true}}, Quotas: map[string]preflight.Quota{}},
			Fail, "EM-A115X-SSD (out of stock)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf := preflight.Decide(tc.in)
			items := Headroom(&pf)
			if len(items) != 1 || items[0].Status != tc.status || !strings.Contains(items[0].Detail, tc.want) {
				t.Fatalf("Headroom: %+v, want status %v with %q", items, tc.status, tc.want)
			}
			if tc.status == Fail && items[0].Fix == "" {
				t.Fatal("a failed headroom says nothing to do")
			}
		})
	}
	if it := Headroom(nil); it[0].Status != Skip {
		t.Fatalf("no pre-flight: %+v", it)
	}
}
