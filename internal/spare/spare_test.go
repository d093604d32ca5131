package spare

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

var now = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC) // a Monday

// ready is a fresh, healthy spare of acme/shop built an hour ago.
func ready(name string) Record {
	return Record{Name: name, Repository: "acme/shop", Phase: lifecycle.PhaseReady, Created: now.Add(-75 * time.Minute),
		Ready: now.Add(-time.Hour), Checked: now.Add(-time.Hour), Stale: now.Add(23 * time.Hour), Talos: "v1.13.11", Kubernetes: "1.33.6"}
}

func TestRecordRoundTrip(t *testing.T) {
	r := ready("spare-abcdefgh")
	r.ClaimedBy, r.ClaimedAt, r.Shared, r.Unhealthy = "acme-shop-12", now, true, "pod-network: probe failed"
	h := statestore.Header{Cluster: r.Name, Repository: r.Repository, Created: r.Created, Labels: map[string]string{"keep": "true"}}
	r.Into(&h)
	if h.Kind != Kind || h.Phase != "ready" || !h.Expires.Equal(r.Stale) || h.Labels["keep"] != "true" {
		t.Fatalf("Into wrote %+v", h)
	}
	got, err := Of(h)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	h.Labels[labelReady] = "yesterday"
	if _, err := Of(h); err == nil || !strings.Contains(err.Error(), "spare_ready") {
		t.Errorf("a malformed label is an error naming it, got %v", err)
	}
	r.ClaimedBy, r.ClaimedAt = "", time.Time{}
	r.Into(&h)
	if _, ok := h.Labels[labelClaimedBy]; ok {
		t.Error("a released claim leaves its label")
	}
}

func TestNewName(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		n := NewName()
		if err := provision.ValidateClusterID(n); err != nil {
			t.Fatal(err)
		}
		if last := n[len(n)-1]; last >= '0' && last <= '9' {
			t.Fatalf("%s ends with a digit, as an issue's cluster name does", n)
		}
		if seen[n] {
			t.Fatalf("%s drawn twice", n)
		}
		seen[n] = true
	}
}

func spec() provision.Spec {
	s := provision.DefaultSpec()
	s.ImageBucket = "images"
	return s
}

func cand(r Record, mod func(*provision.Spec)) Candidate {
	s := spec()
	if mod != nil {
		mod(&s)
	}
	return Candidate{Record: r, Spec: &s}
}

