package scaleway

import (
	"slices"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
)

const prodZone = "prod.example.com"

// seedProduction fills the zone with what a real zone serves besides the clusters, under the very
// names the seed gives its clusters (`edge`, `k8s-poc`) — the names the bot used to add its own
// records next to. It returns the records as seeded.
func seedProduction(w *world) []domain.Record {
	for _, r := range []domain.Record{
		{Name: "edge", Type: domain.RecordTypeA, Data: "198.51.100.7", TTL: 300},
		{Name: "k8s-poc", Type: domain.RecordTypeA, Data: "198.51.100.8", TTL: 300},
		{Name: "", Type: domain.RecordTypeMX, Data: "10 mail.example.net.", TTL: 3600},
	} {
		w.emu.SeedDNSRecord(prodZone, r)
	}
	return w.emu.DNSRecords(prodZone)
}

func recordsNamed(rs []domain.Record, name string) []domain.Record {
	var out []domain.Record
	for _, r := range rs {
		if r.Name == name {
			out = append(out, r)
		}
	}
	return out
}

// dnsReadings runs f under each reading of register row dns-comment: the API echoes the comment
// the bot writes, or drops it (comment: null, as in every public recording).
func dnsReadings(t *testing.T, f func(t *testing.T, o scwsim.Options)) {
	for _, r := range assume.MustLookup(assume.DNSComment).Values() {
		t.Run("dns-comment="+r, func(t *testing.T) {
			f(t, scwsim.Options{DNSZones: []string{prodZone}, Readings: assume.Readings{assume.DNSComment: r}})
		})
	}
}

// The attack: `/poc up --dns-zone prod.example.com` turned production's `edge` into a round-robin
// with POC workers, and two clusters in one zone shared `k8s-poc`. Names are now per cluster, and
// what the zone held before is untouched by up and by down, whether the API echoes the bot's
// comment or not (the "done when": under dns-comment=dropped the down removes the
// cluster's records and leaves every other one; the old code recorded no id and leaked them).
func TestDNSNamesArePerClusterAndTheZoneKeepsItsRecords(t *testing.T) {
	t.Parallel()
	dnsReadings(t, testDNSNamesArePerCluster)
}

func testDNSNamesArePerCluster(t *testing.T, o scwsim.Options) {
	ctx := t.Context()
	w := newWorld(t, o)
	before := seedProduction(w)
	spec := testSpec(prodZone)
	states := map[string]*provision.State{}
	for _, id := range []string{"t-1", "t-2"} {
		st, err := provision.NewState(id, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
			t.Fatalf("up %s: %v", id, err)
		}
		states[id] = st
	}
	recs := w.emu.DNSRecords(prodZone)
	for _, prod := range before {
		same := recordsNamed(recs, prod.Name)
		if len(same) != 1 || same[0].ID != prod.ID || same[0].Data != prod.Data {
			t.Errorf("production record %q (%s) became %+v", prod.Name, prod.Data, same)
		}
	}
	for id, st := range states {
		names := spec.DNSNames(id)
		if got := recordsNamed(recs, names.API); len(got) != 3 {
			t.Errorf("%s: %d records %s, want one per control plane", id, len(got), names.API)
		}
		edge := recordsNamed(recs, names.Edge)
		if len(edge) != 1 || edge[0].Data != st.Resources[NodeWorker].Attrs["ipv4"] {
			t.Errorf("%s: edge records %+v, want the worker's address", id, edge)
		}
		if ids := st.Resources[NodeDNS].Attrs[attrDNSRecordIDs]; strings.Count(ids, ",") != 3 {
			t.Errorf("%s: recorded record ids %q, want 4", id, ids)
		}
	}

	// Down of one cluster removes its records only.
	if _, err := w.eng.Down(ctx, w.graph(t, spec), states["t-1"], provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	recs = w.emu.DNSRecords(prodZone)
	if n := len(recordsNamed(recs, spec.DNSNames("t-1").API)) + len(recordsNamed(recs, spec.DNSNames("t-1").Edge)); n != 0 {
		t.Errorf("t-1 left %d records", n)
	}
	if n := len(recordsNamed(recs, spec.DNSNames("t-2").API)); n != 3 {
		t.Errorf("t-1's down touched t-2: %d API records left", n)
	}
	if _, err := w.eng.Down(ctx, w.graph(t, spec), states["t-2"], provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	if a, b := recordKeys(w.emu.DNSRecords(prodZone)), recordKeys(before); !slices.Equal(a, b) {
		t.Errorf("after both downs the zone holds\n %v\nwant what it held before\n %v", a, b)
	}
}

// recordKeys are recs as "id name data", sorted: what a zone is compared by.
func recordKeys(recs []domain.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.ID+" "+r.Name+" "+r.Data)
	}
	slices.Sort(out)
	return out
}

