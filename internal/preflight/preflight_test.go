package preflight

import (
	"errors"
	"strings"
	"testing"
)

func seedNeeds() []Need {
	return []Need{{Key: "PLAY2-NANO", What: "PLAY2-NANO Instances", Count: 3}, {Key: KeyIPs, What: "flexible IPs", Count: 3},
		{Key: KeyVolumes, What: "volumes", Count: 3}}
}

// The emulator's names, pretty names only, and only the offers' documented quota_names: the
// three readings of register row quota-names, as lists.
var (
	snakeListed = []Listed{{Name: "instance_servers_play2_nano", PrettyName: "PLAY2-NANO", Limit: 5}, {Name: "instance_ips", PrettyName: "Instances IPs", Limit: 20},
		{Name: "block_volumes", PrettyName: "Volumes", Limit: 200}, {Name: "EM_A116X_SSD", PrettyName: "A116X SSD", Limit: 1}, {Name: "EM_A115X_SSD", PrettyName: "A115X SSD", Limit: 1}}
	prettyListed = []Listed{{Name: "q-0001", PrettyName: "PLAY2-NANO", Limit: 5}, {Name: "q-0002", PrettyName: "Instances IPs", Limit: 20},
		{Name: "q-0003", PrettyName: "Volumes", Limit: 200}, {Name: "EM_A116X_SSD", PrettyName: "A116X SSD", Limit: 1}, {Name: "EM_A115X_SSD", PrettyName: "A115X SSD", Limit: 1}}
	absentListed = []Listed{{Name: "EM_A116X_SSD", PrettyName: "A116X SSD", Limit: 1}, {Name: "EM_A115X_SSD", PrettyName: "A115X SSD", Limit: 1}}
)

// Quotas are recognised by what they count, not by one guessed name; a neighbour's quota (the
// Elastic Metal IPs, Block Storage's size, a type's snapshots) is not taken for the product's.
func TestMatch(t *testing.T) {
	decoys := []Listed{{Name: "baremetal_flexible_ips", PrettyName: "Elastic Metal Flexible IP", Limit: 64},
		{Name: "block_storage_total_size_gb", PrettyName: "Block Storage total size in GB", Limit: 500},
		{Name: "compute_snapshots_type_b_ssd_available", PrettyName: "Snapshots", Limit: 99999},
		{Name: "play2_nano_snapshots", Limit: 7}, {Name: "security_rules", PrettyName: "Security Rules", Limit: 500},
		{Name: "iam_api_keys", PrettyName: "API keys", Limit: 50}, {Name: "dev1_s", PrettyName: "DEV1-S", Limit: 10}}
	for _, tc := range []struct {
		key, quotaName string
		listed         []Listed
		want           string // the name chosen; "" none
		pretty         bool
	}{
		{"PLAY2-NANO", "", snakeListed, "instance_servers_play2_nano", false},
		{"PLAY2-NANO", "", prettyListed, "q-0001", true},
		{"PLAY2-NANO", "", absentListed, "", false},
		{"PLAY2-NANO", "", append(decoys, Listed{Name: "compute_servers_play2nano", Limit: 5}), "compute_servers_play2nano", false},
		{"PLAY2-NANO", "", decoys, "", false},
		{"DEV1-S", "", decoys, "dev1_s", false},
		{KeyIPs, "", append(decoys, snakeListed...), "instance_ips", false},
		{KeyIPs, "", decoys, "", false},
		{KeyVolumes, "", append(decoys, prettyListed...), "q-0003", true},
		{KeyVolumes, "", decoys, "", false},
		{KeySnapshots, "", decoys, "play2_nano_snapshots", false}, // two match: the smaller limit
		{KeySecurityGroups, "", append(decoys, Listed{Name: "x", PrettyName: "Security Groups", Limit: 99999}), "x", true},
		{KeySecurityGroups, "", decoys, "", false},
		{KeySSHKeys, "", append(decoys, Listed{Name: "iam_ssh_keys", Limit: 50}), "iam_ssh_keys", false},
		{KeySSHKeys, "", decoys, "", false},
		{"EM-A116X-SSD", "EM_A116X_SSD", absentListed, "EM_A116X_SSD", false},
		{"EM-A116X-SSD", "", []Listed{{Name: "z", PrettyName: "A116X SSD", Limit: 1}}, "z", true},
		{"EM-A116X-SSD", "EM_A116X_SSD", decoys, "", false},
	} {
		q, _, pretty, ok := Match(tc.key, tc.quotaName, tc.listed)
		if got := map[bool]string{true: q.Name}[ok]; got != tc.want || (ok && pretty != tc.pretty) {
			t.Errorf("Match(%s) = %q (pretty %v), want %q (pretty %v)", tc.key, got, pretty, tc.want, tc.pretty)
		}
	}
	// Two quotas of one product: the smaller limit is weighed, both are named.
	q, names, _, _ := Match(KeyIPs, "", []Listed{{Name: "instance_ips", Limit: 20}, {Name: "compute_flexible_ips", Limit: 12}})
	if q.Limit != 12 || len(names) != 2 {
		t.Errorf("two matches: %+v %v, want the limit 12 and both names", q, names)
	}
}