// Which spare a claim takes: the freshest that is claimable, offered and of the asked spec, and
// why every other is not.
func TestChoose(t *testing.T) {
	want := Want{Spec: spec(), Repository: "acme/shop", Kubernetes: "1.33.6"}
	older := ready("spare-older")
	older.Ready = now.Add(-5 * time.Hour)
	tests := []struct {
		name  string
		cands []Candidate
		want  func(*Want)
		take  string // "" : cold
		why   string // in the choice's words
		place []string
	}{
		{name: "no spare", why: ColdNoSpare},
		{name: "cold asked", cands: []Candidate{cand(ready("spare-a"), nil)}, want: func(w *Want) { w.Cold = true }, why: ColdAsked},
		{name: "one spare", cands: []Candidate{cand(ready("spare-a"), nil)}, take: "spare-a", why: "claimed a warm spare (age 1.0 h): spare-a"},
		{name: "a state written before service_account_key is rsa", cands: []Candidate{cand(ready("spare-a"), func(s *provision.Spec) { s.ServiceAccountKey = "rsa" })},
			want: func(w *Want) { w.Spec.ServiceAccountKey = "" }, take: "spare-a"},
		{name: "the freshest", cands: []Candidate{cand(older, nil), cand(ready("spare-b"), nil)}, take: "spare-b"},
		{name: "repository names are case-insensitive", cands: []Candidate{cand(ready("spare-a"), nil)},
			want: func(w *Want) { w.Repository = "Acme/Shop" }, take: "spare-a"},
		{name: "building", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Phase = lifecycle.PhaseProvisioning; return r }(), nil)},
			why: "spare-a building since 08:45 UTC"},
		{name: "claimed", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.ClaimedBy = "acme-shop-3"; return r }(), nil)},
			why: "claimed by acme-shop-3"},
		{name: "unhealthy", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Unhealthy = "nodes: 3 of 4 Ready"; return r }(), nil)},
			why: "failed its health check at 09:00 UTC: nodes: 3 of 4 Ready"},
		{name: "stale", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Stale = now; return r }(), nil)},
			why: "stale: built 2026-12-07 09:00 UTC, past pool.max_age"},
		{name: "another Kubernetes", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Kubernetes = "1.33.5"; return r }(), nil)},
			why: "runs Kubernetes 1.33.5, this bot pins 1.33.6"},
		{name: "another repository's, not shared", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Repository = "acme/web"; return r }(), nil)},
			want: func(w *Want) { w.Share = true }, why: "belongs to acme/web, which does not share its spares"},
		{name: "another repository's, shared, asker not sharing", cands: []Candidate{cand(func() Record {
			r := ready("spare-a")
			r.Repository, r.Shared = "acme/web", true
			return r
		}(), nil)}, why: "this repository does not share its spares (pool.share), so it takes none of theirs"},
		{name: "both share", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Repository, r.Shared = "acme/web", true; return r }(), nil)},
			want: func(w *Want) { w.Share = true }, take: "spare-a"},
		{name: "another Talos", cands: []Candidate{cand(ready("spare-a"), nil)}, want: func(w *Want) { w.Spec.TalosVersion = "v1.14.0" },
			why: "was built with talos_version v1.13.11, asked v1.14.0"},
		{name: "another offer, allowed by worker_offers", cands: []Candidate{cand(ready("spare-a"), func(s *provision.Spec) { s.BaremetalOffer = "EM-B112X-SSD" })},
			want: func(w *Want) { w.Offers = []string{"EM-A116X-SSD", "EM-B112X-SSD"} }, take: "spare-a"},
		{name: "another offer", cands: []Candidate{cand(ready("spare-a"), func(s *provision.Spec) { s.BaremetalOffer = "EM-B112X-SSD" })},
			why: "was built with baremetal_offer EM-B112X-SSD, asked EM-A116X-SSD"},
		{name: "admin CIDRs change in place", cands: []Candidate{cand(ready("spare-a"), nil)},
			want: func(w *Want) { w.Spec.AdminCIDRs = []string{"203.0.113.0/24"} }, take: "spare-a", place: []string{"admin_cidrs"}},
		{name: "a DNS zone needs the certificate's SANs", cands: []Candidate{cand(ready("spare-a"), nil)},
			want: func(w *Want) { w.Spec.DNSZone = "poc.example.com" }, why: "has no DNS name; --dns-zone poc.example.com needs the API certificate to name k8s-poc.CLUSTER.poc.example.com"},
		{name: "unreadable state", cands: []Candidate{{Record: ready("spare-a")}}, why: "its state cannot be read"},
		{name: "the unfit skipped, the fit taken", cands: []Candidate{cand(func() Record { r := ready("spare-a"); r.Unhealthy = "x"; return r }(), nil),
			cand(older, nil)}, take: "spare-older"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := want
			if tc.want != nil {
				tc.want(&w)
			}
			c := Choose(tc.cands, w, now)
			got := ""
			if c.Spare != nil {
				got = c.Spare.Name
			}
			if got != tc.take {
				t.Fatalf("took %q, want %q (%s)", got, tc.take, c.Why(now))
			}
			if !strings.Contains(c.Why(now), tc.why) {
				t.Errorf("why %q, want it to contain %q", c.Why(now), tc.why)
			}
			var fields []string
			for _, ch := range c.InPlace {
				fields = append(fields, ch.Field)
			}
			if !reflect.DeepEqual(fields, tc.place) {
				t.Errorf("in place %v, want %v", fields, tc.place)
			}
		})
	}
}