// A name the cluster would use already exists and is not provably its own: up refuses before it
// creates anything (Preflight), names the record and what to do, and the record is left alone —
// also by a down.
// Under either reading of dns-comment, a record without the cluster's data (another address) or
// with another comment is not the cluster's.
func TestDNSRefusesANameItDoesNotOwn(t *testing.T) {
	t.Parallel()
	dnsReadings(t, func(t *testing.T, o scwsim.Options) {
		testDNSRefuses(t, o, domain.Record{Type: domain.RecordTypeA, Data: "192.0.2.66"})
		other := "someone else's"
		testDNSRefuses(t, o, domain.Record{Type: domain.RecordTypeTXT, Data: "127.10.0.4", Comment: &other})
	})
}

func testDNSRefuses(t *testing.T, o scwsim.Options, foreign domain.Record) {
	ctx := t.Context()
	w := newWorld(t, o)
	spec := testSpec(prodZone)
	squat := spec.DNSNames("t-9").Edge
	foreign.Name = squat
	id := w.emu.SeedDNSRecord(prodZone, foreign)
	st, _ := provision.NewState("t-9", spec)
	err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver())
	if err == nil || !strings.Contains(err.Error(), spec.FQDN(squat)) || !strings.Contains(err.Error(), "not this cluster's") ||
		!strings.Contains(err.Error(), "dns_zones") {
		t.Fatalf("up over a foreign record: %v", err)
	}
	if left := w.owned("t-9"); len(left) != 0 {
		t.Errorf("refused up created %v", left)
	}
	if _, err := w.eng.Down(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	if got := recordsNamed(w.emu.DNSRecords(prodZone), squat); len(got) != 1 || got[0].ID != id || got[0].Data != foreign.Data {
		t.Errorf("the foreign record became %+v", got)
	}
}

// A zone that exists in another project, or not at all: refused before anything is created.
func TestDNSZoneOutsideTheProject(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{DNSZones: []string{prodZone}, ForeignDNSZones: []string{"other.example.org"}})
	for zone, want := range map[string]string{"other.example.org": "not reachable", "missing.example.com": "does not exist"} {
		spec := testSpec(zone)
		st, _ := provision.NewState("t-5", spec)
		err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver())
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), zone) {
			t.Errorf("zone %s: %v, want %q", zone, err, want)
		}
		if left := w.owned("t-5"); len(left) != 0 {
			t.Errorf("zone %s: refused up created %v", zone, left)
		}
	}
}

// A crash between the PATCH and the save of the ids: the rerun recognises its records by their
// exact comment, or, the comment not echoed, by their names and data, does not refuse them, and
// records their ids (the old code refused them under dns-comment=dropped).
func TestDNSRecordsOfACrashedRunAreAdopted(t *testing.T) {
	t.Parallel()
	dnsReadings(t, testDNSCrashedRun)
}

