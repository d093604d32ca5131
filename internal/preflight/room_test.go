package preflight

import (
	"strings"
	"testing"
)

// A pool fits when its missing spares and one requester's cluster fit every quota, under both
// readings of register row quota-read: the organization's quotas as the API lists them, and
// Scaleway's documented defaults when they cannot be read. The refusal names the quota, its
// numbers, and the largest size that fits.
func TestFitPool(t *testing.T) {
	seed := func(listed []Listed, unread string, usage map[string]int, offers ...Offer) Result {
		if len(offers) == 0 {
			offers = []Offer{{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockAvailable, Priced: true}}
		}
		return Decide(Input{Needs: seedNeeds(), Offers: offers, Listed: listed, Unread: unread, Usage: usage})
	}
	big := []Listed{{Name: "instance_servers_play2_nano", Limit: 20}, {Name: "instance_ips", Limit: 20}, {Name: "block_volumes", Limit: 200},
		{Name: "EM_A116X_SSD", Limit: 4}}
	for _, tc := range []struct {
		name         string
		res          Result
		size, spares int
		room         int
		fits         bool
		named        string // in the refusal
	}{
		{name: "api: 5 PLAY2-NANO fit one cluster, the pool of 1 and a requester need 2", res: seed(snakeListed, "", nil),
			size: 1, room: 1, named: "PLAY2-NANO Instances: limit 5 (the organization's quota instance_servers_play2_nano), in use 0, a cluster needs 3"},
		{name: "documented defaults (quotas unread): the same refusal, from the docs", res: seed(nil, "403", nil),
			size: 1, room: 1, named: "limit 5 (Scaleway's documented default"},
		{name: "raised quotas: Elastic Metal bounds (4 servers, one in use)", res: seed(big, "", map[string]int{"EM-A116X-SSD": 1, "PLAY2-NANO": 3}),
			size: 2, room: 3, fits: true},
		{name: "raised quotas: a pool of 3 and a requester need 4, 3 fit", res: seed(big, "", map[string]int{"EM-A116X-SSD": 1, "PLAY2-NANO": 3}),
			size: 3, room: 3, named: "EM-A116X-SSD Elastic Metal servers: limit 4"},
		{name: "spares that run are counted: 2 running, 1 more room, size 2 fits", res: seed(big, "", map[string]int{"EM-A116X-SSD": 3, "PLAY2-NANO": 6}),
			size: 2, spares: 2, room: 1, fits: true},
		{name: "two offers: their rooms add up", res: seed(big, "", map[string]int{"EM-A116X-SSD": 4},
			Offer{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockAvailable, Priced: true},
			Offer{Name: "EM-A115X-SSD", Stock: StockAvailable, Priced: true}), size: 0, room: 1, fits: true},
		{name: "an offer out of stock leaves no room", res: seed(big, "", nil,
			Offer{Name: "EM-A116X-SSD", QuotaName: "EM_A116X_SSD", Stock: StockEmpty}), size: 1, room: 0, named: "leaves room for 0"},
		{name: "no number for anything: not bounded", res: Result{Checks: []Check{{What: "x", Need: 3, Source: FromNowhere}}},
			size: 5, room: -1, fits: true},
		{name: "size 0 always fits", res: seed(snakeListed, "", map[string]int{"PLAY2-NANO": 5}), size: 0, room: 0, fits: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := FitPool(tc.res, tc.size, tc.spares)
			if f.Room != tc.room || f.Fits() != tc.fits {
				t.Fatalf("room %d fits %v, want %d %v (bound %+v)", f.Room, f.Fits(), tc.room, tc.fits, f.Bound)
			}
			if tc.fits {
				if f.Error() != "" {
					t.Errorf("a pool that fits says %q", f.Error())
				}
				return
			}
			msg := f.Error()
			for _, want := range []string{tc.named, "pool.size", QuotasPage} {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal %q does not say %q", msg, want)
				}
			}
			if f.MaxSize() >= tc.size {
				t.Errorf("max size %d, want below %d", f.MaxSize(), tc.size)
			}
		})
	}
}
