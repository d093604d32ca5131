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

// A pool must fit the organization's quotas before any other cluster runs: refused at
// configuration time, naming the quota. Scaleway's defaults (5 PLAY2-NANO, one server of each
// Elastic Metal offer) fit one spare, not two unless worker_offers lists two offers.
func TestFitPool(t *testing.T) {
	in := func(offers ...string) Input {
		i := Input{
			Needs: []Need{{Quota: "instance_servers_play2_nano", What: "PLAY2-NANO Instances", Count: 3}, {Quota: "instance_ips", What: "IPs", Count: 3}},
			Quotas: map[string]Quota{"instance_servers_play2_nano": {Limit: 5}, "instance_ips": {Limit: 20},
				"em_a116x": {Limit: 1}, "em_b112x": {Limit: 1}},
			Usage: map[string]int{"instance_servers_play2_nano": 5, "em_a116x": 1}, // in use: not counted
		}
		for _, o := range offers {
			i.Offers = append(i.Offers, Offer{Name: o, QuotaName: map[string]string{"EM-A116X-SSD": "em_a116x", "EM-B112X-SSD": "em_b112x", "EM-X": "em_x"}[o]})
		}
		return i
	}
	for _, tc := range []struct {
		name  string
		in    Input
		size  int
		quota string
	}{
		{"one spare fits", in("EM-A116X-SSD"), 1, ""},
		{"two spares: the control planes do not", in("EM-A116X-SSD", "EM-B112X-SSD"), 2, "instance_servers_play2_nano"},
		{"zero", in("EM-A116X-SSD"), 0, ""},
		{"an offer's quota not listed: the workers are not checked", in("EM-A116X-SSD", "EM-X"), 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := FitPool(tc.in, tc.size)
			if (r == nil) != (tc.quota == "") || (r != nil && r.Check.Quota != tc.quota) {
				t.Fatalf("FitPool = %v, want quota %q", r, tc.quota)
			}
			if r != nil && !strings.Contains(r.Error(), "pool.size") {
				t.Errorf("the refusal names no setting: %v", r)
			}
		})
	}
	big := in("EM-A116X-SSD")
	big.Quotas["instance_servers_play2_nano"] = Quota{Limit: 50}
	if r := FitPool(big, 2); r == nil || r.Check.Quota != "em_a116x" || r.Check.Need != 2 || r.Check.Limit != 1 {
		t.Errorf("two spares on one offer of quota 1: %v", r)
	}
}

// How many more clusters fit beside what runs: the scarcest quota decides.
func TestRoom(t *testing.T) {
	in := Input{
		Needs:  []Need{{Quota: "nano", Count: 3}, {Quota: "ips", Count: 3}, {Quota: "unlisted", Count: 3}},
		Offers: []Offer{{Name: "A", QuotaName: "a"}, {Name: "B", QuotaName: "b"}},
		Quotas: map[string]Quota{"nano": {Limit: 10}, "ips": {Limit: 20}, "a": {Limit: 1}, "b": {Limit: 2}},
		Usage:  map[string]int{"nano": 3, "a": 1},
	}
	if got := Room(in, 9); got != 2 {
		t.Errorf("Room = %d, want 2 (nano: 7 left / 3 = 2; workers: 0 + 2)", got)
	}
	in.Usage["b"] = 2
	if got := Room(in, 9); got != 0 {
		t.Errorf("Room = %d, want 0 (no worker left)", got)
	}
	if got := Room(Input{}, 9); got != 9 {
		t.Errorf("Room of nothing bounded = %d, want the max", got)
	}
}
