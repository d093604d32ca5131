package soak

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Each pool invariant catches its planted fault in a doctored history (a sequence of listings),
// and the same history without the fault passes: the checks could fail, and do not cry wolf.
func TestPoolInvariantsCatchPlantedFaults(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	sp := func(name string, edit func(r *spare.Record)) statestore.Header {
		r := spare.Record{Name: name, Repository: "acme/c", Phase: lifecycle.PhaseReady, Created: t0.Add(-15 * time.Minute),
			Ready: t0, Checked: t0, Stale: t0.Add(2 * time.Hour)}
		if edit != nil {
			edit(&r)
		}
		h := statestore.Header{Cluster: name, Repository: "acme/c", Created: r.Created}
		r.Into(&h)
		return h
	}
	claimed := func(cluster string, number int, from string, at time.Time) statestore.Header {
		return statestore.Header{Cluster: cluster, Repository: "acme/c", Number: number, Kind: "issue", Created: at,
			Labels: map[string]string{spare.LabelClaimedFrom: from}}
	}
	building := func(name string) statestore.Header {
		return sp(name, func(r *spare.Record) {
			r.Phase, r.Ready, r.Stale = lifecycle.PhaseProvisioning, time.Time{}, time.Time{}
		})
	}
	type step struct {
		headers []statestore.Header
		res     map[string][]string
		now     time.Time
		broken  string // the harness crashes a node of this spare before the step
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  string // the invariant broken ("": none)
	}{
		{"a claim, then a refill: nothing broken", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil)}, now: t0},
			{headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0.Add(time.Minute)), building("spare-bbbbbbbb")},
				res: map[string][]string{"acme-c-1": {"srv-1"}, "spare-bbbbbbbb": {"srv-2"}}, now: t0.Add(time.Minute)},
		}, ""},
		{"one spare became two clusters", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil)}, now: t0},
			{headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0.Add(time.Minute))}, now: t0.Add(time.Minute)},
			{headers: []statestore.Header{claimed("acme-c-2", 2, "spare-aaaaaaaa", t0.Add(2*time.Minute))}, now: t0.Add(2 * time.Minute)},
		}, invOnce},
		{"claimed past its expiry", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil)}, now: t0},
			{headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0.Add(2*time.Hour))}, now: t0.Add(2 * time.Hour)},
		}, invStale},
		{"a record claimed past its expiry", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", func(r *spare.Record) {
				r.ClaimedBy, r.ClaimedAt = "acme-c-1", t0.Add(3*time.Hour)
			})}, now: t0.Add(3 * time.Hour)},
		}, invStale},
		{"claimed after a node of it died", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil)}, now: t0},
			{broken: "spare-aaaaaaaa", headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0.Add(time.Minute))}, now: t0.Add(time.Minute)},
		}, invUnhealthy},
		{"claimed while its record says its re-check failed", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", func(r *spare.Record) { r.Unhealthy = "nodes: worker NotReady" })}, now: t0},
			{headers: []statestore.Header{sp("spare-aaaaaaaa", func(r *spare.Record) {
				r.Unhealthy, r.ClaimedBy, r.ClaimedAt = "nodes: worker NotReady", "acme-c-1", t0.Add(time.Minute)
			})}, now: t0.Add(time.Minute)},
		}, invUnhealthy},
		{"an unhealthy mark cleared by a later check, then a claim: no fault", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", func(r *spare.Record) { r.Unhealthy = "nodes: worker NotReady" })}, now: t0},
			{headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0.Add(time.Minute))}, now: t0.Add(time.Minute)},
		}, ""},
		{"two spares building for a pool of one", []step{
			{headers: []statestore.Header{building("spare-aaaaaaaa"), building("spare-bbbbbbbb")}, now: t0},
		}, invSize},
		{"a stale spare beside its replacement is not over the size", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil), building("spare-bbbbbbbb")}, now: t0.Add(2 * time.Hour)},
		}, ""},
		{"a claimed cluster under another issue's name", []step{
			{headers: []statestore.Header{claimed("acme-c-2", 1, "spare-aaaaaaaa", t0)}, now: t0},
		}, invOneIssue},
		{"a resource in two issues' clusters", []step{
			{headers: []statestore.Header{claimed("acme-c-1", 1, "spare-aaaaaaaa", t0), claimed("acme-c-2", 2, "spare-bbbbbbbb", t0)},
				res: map[string][]string{"acme-c-1": {"srv-1"}, "acme-c-2": {"srv-1"}}, now: t0},
		}, invOneIssue},
		{"a spare's machines held by the cluster claimed from it: allowed", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", func(r *spare.Record) { r.ClaimedBy, r.ClaimedAt = "acme-c-1", t0 }),
				claimed("acme-c-1", 1, "spare-aaaaaaaa", t0)},
				res: map[string][]string{"acme-c-1": {"srv-1"}, "spare-aaaaaaaa": {"srv-1"}}, now: t0},
		}, ""},
		{"a spare's machines held by another cluster", []step{
			{headers: []statestore.Header{sp("spare-aaaaaaaa", nil), claimed("acme-c-1", 1, "spare-bbbbbbbb", t0)},
				res: map[string][]string{"acme-c-1": {"srv-1"}, "spare-aaaaaaaa": {"srv-1"}}, now: t0},
		}, invOneIssue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newPoolLedger()
			var got []Violation
			for i, s := range tc.steps {
				if s.broken != "" {
					l.broken[s.broken] = i
				}
				got = append(got, l.check(poolView{Step: i, Headers: s.headers, Resources: s.res, Now: s.now, Sizes: map[string]int{"acme/c": 1}})...)
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("flagged %v, want nothing", got)
			case tc.want != "" && (len(got) != 1 || got[0].Invariant != tc.want):
				t.Errorf("flagged %v, want one violation of %q", got, tc.want)
			}
		})
	}
}

