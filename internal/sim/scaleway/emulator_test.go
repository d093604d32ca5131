package scaleway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/clock"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	block "github.com/scaleway/scaleway-sdk-go/api/block/v1alpha1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

const (
	testSecret  = "11111111-2222-3333-4444-555555555555"
	testProject = "105bdce1-64c0-48ab-899d-868455867ecf"
	zone        = scw.Zone("fr-par-1")
)

// fakeClock is a manual clock; Advance moves it.
type fakeClock = clock.Manual

func newClock() *fakeClock { return clock.NewManual(time.Date(2026, 10, 17, 12, 0, 0, 0, time.UTC)) }

// memObjects is an Objects in one region.
type memObjects struct {
	region string
	objs   map[string][]byte // bucket/key
}

func (m memObjects) Open(_ context.Context, region, bucket, key string) (io.ReadCloser, int64, error) {
	b, ok := m.objs[bucket+"/"+key]
	if !ok {
		return nil, 0, fmt.Errorf("no such key %s/%s", bucket, key)
	}
	if region != m.region {
		return nil, 0, fmt.Errorf("bucket %s is in region %s, not %s", bucket, m.region, region)
	}
	return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
}

func qcow2(virtual uint64) []byte {
	h := make([]byte, 64)
	copy(h, qcow2Magic)
	binary.BigEndian.PutUint32(h[4:], 3)
	binary.BigEndian.PutUint64(h[24:], virtual)
	return h
}

// startEmu starts an emulator on loopback and returns an SDK client for it.
func startEmu(t *testing.T, o Options) (*Emulator, *scw.Client, string) {
	t.Helper()
	if o.SecretKey == "" {
		o.SecretKey = testSecret
	}
	e := New(o)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	url, stop, err := e.Start(ctx)
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(stop)
	c, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", o.SecretKey),
		scw.WithDefaultProjectID(testProject), scw.WithDefaultZone(zone), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatalf("sdk client: %v", err)
	}
	return e, c, url
}

func TestAuth(t *testing.T) {
	_, _, url := startEmu(t, Options{})
	tests := []struct {
		name, token string
		want        int
	}{
		{"no token", "", 401},
		{"wrong token", "nope", 401},
		{"right token", testSecret, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", url+"/instance/v1/zones/nl-ams-3/ips", nil)
			if tc.token != "" {
				req.Header.Set("X-Auth-Token", tc.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.want, body)
			}
			if tc.want == 401 && !strings.Contains(string(body), `"denied_authentication"`) {
				t.Fatalf("401 body %s lacks denied_authentication", body)
			}
		})
	}
	// The SDK decodes the 401 into its typed error.
	c, _ := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWXXXXXXXXXXXXXXXXX", "00000000-0000-0000-0000-000000000000"))
	_, err := instance.NewAPI(c).ListIPs(&instance.ListIPsRequest{Zone: zone})
	var de *scw.DeniedAuthenticationError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v (%T), want DeniedAuthenticationError", err, err)
	}
}

// instanceWorld creates IP, group, snapshot, volume, server (stopped) and
// returns their ids.
type world struct {
	ip, sg, snap, vol, srv string
}

