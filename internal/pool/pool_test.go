package pool

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	now      = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	imageURL = "https://factory.example/image/abc/v1.13.11/metal-amd64.raw.zst"
	base     = Want{Zone: "fr-par-1", Offer: "EM-A116X-SSD", TalosVersion: "v1.13.11", Schematic: "abc", ImageURL: imageURL,
		Scope: Scope{Repository: "acme/shop"}}
)

// proven is a worker of base's kind, parked by acme/shop an hour ago, its disk re-imaged then.
func proven() Worker {
	return Worker{ServerID: "srv", Zone: base.Zone, Offer: base.Offer, TalosVersion: base.TalosVersion, Schematic: base.Schematic,
		Disk: "/dev/sda", Repository: "acme/shop", ParkedFrom: "acme-shop-1", ParkedAt: now.Add(-time.Hour), ParkedUntil: now.Add(time.Hour),
		Reimage: &Reimage{ImageURL: imageURL, SHA256: strings.Repeat("ab", 32), Bytes: 1 << 30, Disk: "/dev/sda", At: now.Add(-time.Hour)}}
}

// Which parked workers an up may be offered (issue 36: a worker parked by one repository goes to
// another only when both share, and only with a disk proven written again from the pinned image).
// Before the trust boundaries every row but "another zone", "claimed" and "expired" matched.
func TestMatches(t *testing.T) {
	for _, tt := range []struct {
		name string
		w    func(*Worker)
		want func(*Want)
		ok   bool
	}{
		{"same repository", nil, nil, true},
		{"repository names are case-insensitive", func(w *Worker) { w.Repository = "Acme/Shop" }, nil, true},
		{"another repository", func(w *Worker) { w.Repository = "evil/corp" }, nil, false},
		{"another repository that shares, to one that does not", func(w *Worker) { w.Repository, w.Shared = "evil/corp", true }, nil, false},
		{"another repository that does not share, to one that does", func(w *Worker) { w.Repository = "evil/corp" }, func(q *Want) { q.Scope.Share = true }, false},
		{"both share", func(w *Worker) { w.Repository, w.Shared = "other/repo", true }, func(q *Want) { q.Scope.Share = true }, true},
		{"parked by no repository, asked by one", func(w *Worker) { w.Repository = "" }, nil, false},
		{"no re-image recorded", func(w *Worker) { w.Reimage = nil }, nil, false},
		{"re-imaged from another image", func(w *Worker) { w.Reimage.ImageURL = "https://factory.example/image/evil/metal.raw.zst" }, nil, false},
		{"re-image without its hash", func(w *Worker) { w.Reimage.SHA256 = "" }, nil, false},
		{"re-image of another disk", func(w *Worker) { w.Reimage.Disk = "/dev/sdb" }, nil, false},
		{"re-imaged long before the park", func(w *Worker) { w.Reimage.At = w.ParkedAt.Add(-48 * time.Hour) }, nil, false},
		{"another zone", nil, func(q *Want) { q.Zone = "nl-ams-1" }, false},
		{"claimed", func(w *Worker) { w.ClaimedBy = "acme-shop-2" }, nil, false},
		{"expired", func(w *Worker) { w.ParkedUntil = now }, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, q := proven(), base
			if tt.w != nil {
				w.Reimage = new(*w.Reimage)
				tt.w(&w)
			}
			if tt.want != nil {
				tt.want(&q)
			}
			if got := w.Matches(q, now); got != tt.ok {
				t.Fatalf("Matches = %v, want %v (proof: %v)", got, tt.ok, w.Proven(q.ImageURL))
			}
		})
	}
}

// A cluster's rerun takes back its own claim (its first run stopped after the claim); another
// cluster does not get a claimed entry. Before, Claim skipped every claimed entry and the rerun
// ordered a second worker while the claimed one stayed parked and billed.
func TestClaimTakesBackItsOwnClaim(t *testing.T) {
	other := proven()
	other.ServerID = "srv-2"
	d := Doc{Workers: []Worker{proven(), other}}
	first, err := d.Claim("acme-shop-2", base, now)
	if err != nil || first.ServerID != "srv" {
		t.Fatalf("first claim = %q, %v", first.ServerID, err)
	}
	again, err := d.Claim("acme-shop-2", base, now.Add(time.Minute))
	if err != nil || again.ServerID != "srv" {
		t.Fatalf("the claimer's rerun got %q, %v; want its own srv back", again.ServerID, err)
	}
	if third, err := d.Claim("acme-shop-3", base, now); err != nil || third.ServerID != "srv-2" {
		t.Fatalf("another cluster's claim = %q, %v; want the unclaimed srv-2", third.ServerID, err)
	}
	if _, err := d.Claim("acme-shop-4", base, now); !errors.Is(err, ErrNone) {
		t.Fatalf("a claim with every entry claimed: %v, want ErrNone", err)
	}
}

// A claim older than the grace is stale: the reaper removes its server.
func TestStaleClaims(t *testing.T) {
	young, old, expired, free := proven(), proven(), proven(), proven()
	young.ServerID, young.ClaimedBy, young.ClaimedAt = "young", "c", now.Add(-time.Minute)
	old.ServerID, old.ClaimedBy, old.ClaimedAt = "old", "c", now.Add(-time.Hour)
	expired.ServerID, expired.ClaimedBy, expired.ClaimedAt, expired.ParkedUntil = "expired", "c", now.Add(-time.Hour), now
	free.ServerID = "free"
	got := Doc{Workers: []Worker{young, old, expired, free}}.StaleClaims(now, 30*time.Minute)
	if len(got) != 1 || got[0].ServerID != "old" {
		t.Fatalf("stale claims = %+v, want old only (the expired one is Expired's)", got)
	}
}