// A claim seen only in an answer counts: two issues' answers naming one spare are a double claim,
// and a claim of a crashed spare is caught though no listing ever showed its cluster.
func TestPoolClaimsSeenInAnswers(t *testing.T) {
	l := newPoolLedger()
	row := "| Path | warm: claimed a warm spare (age 3 min): spare-aaaaaaaa |"
	if vs := l.answered(1, "acme/c", 1, "| | |\n"+row+"\n"); len(vs) != 0 {
		t.Fatalf("a first claim flagged %v", vs)
	}
	summary := "### pocbot: cluster `acme-c-2` is ready\n\nPath: warm: claimed a warm spare (age 4 min): spare-aaaaaaaa\n"
	if vs := l.answered(2, "acme/c", 2, summary); len(vs) != 1 || vs[0].Invariant != invOnce {
		t.Fatalf("a second issue's summary naming the same spare: %v, want %q", vs, invOnce)
	}
	l.broken["spare-bbbbbbbb"] = 3
	if vs := l.answered(4, "acme/c", 1, strings.ReplaceAll(row, "aaaaaaaa", "bbbbbbbb")); len(vs) != 1 || vs[0].Invariant != invUnhealthy {
		t.Fatalf("a claim of a crashed spare: %v, want %q", vs, invUnhealthy)
	}
	if l.Handouts != 2 || l.Unverified() != 2 {
		t.Errorf("%d hand-outs, %d unverified; want 2 and 2 (an answer has no time)", l.Handouts, l.Unverified())
	}
}

// The budget counts a claimed spare once, as the cluster it became; an unclaimed one counts.
func TestClaimedSparesCountOnce(t *testing.T) {
	rec := spare.Record{Name: "spare-aaaaaaaa", Repository: "acme/c", Phase: lifecycle.PhaseReady, ClaimedBy: "acme-c-1"}
	var h statestore.Header
	h.Cluster = rec.Name
	rec.Into(&h)
	free := statestore.Header{Cluster: "spare-bbbbbbbb", Kind: spare.Kind}
	cl := statestore.Header{Cluster: "acme-c-1", Kind: "issue"}
	got := claimedSpares([]statestore.Header{h, free, cl})
	if !got["spare-aaaaaaaa"] || got["spare-bbbbbbbb"] || len(got) != 1 {
		t.Errorf("claimed spares %v, want only spare-aaaaaaaa", got)
	}
}

// After the settle, a killed claim's leftovers are orphans: a resource still tagged with a spare
// that has no document is billed and found; the shared image is not.
func TestKilledClaimLeftoversAreOrphans(t *testing.T) {
	inv := []scwsim.Resource{
		{Kind: "instance_server", Name: "poc-spare-aaaaaaaa-cp-0", Tags: []string{"pocbot", "pocbot-cluster=spare-aaaaaaaa"}},
		{Kind: "block_snapshot", Name: "talos", Tags: []string{"pocbot", "pocbot-shared"}},
	}
	got := billedLeft(inv)
	if len(got) != 1 || !strings.Contains(got[0], "spare-aaaaaaaa") {
		t.Errorf("left %q, want the spare's server only", got)
	}
}

// The pool's scenes have a stream of their own: a history's other events are the same with them
// and without them (GenerateNoPool, TestSoak's), in order, and the scenes are there to be played.
func TestPoolScenesLeaveTheOtherEvents(t *testing.T) {
	scenes := 0
	for seed := range uint64(50) {
		with, without := Generate(seed, 60), GenerateNoPool(seed, 60)
		var rest []Event
		for _, e := range with {
			if e.Repo == "acme/c" {
				scenes++
				continue
			}
			rest = append(rest, e)
		}
		for i, e := range without {
			if e.Repo == "acme/c" {
				t.Fatalf("seed %d: GenerateNoPool's event %d is the pool's: %s", seed, i, e)
			}
			if i < len(rest) && !reflect.DeepEqual(rest[i], e) {
				t.Fatalf("seed %d: event %d is %s with the pool's scenes, %s without", seed, i, rest[i], e)
			}
		}
	}
	if scenes == 0 {
		t.Error("50 histories of 60 events hold no event of the pool's scenes")
	}
}