func testDNSCrashedRun(t *testing.T, o scwsim.Options) {
	ctx := t.Context()
	w := newWorld(t, o)
	spec := testSpec(prodZone)
	st, _ := provision.NewState("t-3", spec)
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	rec := st.Resources[NodeDNS]
	delete(st.Resources, NodeDNS) // the save that never happened
	calls := len(w.emu.Calls())
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatalf("rerun after the crash: %v", err)
	}
	if got := st.Resources[NodeDNS].Attrs[attrDNSRecordIDs]; got != rec.Attrs[attrDNSRecordIDs] {
		t.Errorf("rerun recorded %q, the records are %q", got, rec.Attrs[attrDNSRecordIDs])
	}
	for _, c := range w.emu.Calls()[calls:] {
		if strings.Contains(c.Path, "/records") && c.Method != "GET" {
			t.Errorf("rerun rewrote the records: %s %s", c.Method, c.Path)
		}
	}
}

// A state written before return_all_records was sent recorded the whole zone's answer as the
// cluster's record ids. Its down removes the cluster's records and leaves every other record.
func TestDNSDownOfAStateThatRecordedTheWholeZone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{DNSZones: []string{prodZone}})
	before := seedProduction(w)
	spec := testSpec(prodZone)
	st, err := provision.NewState("t-4", spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	res := st.Resources[NodeDNS]
	var all []string
	for _, r := range w.emu.DNSRecords(prodZone) {
		all = append(all, r.ID)
	}
	res.Attrs[attrDNSRecordIDs] = strings.Join(all, ",")
	st.Resources[NodeDNS] = res
	if _, err := w.eng.Down(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	if a, b := recordKeys(w.emu.DNSRecords(prodZone)), recordKeys(before); !slices.Equal(a, b) {
		t.Errorf("the down of a state holding the zone's ids left\n %v\nwant what the zone held before\n %v", a, b)
	}
}

// A pause that keeps the reserved IPs deletes the worker: its edge records go first (EdgeDNSNode,
// which BuildPause adds before the worker), the API records of the kept IPs stay with their
// recorded ids, and no record of the cluster names the worker's old address; the resume (an up of
// the whole graph) writes the edge record again for the new worker.
func TestPauseRemovesTheEdgeRecordsOnly(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{DNSZones: []string{prodZone}})
	before := seedProduction(w)
	spec := testSpec(prodZone)
	st, err := provision.NewState("t-5", spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatal(err)
	}
	names := spec.DNSNames("t-5")
	apiBefore := recordKeys(recordsNamed(w.emu.DNSRecords(prodZone), names.API))
	oldWorker := st.Resources[NodeWorker].Attrs["ipv4"]

	pause := provision.NewGraph()
	worker, _ := w.graph(t, spec).Node(NodeWorker)
	worker.Needs = nil
	for _, n := range []provision.Node{worker, w.drv.EdgeDNSNode()} {
		if err := pause.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.eng.Down(ctx, pause, st, provision.NewMemorySaver()); err != nil {
		t.Fatalf("pause: %v", err)
	}
	recs := w.emu.DNSRecords(prodZone)
	for _, r := range recs {
		if r.Data == oldWorker {
			t.Errorf("after the pause %s still points at the worker's address %s", r.Name, oldWorker)
		}
	}
	if got := recordKeys(recordsNamed(recs, names.API)); !slices.Equal(got, apiBefore) {
		t.Errorf("the API records of the kept IPs changed: %v, before %v", got, apiBefore)
	}
	var apiIDs []string
	for _, r := range recordsNamed(recs, names.API) {
		apiIDs = append(apiIDs, r.ID)
	}
	slices.Sort(apiIDs)
	if got := st.Resources[NodeDNS].Attrs[attrDNSRecordIDs]; got != strings.Join(apiIDs, ",") {
		t.Errorf("recorded ids after the pause %q, want the API records' %q", got, strings.Join(apiIDs, ","))
	}
	for _, prod := range before {
		if same := recordsNamed(recs, prod.Name); len(same) != 1 || same[0].ID != prod.ID {
			t.Errorf("the pause touched the zone's record %q: %+v", prod.Name, same)
		}
	}

	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	edge := recordsNamed(w.emu.DNSRecords(prodZone), names.Edge)
	if nw := st.Resources[NodeWorker].Attrs["ipv4"]; len(edge) != 1 || edge[0].Data != nw || nw == "" {
		t.Errorf("edge records after the resume %+v, want the new worker's %s", edge, nw)
	}
}