// The "done when": a second seed cluster beyond five PLAY2-NANO is refused before
// anything is created whether the quotas can be read or not, and the refusal says which number it
// used and where it came from.
func TestSecondClusterRefusedUnderEveryQuotaReading(t *testing.T) {
	second := map[string]int{"PLAY2-NANO": 3, KeyIPs: 3, KeyVolumes: 3, "EM-A116X-SSD": 1}
	a116 := Offer{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockAvailable, Priced: true}
	for _, tc := range []struct {
		name      string
		listed    []Listed
		unread    string
		overrides map[string]int
		source    Source
		from      string
		limit     int64
	}{
		{"allowed, snake names", snakeListed, "", nil, FromAPI, "quota instance_servers_play2_nano", 5},
		{"allowed, pretty names", prettyListed, "", nil, FromAPI, "q-0001 (recognised by its pretty name)", 5},
		{"allowed, names absent", absentListed, "", nil, FromDocs, "documented default", 5},
		{"refused", nil, "permissions denied", nil, FromDocs, "documented default", 5},
		{"refused, quotas: in poc.yml", nil, "permissions denied", map[string]int{"PLAY2-NANO": 4}, FromRepo, ".github/poc.yml", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Decide(Input{Needs: seedNeeds(), Offers: []Offer{a116}, Listed: tc.listed, Unread: tc.unread, Overrides: tc.overrides, Usage: second})
			if res.Refusal == nil || res.Refusal.Check.Key != "PLAY2-NANO" {
				t.Fatalf("refusal %+v, want PLAY2-NANO's", res.Refusal)
			}
			c := res.Refusal.Check
			if c.Source != tc.source || c.Limit != tc.limit || !strings.Contains(res.Refusal.Error(), tc.from) {
				t.Errorf("refused on %s %d: %q, want source %s, limit %d, saying %q", c.Source, c.Limit, res.Refusal.Error(), tc.source, tc.limit, tc.from)
			}
			if res.Unread != tc.unread {
				t.Errorf("Unread %q, want %q", res.Unread, tc.unread)
			}
			// Every section is decided anyway: the offers are weighed too.
			if len(res.Candidates) != 1 || len(res.Checks) != 3 {
				t.Errorf("sections: %d checks, %d candidates; want every section shown", len(res.Checks), len(res.Candidates))
			}
			var r *Refusal
			if !errors.As(error(res.Refusal), &r) {
				t.Error("the refusal is not an error")
			}
		})
	}
	// The first cluster fits under each reading.
	for _, l := range [][]Listed{snakeListed, prettyListed, absentListed, nil} {
		if res := Decide(Input{Needs: seedNeeds(), Offers: []Offer{a116}, Listed: l}); res.Refusal != nil {
			t.Errorf("a first cluster with %d quotas listed: %v", len(l), res.Refusal)
		}
	}
}