func makeWorld(t *testing.T, e *Emulator, c *scw.Client, clk *fakeClock) world {
	t.Helper()
	inst := instance.NewAPI(c)
	blk := block.NewAPI(c)
	ip, err := inst.CreateIP(&instance.CreateIPRequest{Zone: zone, Tags: []string{"pocbot", "pocbot-cluster=t"}})
	if err != nil {
		t.Fatalf("create ip: %v", err)
	}
	sg, err := inst.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: zone, Name: "t-sg", Stateful: true,
		InboundDefaultPolicy: "drop", OutboundDefaultPolicy: "accept", EnableDefaultSecurity: scw.BoolPtr(false)})
	if err != nil {
		t.Fatalf("create sg: %v", err)
	}
	snap, err := blk.ImportSnapshotFromObjectStorage(&block.ImportSnapshotFromObjectStorageRequest{Zone: zone, Bucket: "img", Key: "talos.qcow2", Name: "talos", ProjectID: testProject})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	clk.Advance(213 * time.Second)
	vol, err := blk.CreateVolume(&block.CreateVolumeRequest{Zone: zone, Name: "t-root", ProjectID: testProject, PerfIops: scw.Uint32Ptr(5000),
		FromSnapshot: &block.CreateVolumeRequestFromSnapshot{SnapshotID: snap.ID}})
	if err != nil {
		t.Fatalf("volume: %v", err)
	}
	clk.Advance(6 * time.Second)
	srv, err := inst.CreateServer(&instance.CreateServerRequest{Zone: zone, Name: "t-cp-1", CommercialType: "PLAY2-NANO",
		Volumes:   map[string]*instance.VolumeServerTemplate{"0": {ID: &vol.ID, VolumeType: "sbs_volume"}},
		PublicIPs: &[]string{ip.IP.ID}, SecurityGroup: &sg.SecurityGroup.ID, Tags: []string{"pocbot"}})
	if err != nil {
		t.Fatalf("server: %v", err)
	}
	return world{ip.IP.ID, sg.SecurityGroup.ID, snap.ID, vol.ID, srv.Server.ID}
}

func objs() memObjects {
	return memObjects{region: "fr-par", objs: map[string][]byte{
		"img/talos.qcow2": qcow2(1 << 30),
		"img/raw.img":     []byte("not a qcow2 image at all, just bytes"),
	}}
}

func TestDeletionRules(t *testing.T) {
	clk := newClock()
	var running []InstanceEvent
	var mu sync.Mutex
	e, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs(), Hooks: Hooks{InstanceRunning: func(ev InstanceEvent) {
		mu.Lock()
		running = append(running, ev)
		mu.Unlock()
	}}})
	inst := instance.NewAPI(c)
	blk := block.NewAPI(c)
	wd := makeWorld(t, e, c, clk)
	if _, err := inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: wd.srv, Action: "poweron"}); err != nil {
		t.Fatalf("poweron: %v", err)
	}
	clk.Advance(6 * time.Second)
	got, err := inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: wd.srv})
	if err != nil || got.Server.State != "running" {
		t.Fatalf("server state %v err %v, want running", got, err)
	}
	mu.Lock()
	if len(running) != 1 || len(running[0].PublicIPs) != 1 || !strings.HasPrefix(running[0].PublicIPs[0], "127.") || running[0].PublicIPs[0] == "127.0.0.1" {
		t.Fatalf("InstanceRunning events %+v, want one with a 127.x loopback IP", running)
	}
	mu.Unlock()

	tests := []struct {
		name string
		do   func() error
		want func(error) bool
	}{
		{"running server", func() error {
			return inst.DeleteServer(&instance.DeleteServerRequest{Zone: zone, ServerID: wd.srv})
		}, isInvalidRequest},
		{"attached ip", func() error { return inst.DeleteIP(&instance.DeleteIPRequest{Zone: zone, IP: wd.ip}) }, isInvalidRequest},
		{"in-use volume", func() error { return blk.DeleteVolume(&block.DeleteVolumeRequest{Zone: zone, VolumeID: wd.vol}) }, isPrecondition},
		{"group used by server", func() error {
			return inst.DeleteSecurityGroup(&instance.DeleteSecurityGroupRequest{Zone: zone, SecurityGroupID: wd.sg})
		}, isInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if !tc.want(err) {
				t.Fatalf("err = %v (%T): wrong or no refusal", err, err)
			}
		})
	}
	// Terminate: the server goes, IP detached (kept), volume available.
	if _, err := inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: wd.srv, Action: "terminate"}); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	got, _ = inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: wd.srv})
	if got == nil || got.Server.State != "stopping" || got.Server.StateDetail != "terminating" {
		t.Fatalf("after terminate: %+v, want stopping/terminating", got)
	}
	clk.Advance(DefaultLatency().Terminate + time.Second)
	_, err = inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: wd.srv})
	var nf *scw.ResourceNotFoundError
	if !errors.As(err, &nf) || nf.Resource != "instance_server" {
		t.Fatalf("after terminate: err %v, want instance_server not found", err)
	}
	for _, del := range []func() error{
		func() error { return inst.DeleteIP(&instance.DeleteIPRequest{Zone: zone, IP: wd.ip}) },
		func() error { return blk.DeleteVolume(&block.DeleteVolumeRequest{Zone: zone, VolumeID: wd.vol}) },
		func() error {
			return inst.DeleteSecurityGroup(&instance.DeleteSecurityGroupRequest{Zone: zone, SecurityGroupID: wd.sg})
		},
		func() error { return blk.DeleteSnapshot(&block.DeleteSnapshotRequest{Zone: zone, SnapshotID: wd.snap}) },
	} {
		if err := del(); err != nil {
			t.Fatalf("delete after terminate: %v", err)
		}
	}
	if inv := e.Inventory(); len(inv) != 0 {
		t.Fatalf("inventory not empty: %+v", inv)
	}
}

