package doctor

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/preflight"
)

func TestHeadroom(t *testing.T) {
	needs := []preflight.Need{{Key: "PRO2-XXS", What: "PRO2-XXS Instances", Count: 1}}
	offers := []preflight.Offer{{Name: "EM-A115X-SSD", QuotaName: "em_a115x_ssd", Stock: preflight.StockAvailable, Priced: true}}
	listed := func(limit int64) []preflight.Listed {
		return []preflight.Listed{{Name: "instances_pro2_xxs_servers", Limit: limit}, {Name: "em_a115x_ssd", Limit: 1}}
	}
	for _, tc := range []struct {
		name   string
		in     preflight.Input
		status []Status
		want   string
	}{
		{"fits", preflight.Input{Needs: needs, Offers: offers, Listed: listed(3), Usage: map[string]int{}},
			[]Status{OK}, "PRO2-XXS Instances: 2 left (limit 3, the organization's quota instances_pro2_xxs_servers)"},
		{"quota full", preflight.Input{Needs: needs, Offers: offers, Listed: listed(1), Usage: map[string]int{"PRO2-XXS": 1}},
			[]Status{Fail}, "would be exceeded"},
		{"out of stock", preflight.Input{Needs: needs, Offers: []preflight.Offer{{Name: "EM-A115X-SSD", Stock: preflight.StockEmpty, Priced: true}}, Listed: listed(3)},
			[]Status{Fail}, "EM-A115X-SSD (out of stock)"},
		{"quotas unread: the documented numbers, a warning", preflight.Input{Needs: needs, Offers: offers, Unread: "the bot's key lacks OrganizationReadOnly"},
			[]Status{Warn}, "limit 1, Scaleway's documented default"},
		{"low stock: a risk", preflight.Input{Needs: needs, Offers: []preflight.Offer{{Name: "EM-A115X-SSD", Stock: preflight.StockLow, Priced: true}}, Listed: listed(3)},
			[]Status{OK, Warn}, "one default cluster fits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pf := preflight.Decide(tc.in)
			items := Headroom(&pf)
			var got []Status
			for _, it := range items {
				got = append(got, it.Status)
			}
			if len(items) != len(tc.status) || !strings.Contains(items[0].Detail, tc.want) {
				t.Fatalf("Headroom: %+v, want statuses %v with %q", items, tc.status, tc.want)
			}
			for i := range got {
				if got[i] != tc.status[i] {
					t.Fatalf("statuses %v, want %v", got, tc.status)
				}
				if got[i] != OK && items[i].Fix == "" {
					t.Fatalf("item %d says nothing to do: %+v", i, items[i])
				}
			}
		})
	}
	if it := Headroom(nil); it[0].Status != Skip {
		t.Fatalf("no pre-flight: %+v", it)
	}
}

// The warm pool's row: a pool.size the quotas cannot hold with a requester's cluster fails,
// naming the quota and the size that fits; one that fits says the room left.
func TestPoolFit(t *testing.T) {
	pf := preflight.Decide(preflight.Input{Needs: []preflight.Need{{Key: "PLAY2-NANO", What: "PLAY2-NANO Instances", Count: 3}},
		Overrides: map[string]int{"PLAY2-NANO": 9}, Usage: map[string]int{"PLAY2-NANO": 3}})
	for _, tc := range []struct {
		name         string
		pf           *preflight.Result
		size, spares int
		status       Status
		says         string
	}{
		{name: "no pool", pf: &pf, size: 0, status: Skip, says: "pool.size 0"},
		{name: "one running, one more and a requester fit", pf: &pf, size: 2, spares: 1, status: OK, says: "room for 2 more clusters"},
		{name: "three do not fit with a requester", pf: &pf, size: 3, status: Fail, says: "PLAY2-NANO Instances: limit 9"},
		{name: "no pre-flight", size: 1, status: Skip, says: "no pre-flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			items := PoolFit(tc.pf, tc.size, tc.spares, ".github/poc.yml")
			if len(items) != 1 || items[0].Status != tc.status || !strings.Contains(items[0].Detail, tc.says) {
				t.Fatalf("items %+v: want %v saying %q", items, tc.status, tc.says)
			}
			if tc.status == Fail && !strings.Contains(items[0].Fix, "pool.size to 1 at most") {
				t.Errorf("fix %q: want the size that fits", items[0].Fix)
			}
		})
	}
}
