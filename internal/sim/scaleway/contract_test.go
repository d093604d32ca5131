package scaleway

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1alpha1"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
)

// The tests of this file pin the behaviours of the contract table in doc.go
// that other clients' recordings show and that the emulator once got wrong.

// TestServerTypesPaged: products/servers is a realistically long list paged
// at 50, so a caller that forgets to page misses PLAY2-NANO.
func TestServerTypesPaged(t *testing.T) {
	_, c, url := startEmu(t, Options{})
	inst := instance.NewAPI(c)
	first, err := inst.ListServersTypes(&instance.ListServersTypesRequest{Zone: zone})
	if err != nil {
		t.Fatal(err)
	}
	if first.TotalCount != 135 || len(first.Servers) != 50 {
		t.Errorf("page 1: %d types of %d, want 50 of 135", len(first.Servers), first.TotalCount)
	}
	if _, ok := first.Servers["PLAY2-NANO"]; ok {
		t.Errorf("PLAY2-NANO on page 1: the recorded list has it on page 2")
	}
	all, err := inst.ListServersTypes(&instance.ListServersTypesRequest{Zone: zone}, scw.WithAllPages())
	if err != nil {
		t.Fatal(err)
	}
	nano, ok := all.Servers["PLAY2-NANO"]
	if len(all.Servers) != 135 || !ok || nano.HourlyPrice != 0.02754 {
		t.Errorf("all pages: %d types, PLAY2-NANO %+v", len(all.Servers), nano)
	}
	resp := rawGet(t, url+"/instance/v1/zones/fr-par-1/products/servers?page=3")
	if got, want := resp.Header.Get("Link"), `</products/servers?page=1&per_page=50&>; rel="first",</products/servers?page=2&per_page=50&>; rel="previous",`; !strings.HasPrefix(got, want) ||
		!strings.Contains(got, `rel="previous"`) || !strings.Contains(got, `rel="last"`) || strings.Contains(got, `rel="next"`) {
		t.Errorf("page 3 Link %q", got)
	}
	if resp.Header.Get("X-Total-Count") != "135" {
		t.Errorf("X-Total-Count %q", resp.Header.Get("X-Total-Count"))
	}
}

func rawGet(t *testing.T, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("X-Auth-Token", testSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Header.Set("X-Test-Body", string(b))
	return resp
}

// TestRebootWhileDelivering: the recorded answer is 400 {"message":"Server is not delivered"}.
func TestRebootWhileDelivering(t *testing.T) {
	clk := newClock()
	_, c, _ := startEmu(t, Options{Clock: clk.Now})
	bm := baremetal.NewAPI(c)
	s, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: "fr-par-2", OfferID: offers[0].id, Name: "edge-01"})
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range []func() error{
		func() error {
			_, err := bm.RebootServer(&baremetal.RebootServerRequest{Zone: "fr-par-2", ServerID: s.ID, BootType: "rescue"})
			return err
		},
		func() error {
			_, err := bm.StopServer(&baremetal.StopServerRequest{Zone: "fr-par-2", ServerID: s.ID})
			return err
		},
	} {
		err := action()
		var re *scw.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusBadRequest || re.Message != "Server is not delivered" {
			t.Errorf("action while delivering: %v (%T), want 400 Server is not delivered", err, err)
		}
	}
}

// TestSameSSHKeyTwice: the real API registers the same public key twice in a project.
func TestSameSSHKeyTwice(t *testing.T) {
	_, c, _ := startEmu(t, Options{})
	ia := iam.NewAPI(c)
	const pk = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICJEoOOgQBLJPs4g/XcPTKT82NywNPpxeuA20FlOPlpO"
	var ids []string
	for _, name := range []string{"a", "b"} {
		k, err := ia.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: name, ProjectID: testProject, PublicKey: pk})
		if err != nil {
			t.Fatalf("key %s: %v", name, err)
		}
		ids = append(ids, k.ID)
	}
	if ids[0] == ids[1] {
		t.Fatalf("both creates returned key %s", ids[0])
	}
	l, err := ia.ListSSHKeys(&iam.ListSSHKeysRequest{ProjectID: scw.StringPtr(testProject)}, scw.WithAllPages())
	if err != nil || l.TotalCount != 2 {
		t.Fatalf("list: %v, %v; want both keys", l, err)
	}
}

