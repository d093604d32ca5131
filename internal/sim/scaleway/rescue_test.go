package scaleway

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// TestRescueReboot: a rescue reboot installs exactly the keys of ssh_key_ids
// (no others of the project), refuses ids it cannot resolve, and shows
// rescue_server at once, late, or never, as the tests ask.
func TestRescueReboot(t *testing.T) {
	const other = "99999999-2222-4333-8444-555555555555"
	pubs := []string{
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICJEoOOgQBLJPs4g/XcPTKT82NywNPpxeuA20FlOPlpO",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGbJ8vGk0ZZ9oY1ajCrAWzUVSk7oy2v7rJj0Vd8tbmBE",
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOnE0e9j4QeyJ5k1m2y5A5t0vZl0QGrM3gsNJ8o8kG4N",
	}
	for _, tc := range []struct {
		name      string
		opts      Options
		keys      func(ids []string) []string // ssh_key_ids from the ids of pubs (the last in another project)
		wantErr   string
		wantKeys  []int // indexes into pubs
		showAfter time.Duration
		never     bool
	}{
		{name: "the keys given", keys: func(ids []string) []string { return ids[1:2] }, wantKeys: []int{1}},
		{name: "two keys", keys: func(ids []string) []string { return ids[:2] }, wantKeys: []int{0, 1}},
		{name: "no key ids: no key installed", keys: func([]string) []string { return nil }, wantKeys: nil},
		{name: "unknown key id", keys: func([]string) []string { return []string{"00000000-0000-4000-8000-000000000000"} }, wantErr: "ssh_key_ids"},
		{name: "key of another project", keys: func(ids []string) []string { return ids[2:] }, wantErr: "ssh_key_ids"},
		{name: "rescue_server late", opts: Options{RescueServerDelay: 30 * time.Second}, keys: func(ids []string) []string { return ids[:1] }, wantKeys: []int{0}, showAfter: 30 * time.Second},
		{name: "rescue_server never", opts: Options{HideRescueServer: true}, keys: func(ids []string) []string { return ids[:1] }, wantKeys: []int{0}, never: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			var evs []BaremetalEvent
			var mu sync.Mutex
			o := tc.opts
			o.Clock = clk.Now
			o.Hooks.BaremetalBooted = func(ev BaremetalEvent) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }
			e, c, _ := startEmu(t, o)
			bm, ia := baremetal.NewAPI(c), iam.NewAPI(c)
			var ids []string
			for i, p := range pubs {
				project := testProject
				if i == 2 {
					project = other
				}
				k, err := ia.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: "k", ProjectID: project, PublicKey: p})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, k.ID)
			}
			offs, err := bm.ListOffers(&baremetal.ListOffersRequest{Zone: "fr-par-2", SubscriptionPeriod: "hourly", Name: scw.StringPtr("EM-A116X-SSD")})
			if err != nil || len(offs.Offers) == 0 {
				t.Fatalf("offers: %v", err)
			}
			s, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: "fr-par-2", OfferID: offs.Offers[0].ID, Name: "w", ProjectID: scw.StringPtr(testProject)})
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Hour)
			_, err = bm.RebootServer(&baremetal.RebootServerRequest{Zone: "fr-par-2", ServerID: s.ID, BootType: "rescue", SSHKeyIDs: tc.keys(ids)})
			if tc.wantErr != "" {
				var se *scw.InvalidArgumentsError
				if !errors.As(err, &se) || len(se.Details) == 0 || se.Details[0].ArgumentName != tc.wantErr {
					t.Fatalf("reboot: err = %v, want a 400 naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(10 * time.Minute)
			s, _ = bm.GetServer(&baremetal.GetServerRequest{Zone: "fr-par-2", ServerID: s.ID})
			e.advanceAndRunHooks()
			mu.Lock()
			if len(evs) != 2 || evs[1].BootType != "rescue" {
				t.Fatalf("events %+v", evs)
			}
			var got []string
			got = append(got, evs[1].SSHPublicKeys...)
			mu.Unlock()
			var want []string
			for _, i := range tc.wantKeys {
				want = append(want, pubs[i])
			}
			if !slices.Equal(got, want) {
				t.Fatalf("keys installed %q, want %q", got, want)
			}
			if s.Status != "ready" || s.BootType != "rescue" {
				t.Fatalf("server %s/%s, want ready in rescue", s.Status, s.BootType)
			}
			shown := s.RescueServer != nil && s.RescueServer.User == "rescue" && s.RescueServer.Password != ""
			if shown != (tc.showAfter == 0 && !tc.never) {
				t.Fatalf("rescue_server %+v right after the boot", s.RescueServer)
			}
			if tc.showAfter > 0 {
				clk.Advance(tc.showAfter)
				s, _ = bm.GetServer(&baremetal.GetServerRequest{Zone: "fr-par-2", ServerID: s.ID})
				if s.RescueServer == nil || s.RescueServer.Password != evs[1].RescuePassword {
					t.Fatalf("rescue_server %+v %v after the boot, want the rescue password", s.RescueServer, tc.showAfter)
				}
			}
			if tc.never && evs[1].RescuePassword == "" {
				t.Fatal("a hidden rescue_server must still leave the rescue system a password")
			}
		})
	}
}