func isInvalidRequest(err error) bool {
	var re *scw.ResponseError
	return errors.As(err, &re) && re.StatusCode == 400 && re.Type == "invalid_request_error"
}

func isPrecondition(err error) bool {
	var pf *scw.PreconditionFailedError
	return errors.As(err, &pf) && pf.Precondition == "resource_still_in_use"
}

func TestStoppedServerDeletable(t *testing.T) {
	clk := newClock()
	e, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs()})
	inst := instance.NewAPI(c)
	wd := makeWorld(t, e, c, clk)
	if err := inst.DeleteServer(&instance.DeleteServerRequest{Zone: zone, ServerID: wd.srv}); err != nil {
		t.Fatalf("delete stopped server: %v", err)
	}
	ip, err := inst.GetIP(&instance.GetIPRequest{Zone: zone, IP: wd.ip})
	if err != nil || ip.IP.State != "detached" || ip.IP.Server != nil {
		t.Fatalf("ip after server delete: %+v %v, want detached", ip, err)
	}
}

func TestBlockRules(t *testing.T) {
	clk := newClock()
	_, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs()})
	blk := block.NewAPI(c)
	size := scw.Size(20_000_000_000)
	tests := []struct {
		name    string
		req     *block.CreateVolumeRequest
		wantErr bool
	}{
		{"neither source", &block.CreateVolumeRequest{Zone: zone, Name: "x", ProjectID: testProject}, true},
		{"both sources", &block.CreateVolumeRequest{Zone: zone, Name: "x", ProjectID: testProject,
			FromEmpty: &block.CreateVolumeRequestFromEmpty{Size: size}, FromSnapshot: &block.CreateVolumeRequestFromSnapshot{SnapshotID: "s"}}, true},
		{"from empty", &block.CreateVolumeRequest{Zone: zone, Name: "x", ProjectID: testProject,
			FromEmpty: &block.CreateVolumeRequestFromEmpty{Size: size}}, false},
		{"bad iops", &block.CreateVolumeRequest{Zone: zone, Name: "x", ProjectID: testProject, PerfIops: scw.Uint32Ptr(7),
			FromEmpty: &block.CreateVolumeRequestFromEmpty{Size: size}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := blk.CreateVolume(tc.req)
			var ia *scw.InvalidArgumentsError
			if tc.wantErr != (err != nil) || (tc.wantErr && !errors.As(err, &ia)) {
				t.Fatalf("err = %v (%T), want error=%v (InvalidArgumentsError)", err, err, tc.wantErr)
			}
		})
	}
	imports := []struct {
		name, bucket, key string
		zone              scw.Zone
		wantErr           bool
	}{
		{"qcow2 ok", "img", "talos.qcow2", "fr-par-1", false},
		{"missing object", "img", "nope.qcow2", "fr-par-1", true},
		{"no qcow2 magic", "img", "raw.img", "fr-par-1", true},
		{"region mismatch", "img", "talos.qcow2", "nl-ams-1", true},
	}
	for _, tc := range imports {
		t.Run("import "+tc.name, func(t *testing.T) {
			s, err := blk.ImportSnapshotFromObjectStorage(&block.ImportSnapshotFromObjectStorageRequest{Zone: tc.zone, Bucket: tc.bucket, Key: tc.key, Name: "n", ProjectID: testProject})
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error=%v", err, tc.wantErr)
			}
			if err == nil && (s.Status != "creating" || s.Size != 1<<30) {
				t.Fatalf("snapshot %+v: want creating with the qcow2 virtual size", s)
			}
		})
	}
}