// TestUserDataMissingKey: 404 with an empty text/plain body, no JSON error.
func TestUserDataMissingKey(t *testing.T) {
	clk := newClock()
	e, c, url := startEmu(t, Options{Clock: clk.Now, Objects: objs()})
	wd := makeWorld(t, e, c, clk)
	resp := rawGet(t, url+"/instance/v1/zones/fr-par-1/servers/"+wd.srv+"/user_data/happy")
	if resp.StatusCode != http.StatusNotFound || resp.Header.Get("X-Test-Body") != "" || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("missing key: %d %q body %q, want 404 text/plain with an empty body", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("X-Test-Body"))
	}
}

// TestDefaultSecurityRules: the six SMTP drop rules exist only with
// enable_default_security.
func TestDefaultSecurityRules(t *testing.T) {
	_, c, _ := startEmu(t, Options{})
	inst := instance.NewAPI(c)
	tests := []struct {
		name  string
		eds   *bool
		rules int
	}{
		{"disabled", scw.BoolPtr(false), 0},
		{"enabled", scw.BoolPtr(true), 6},
		{"default", nil, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g, err := inst.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: zone, Name: "sg-" + tc.name, EnableDefaultSecurity: tc.eds,
				InboundDefaultPolicy: "drop", OutboundDefaultPolicy: "accept", Stateful: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := inst.ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{Zone: zone, SecurityGroupID: g.SecurityGroup.ID}, scw.WithAllPages())
			if err != nil || len(r.Rules) != tc.rules {
				t.Fatalf("rules %d (%v), want %d", len(r.Rules), err, tc.rules)
			}
			set, err := inst.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: zone, SecurityGroupID: g.SecurityGroup.ID,
				Rules: []*instance.SetSecurityGroupRulesRequestRule{{Action: "accept", Protocol: "TCP", Direction: "inbound",
					IPRange: scw.IPNet{IPNet: mustCIDR("10.0.0.1/32")}, DestPortFrom: scw.Uint32Ptr(6443)}}})
			if err != nil || len(set.Rules) != tc.rules+1 {
				t.Fatalf("after set: %d rules (%v), want %d", len(set.Rules), err, tc.rules+1)
			}
		})
	}
}

// TestVolumeInUseAfterServerDelete: after the DELETE of a stopped server its
// SBS volume stays in_use a few seconds, then becomes available; after a
// terminate it is available as soon as the server is gone.
func TestVolumeInUseAfterServerDelete(t *testing.T) {
	tests := []struct {
		name     string
		del      func(inst *instance.API, clk *fakeClock, id string) error
		wantBusy bool
	}{
		{"delete stopped server", func(inst *instance.API, _ *fakeClock, id string) error {
			return inst.DeleteServer(&instance.DeleteServerRequest{Zone: zone, ServerID: id})
		}, true},
		{"terminate", func(inst *instance.API, clk *fakeClock, id string) error {
			if _, err := inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: id, Action: "poweron"}); err != nil {
				return err
			}
			clk.Advance(DefaultLatency().Poweron)
			if _, err := inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: id, Action: "terminate"}); err != nil {
				return err
			}
			clk.Advance(DefaultLatency().Terminate)
			return nil
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			e, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs()})
			wd := makeWorld(t, e, c, clk)
			inst, blk := instance.NewAPI(c), block.NewAPI(c)
			if err := tc.del(inst, clk, wd.srv); err != nil {
				t.Fatal(err)
			}
			if _, err := inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: wd.srv}); !isNotFound(err) {
				t.Fatalf("server still there: %v", err)
			}
			if tc.wantBusy {
				v, err := blk.GetVolume(&block.GetVolumeRequest{Zone: zone, VolumeID: wd.vol})
				if err != nil || v.Status != "in_use" {
					t.Fatalf("volume right after the server went: %v %v, want in_use", v, err)
				}
				if err := blk.DeleteVolume(&block.DeleteVolumeRequest{Zone: zone, VolumeID: wd.vol}); !isPrecondition(err) {
					t.Fatalf("delete of the in_use volume: %v, want resource_still_in_use", err)
				}
				clk.Advance(DefaultLatency().VolumeDetach)
			}
			v, err := blk.GetVolume(&block.GetVolumeRequest{Zone: zone, VolumeID: wd.vol})
			if err != nil || v.Status != "available" || len(v.References) != 0 {
				t.Fatalf("volume after the detach: %+v %v, want available without references", v, err)
			}
		})
	}
}

func isNotFound(err error) bool {
	var nf *scw.ResourceNotFoundError
	return errors.As(err, &nf)
}

