package preflight

import (
	"errors"
	"strings"
	"testing"
)

const nano = "instance_servers_play2_nano"

func seedNeeds() []Need {
	return []Need{{Quota: nano, What: "PLAY2-NANO Instances", Count: 3}, {Quota: "instance_ips", What: "flexible IPs", Count: 3}}
}

func TestDecide(t *testing.T) {
	quotas := map[string]Quota{nano: {Limit: 5}, "instance_ips": {Limit: 20}, "EM_A116X_SSD": {Limit: 1}, "EM_A115X_SSD": {Limit: 1}}
	a116 := Offer{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockAvailable, Priced: true, DailyNanos: 4e9}
	a115 := Offer{Name: "EM-A115X-SSD", QuotaName: "EM_A115X_SSD", Stock: StockLow, Priced: true, DailyNanos: 5e9}
	tests := []struct {
		name     string
		usage    map[string]int
		offers   []Offer
		wantOK   bool
		offer    string
		quota    string // the refusal's quota
		skipped0 string
	}{
		{name: "first cluster fits", offers: []Offer{a116, a115}, wantOK: true, offer: "EM-A116X-SSD"},
		{name: "second cluster: PLAY2-NANO 3+3 > 5", usage: map[string]int{nano: 3, "EM_A116X_SSD": 1}, offers: []Offer{a116}, quota: nano},
		{name: "out of stock falls back", offers: []Offer{{Name: a116.Name, QuotaName: a116.QuotaName, Stock: StockEmpty, Priced: true}, a115},
			wantOK: true, offer: "EM-A115X-SSD", skipped0: "out of stock"},
		{name: "over the offer quota falls back", usage: map[string]int{"EM_A116X_SSD": 1}, offers: []Offer{a116, a115},
			wantOK: true, offer: "EM-A115X-SSD", skipped0: "quota EM_A116X_SSD"},
		{name: "a parked worker (counted) is adopted", usage: map[string]int{"EM_A116X_SSD": 1},
			offers: []Offer{{Name: a116.Name, QuotaName: a116.QuotaName, Stock: StockEmpty, Adopt: true, Priced: true}}, wantOK: true, offer: "EM-A116X-SSD"},
		{name: "every offer over quota", usage: map[string]int{"EM_A116X_SSD": 1, "EM_A115X_SSD": 1}, offers: []Offer{a116, a115}, quota: "EM_A116X_SSD"},
		{name: "a quota not listed is not checked", usage: map[string]int{"block_volumes": 999}, offers: []Offer{a116}, wantOK: true, offer: "EM-A116X-SSD"},
		{name: "the worker exists: no offer", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Decide(Input{Needs: append(seedNeeds(), Need{Quota: "block_volumes", What: "volumes", Count: 3}), Offers: tt.offers, Quotas: quotas, Usage: tt.usage})
			if (res.Refusal == nil) != tt.wantOK {
				t.Fatalf("refusal %v, want ok %v", res.Refusal, tt.wantOK)
			}
			if res.Offer != tt.offer {
				t.Errorf("offer %q, want %q", res.Offer, tt.offer)
			}
			if tt.quota != "" {
				var r *Refusal
				if !errors.As(error(res.Refusal), &r) || r.Check.Quota != tt.quota {
					t.Fatalf("refusal %+v, want quota %s", res.Refusal, tt.quota)
				}
				msg := r.Error()
				for _, want := range []string{tt.quota, "limit", "in use", "needs", QuotasPage} {
					if !strings.Contains(msg, want) {
						t.Errorf("refusal %q does not say %q", msg, want)
					}
				}
			}
			if tt.skipped0 != "" && (len(res.Candidates) == 0 || !strings.Contains(res.Candidates[0].Skipped, tt.skipped0)) {
				t.Errorf("candidates %+v, want the first skipped for %q", res.Candidates, tt.skipped0)
			}
		})
	}
}

func TestEveryOfferOutOfStock(t *testing.T) {
	res := Decide(Input{Offers: []Offer{{Name: "EM-A116X-SSD", Stock: StockEmpty, Priced: true}, {Name: "EM-A115X-SSD", Stock: StockEmpty, Priced: true}}})
	if res.Refusal == nil || !strings.Contains(res.Refusal.Error(), "EM-A115X-SSD (out of stock)") || !strings.Contains(res.Refusal.Error(), "worker_offers") {
		t.Fatalf("refusal %v", res.Refusal)
	}
}