func TestDecideOffers(t *testing.T) {
	a116 := Offer{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockAvailable, Priced: true, DailyNanos: 4e9}
	a115 := Offer{Name: "EM-A115X-SSD", QuotaName: "EM_A115X_SSD", Stock: StockLow, Priced: true, DailyNanos: 5e9}
	tests := []struct {
		name     string
		usage    map[string]int
		offers   []Offer
		wantOK   bool
		offer    string
		quota    string // the refusal's key
		skipped0 string
		risk     string
	}{
		{name: "first cluster fits", offers: []Offer{a116, a115}, wantOK: true, offer: "EM-A116X-SSD"},
		{name: "out of stock falls back to one low on stock: a risk", offers: []Offer{{Name: a116.Name, QuotaName: a116.QuotaName, Stock: StockEmpty, Priced: true}, a115},
			wantOK: true, offer: "EM-A115X-SSD", skipped0: "out of stock", risk: "EM-A115X-SSD is low on stock"},
		{name: "over the offer quota falls back", usage: map[string]int{"EM-A116X-SSD": 1}, offers: []Offer{a116, a115},
			wantOK: true, offer: "EM-A115X-SSD", skipped0: "quota: 1 of 1 in use", risk: "low on stock"},
		{name: "a parked worker (counted) is adopted, stock or not", usage: map[string]int{"EM-A116X-SSD": 1},
			offers: []Offer{{Name: a116.Name, QuotaName: a116.QuotaName, Stock: StockLow, Adopt: true, Priced: true}}, wantOK: true, offer: "EM-A116X-SSD"},
		{name: "every offer over quota", usage: map[string]int{"EM-A116X-SSD": 1, "EM-A115X-SSD": 1}, offers: []Offer{a116, a115}, quota: "EM-A116X-SSD"},
		{name: "the worker exists: no offer", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Decide(Input{Needs: seedNeeds(), Offers: tt.offers, Listed: snakeListed, Usage: tt.usage})
			if (res.Refusal == nil) != tt.wantOK {
				t.Fatalf("refusal %v, want ok %v", res.Refusal, tt.wantOK)
			}
			if res.Offer != tt.offer {
				t.Errorf("offer %q, want %q", res.Offer, tt.offer)
			}
			if tt.quota != "" {
				msg := res.Refusal.Error()
				if res.Refusal.Check.Key != tt.quota {
					t.Fatalf("refusal %+v, want quota %s", res.Refusal, tt.quota)
				}
				for _, want := range []string{"limit", "in use", "needs", QuotasPage} {
					if !strings.Contains(msg, want) {
						t.Errorf("refusal %q does not say %q", msg, want)
					}
				}
			}
			if tt.skipped0 != "" && (len(res.Candidates) == 0 || !strings.Contains(res.Candidates[0].Skipped, tt.skipped0)) {
				t.Errorf("candidates %+v, want the first skipped for %q", res.Candidates, tt.skipped0)
			}
			if got := strings.Join(res.Risks, "; "); (tt.risk == "") != (got == "") || !strings.Contains(got, tt.risk) {
				t.Errorf("risks %q, want %q", got, tt.risk)
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

// A type no source documents and no override names is shown unknown and not checked.
func TestUnknownQuotaIsNotChecked(t *testing.T) {
	res := Decide(Input{Needs: []Need{{Key: "GP1-XL", What: "GP1-XL Instances", Count: 3}}, Usage: map[string]int{"GP1-XL": 99}})
	c := res.Checks[0]
	if res.Refusal != nil || c.Known() || c.Headroom() != "unknown" || !strings.Contains(c.From(), "not checked") {
		t.Fatalf("check %+v (%s), refusal %v", c, c.From(), res.Refusal)
	}
}