func TestQuotas(t *testing.T) {
	clk := newClock()
	_, c, _ := startEmu(t, Options{Clock: clk.Now, Quotas: map[string]int{"ips": 2, "security_groups": 0}})
	inst := instance.NewAPI(c)
	for i := 0; i < 2; i++ {
		if _, err := inst.CreateIP(&instance.CreateIPRequest{Zone: zone}); err != nil {
			t.Fatalf("ip %d: %v", i, err)
		}
	}
	_, err := inst.CreateIP(&instance.CreateIPRequest{Zone: zone})
	var qe *scw.QuotasExceededError
	if !errors.As(err, &qe) || len(qe.Details) != 1 || qe.Details[0].Resource != "ips" || qe.Details[0].Quota != 2 {
		t.Fatalf("3rd ip: err %v, want quotas_exceeded ips 2", err)
	}
	_, err = inst.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: zone, Name: "g"})
	if !errors.As(err, &qe) {
		t.Fatalf("sg with quota 0: err %v, want quotas_exceeded", err)
	}
}

func TestPaginationAndFilters(t *testing.T) {
	clk := newClock()
	e, c, url := startEmu(t, Options{Clock: clk.Now})
	inst := instance.NewAPI(c)
	for _, name := range []string{"x-4-cp", "x-42-cp", "x-4-edge"} {
		cluster := strings.Split(name, "-cp")[0]
		cluster = strings.TrimSuffix(cluster, "-edge")
		if _, err := inst.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: zone, Name: name, Tags: []string{"pocbot-cluster=" + cluster}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 7; i++ {
		if _, err := inst.CreateIP(&instance.CreateIPRequest{Zone: zone, Tags: []string{"n"}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("name filter is partial", func(t *testing.T) {
		r, err := inst.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: zone, Name: scw.StringPtr("x-4")})
		if err != nil || r.TotalCount != 3 {
			t.Fatalf("got %v err %v, want 3 groups (partial match)", r, err)
		}
	})
	t.Run("tags filter is exact", func(t *testing.T) {
		r, err := inst.ListSecurityGroups(&instance.ListSecurityGroupsRequest{Zone: zone, Tags: []string{"pocbot-cluster=x-4"}})
		if err != nil || r.TotalCount != 2 {
			t.Fatalf("got %v err %v, want 2 groups", r, err)
		}
	})
	t.Run("instance pages via X-Total-Count", func(t *testing.T) {
		r, err := inst.ListIPs(&instance.ListIPsRequest{Zone: zone, PerPage: scw.Uint32Ptr(3)}, scw.WithAllPages())
		if err != nil || r.TotalCount != 7 || len(r.IPs) != 7 {
			t.Fatalf("all pages: %d ips, total %d, err %v; want 7", len(r.IPs), r.TotalCount, err)
		}
		resp := rawGet(t, url+"/instance/v1/zones/fr-par-1/ips?per_page=3&page=3")
		if resp.Header.Get("X-Total-Count") != "7" || !strings.Contains(resp.Header.Get("Link"), `rel="previous"`) {
			t.Fatalf("headers %v", resp.Header)
		}
	})
	_ = e
}

func TestBaremetalRescue(t *testing.T) {
	clk := newClock()
	var evs []BaremetalEvent
	var mu sync.Mutex
	e, c, _ := startEmu(t, Options{Clock: clk.Now, Stock: map[string]int{"EM-A116X-SSD": 1}, Hooks: Hooks{BaremetalBooted: func(ev BaremetalEvent) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	}}})
	bm := baremetal.NewAPI(c)
	ia := iam.NewAPI(c)
	key, err := ia.CreateSSHKey(&iam.CreateSSHKeyRequest{Name: "k", ProjectID: testProject,
		PublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICJEoOOgQBLJPs4g/XcPTKT82NywNPpxeuA20FlOPlpO someone@example"})
	if err != nil {
		t.Fatalf("ssh key: %v", err)
	}
	if !strings.HasPrefix(key.Fingerprint, "256 MD5:6b:cd:72:8a") || strings.Contains(key.PublicKey, "someone") {
		t.Fatalf("key %+v: want the recorded fingerprint and no comment", key)
	}
	offer := offerNamed(t, bm, "fr-par-2", "EM-A116X-SSD")
	if offer == nil || offer.PricePerHour.Nanos != 77000000 || offer.Stock != "available" && offer.Stock != "low" {
		t.Fatalf("offer %+v: want EM-A116X-SSD at 0.077 €/h in stock", offer)
	}
	s, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: "fr-par-2", OfferID: offer.ID, Name: "edge-01", Tags: []string{"pocbot"}})
	if err != nil || s.Status != "delivering" {
		t.Fatalf("create: %+v %v", s, err)
	}
	if _, err := bm.CreateServer(&baremetal.CreateServerRequest{Zone: "fr-par-2", OfferID: offer.ID, Name: "edge-02"}); err == nil {
		t.Fatalf("second server with stock 1: want out of stock")
	}
	clk.Advance(8*time.Minute + time.Second)
	s, _ = bm.GetServer(&baremetal.GetServerRequest{Zone: "fr-par-2", ServerID: s.ID})
	if s.Status != "ready" || len(s.IPs) != 2 {
		t.Fatalf("after delivery: %+v", s)
	}
	if _, err := bm.RebootServer(&baremetal.RebootServerRequest{Zone: "fr-par-2", ServerID: s.ID, BootType: "rescue", SSHKeyIDs: []string{key.ID}}); err != nil {
		t.Fatalf("reboot rescue: %v", err)
	}
	clk.Advance(4*time.Minute + time.Second)
	s, _ = bm.GetServer(&baremetal.GetServerRequest{Zone: "fr-par-2", ServerID: s.ID})
	if s.BootType != "rescue" || s.RescueServer == nil || s.RescueServer.User == "" || s.RescueServer.Password == "" {
		t.Fatalf("after rescue reboot: %+v", s)
	}
	e.advanceAndRunHooks()
	mu.Lock()
	if len(evs) != 2 || evs[1].BootType != "rescue" || evs[1].RescuePassword != s.RescueServer.Password || len(evs[1].SSHPublicKeys) != 1 ||
		!strings.HasPrefix(evs[1].IP, "127.") {
		t.Fatalf("events %+v", evs)
	}
	mu.Unlock()
	if _, err := bm.DeleteServer(&baremetal.DeleteServerRequest{Zone: "fr-par-2", ServerID: s.ID}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(6 * time.Second)
	if _, err := bm.GetServer(&baremetal.GetServerRequest{Zone: "fr-par-2", ServerID: s.ID}); err == nil {
		t.Fatal("server still there after delete")
	}
}

func TestFaultDeterminism(t *testing.T) {
	run := func(seed int64) []int {
		_, c, _ := startEmu(t, Options{Faults: Faults{Seed: seed, Rate5xx: 0.2, Rate429: 0.2, RetryAfter: 2 * time.Second}})
		inst := instance.NewAPI(c)
		var codes []int
		for i := 0; i < 30; i++ {
			_, err := inst.ListIPs(&instance.ListIPsRequest{Zone: zone})
			var re *scw.ResponseError
			switch {
			case err == nil:
				codes = append(codes, 200)
			case errors.As(err, &re):
				codes = append(codes, re.StatusCode)
			default:
				codes = append(codes, -1)
			}
		}
		return codes
	}
	a, b, other := run(7), run(7), run(8)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("same seed, different faults:\n%v\n%v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(other) {
		t.Fatalf("different seeds, same faults: %v", a)
	}
	n := map[int]int{}
	for _, c := range a {
		n[c]++
	}
	if n[429] == 0 || n[503] == 0 || n[200] == 0 {
		t.Fatalf("codes %v: want a mix of 200, 429, 503", n)
	}
}

func TestFaultBeforeAndAfterEffect(t *testing.T) {
	tests := []struct {
		name        string
		f           Faults
		wantCreated int
	}{
		{"before effect: nothing created", Faults{Seed: 1, PerEndpoint: map[string]float64{"POST /instance/v1/zones/{zone}/ips": 1}}, 0},
		{"after effect: created, answer lost", Faults{Seed: 1, AfterEffectRate: 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, c, _ := startEmu(t, Options{Faults: tc.f})
			_, err := instance.NewAPI(c).CreateIP(&instance.CreateIPRequest{Zone: zone})
			if err == nil {
				t.Fatal("want an error")
			}
			if n := len(e.Inventory()); n != tc.wantCreated {
				t.Fatalf("%d resources, want %d", n, tc.wantCreated)
			}
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	_, _, url := startEmu(t, Options{Faults: Faults{Rate429: 1, RetryAfter: 1500 * time.Millisecond}})
	resp := rawGet(t, url+"/instance/v1/zones/fr-par-1/ips")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("status %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

func TestLatencyScaling(t *testing.T) {
	// Real clock, factor 0.005: a 212 s import takes ~1.06 s.
	_, c, _ := startEmu(t, Options{TimeFactor: 0.005, Objects: objs()})
	blk := block.NewAPI(c)
	start := time.Now()
	s, err := blk.ImportSnapshotFromObjectStorage(&block.ImportSnapshotFromObjectStorageRequest{Zone: zone, Bucket: "img", Key: "talos.qcow2", Name: "t", ProjectID: testProject})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := blk.GetSnapshot(&block.GetSnapshotRequest{Zone: zone, SnapshotID: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == "available" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("import not available after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The lower bound is the claim (the emulator never answers sooner than the scaled profile);
	// the upper one only proves the profile was scaled (unscaled, it would take 212 s), with room
	// for a loaded machine's polling.
	el := time.Since(start)
	if el < 1000*time.Millisecond || el > 4*time.Second {
		t.Fatalf("scaled import took %v, want ≈1.06 s (never under 1 s)", el)
	}
}

func TestUserDataAndHooks(t *testing.T) {
	clk := newClock()
	var deleted []string
	var mu sync.Mutex
	e, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs(), Hooks: Hooks{Deleted: func(kind, id string) {
		mu.Lock()
		deleted = append(deleted, kind)
		mu.Unlock()
	}}})
	inst := instance.NewAPI(c)
	wd := makeWorld(t, e, c, clk)
	cfg := "version: v1alpha1\nmachine: {}\n"
	if err := inst.SetServerUserData(&instance.SetServerUserDataRequest{Zone: zone, ServerID: wd.srv, Key: "cloud-init", Content: strings.NewReader(cfg)}); err != nil {
		t.Fatalf("set user data: %v", err)
	}
	ud := e.UserData("fr-par-1", wd.srv)
	if string(ud["cloud-init"]) != cfg {
		t.Fatalf("UserData = %q", ud)
	}
	r, err := inst.GetServerUserData(&instance.GetServerUserDataRequest{Zone: zone, ServerID: wd.srv, Key: "cloud-init"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	if string(b) != cfg {
		t.Fatalf("GetServerUserData = %q", b)
	}
	if err := inst.DeleteServer(&instance.DeleteServerRequest{Zone: zone, ServerID: wd.srv}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deleted) != 1 || deleted[0] != "instance_server" {
		t.Fatalf("Deleted hook calls %v", deleted)
	}
}

// offerNamed is the hourly Elastic Metal offer called name in zone, as the API lists it (nil when
// none is).
func offerNamed(t *testing.T, bm *baremetal.API, zone scw.Zone, name string) *baremetal.Offer {
	t.Helper()
	offers, err := bm.ListOffers(&baremetal.ListOffersRequest{Zone: zone, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly})
	if err != nil {
		t.Fatal(err)
	}
	var found *baremetal.Offer
	for _, o := range offers.Offers {
		if o.Name == name {
			found = o
		}
	}
	return found
}