// Register row dns-comment: the comment written comes back in the PATCH answer and the listing
// (echoed), or neither carries it (dropped, every public recording's comment: null).
func TestDNSCommentByReading(t *testing.T) {
	for _, reading := range assume.MustLookup(assume.DNSComment).Values() {
		t.Run(reading, func(t *testing.T) {
			_, c, _ := startEmu(t, Options{Readings: assume.Readings{assume.DNSComment: reading}})
			dom := domain.NewAPI(c)
			comment := "pocbot-cluster=x-1"
			res, err := dom.UpdateDNSZoneRecords(&domain.UpdateDNSZoneRecordsRequest{DNSZone: "example.com", ReturnAllRecords: scw.BoolPtr(false),
				Changes: []*domain.RecordChange{{Add: &domain.RecordChangeAdd{Records: []*domain.Record{{Name: "api", Type: "A", Data: "127.0.0.9", TTL: 60, Comment: &comment}}}}}})
			if err != nil {
				t.Fatal(err)
			}
			l, err := dom.ListDNSZoneRecords(&domain.ListDNSZoneRecordsRequest{DNSZone: "example.com"}, scw.WithAllPages())
			if err != nil || len(l.Records) != 1 || len(res.Records) != 1 || l.Records[0].Name != "api" {
				t.Fatalf("records %+v, answer %+v (%v)", l, res, err)
			}
			for _, got := range []*string{res.Records[0].Comment, l.Records[0].Comment} {
				if echoed := got != nil && *got == comment; echoed != (reading == "echoed") {
					t.Errorf("comment %v under %s", got, reading)
				}
			}
		})
	}
}

// The Scaleway rows the emulator plays itself: the worker offer's stock, its delivery time, a
// PATCH while it is delivered, and the longest tag.
func TestScalewayReadings(t *testing.T) {
	offer := func(t *testing.T, rs assume.Readings) (*Emulator, *scw.Client, *baremetal.Offer) {
		e, c, _ := startEmu(t, Options{Readings: rs, TimeFactor: 0.001})
		res, err := baremetal.NewAPI(c).ListOffers(&baremetal.ListOffersRequest{Zone: zone}, scw.WithAllPages())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Offers {
			if o.Name == "EM-A116X-SSD" {
				return e, c, o
			}
		}
		t.Fatal("no EM-A116X-SSD")
		return nil, nil, nil
	}
	for _, reading := range assume.MustLookup(assume.EMStock).Values() {
		if _, _, o := offer(t, assume.Readings{assume.EMStock: reading}); string(o.Stock) != reading {
			t.Errorf("em-stock=%s: the offer lists %s", reading, o.Stock)
		}
	}
	for _, tc := range []struct {
		delivery string
		want     time.Duration
	}{{"fast", 15 * time.Second}, {"recorded", 287 * time.Second}, {"slow", 30 * time.Minute}} {
		if e := New(Options{Readings: assume.Readings{assume.EMDelivery: tc.delivery}}); e.lat.BMDelivery != tc.want {
			t.Errorf("em-delivery=%s: %v, want %v", tc.delivery, e.lat.BMDelivery, tc.want)
		}
	}
	for _, reading := range assume.MustLookup(assume.EMPatchDelivering).Values() {
		_, c, o := offer(t, assume.Readings{assume.EMPatchDelivering: reading, assume.EMDelivery: "slow"})
		bm := baremetal.NewAPI(c)
		s, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: zone, OfferID: o.ID, Name: "w", Tags: []string{"a"}, ProjectID: scw.StringPtr(testProject)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bm.UpdateServer(&baremetal.UpdateServerRequest{Zone: zone, ServerID: s.ID, Tags: &[]string{"b"}})
		if (err == nil) != (reading == "accepted") {
			t.Errorf("em-patch-delivering=%s: PATCH while delivering answered %v", reading, err)
		}
	}
	for _, tc := range []struct {
		reading string
		ok70    bool
		ok71    bool
	}{{"70", true, false}, {"longer", true, true}, {"shorter", false, false}} {
		_, c, _ := startEmu(t, Options{Readings: assume.Readings{assume.TagLength: tc.reading}})
		for n, want := range map[int]bool{70: tc.ok70, 71: tc.ok71} {
			_, err := instance.NewAPI(c).CreateIP(&instance.CreateIPRequest{Zone: zone, Project: scw.StringPtr(testProject), Tags: []string{strings.Repeat("t", n)}})
			if (err == nil) != want {
				t.Errorf("tag-length=%s: a %d-character tag answered %v", tc.reading, n, err)
			}
		}
	}
}

func mustCIDR(s string) net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return *n
}

// fixturesPace is the pace of the shared fixtures' own recordings where it
// differs from the default profile: their terminates were over in 5-6 s.
var fixturesPace = Latency{Terminate: 5 * time.Second}
