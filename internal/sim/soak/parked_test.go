package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// The orphan invariant accepts a parked worker its pool entry records (while its park lasts) and
// flags one with no entry, and one kept past its parked-until.
func TestParkedOrphans(t *testing.T) {
	now := time.Date(2026, 12, 30, 0, 0, 0, 0, time.UTC)
	parked := func(id string) scwsim.Resource {
		return scwsim.Resource{Kind: "baremetal_server", ID: id, Name: "poc-x-worker", Tags: []string{scaleway.ParkedTag}}
	}
	inv := []scwsim.Resource{parked("kept"), parked("lost"), parked("stale"),
		{Kind: "baremetal_server", ID: "adopted", Tags: []string{"pocbot-cluster=c"}}}
	d := pool.Doc{Workers: []pool.Worker{{ServerID: "kept", ParkedUntil: now.Add(time.Hour)}, {ServerID: "stale", ParkedUntil: now.Add(-time.Hour)}}}
	got := strings.Join(parkedOrphans(inv, d, now), "\n")
	for _, want := range []string{"lost: parked, in no pool entry", "stale: parked until"} {
		if !strings.Contains(got, want) {
			t.Errorf("flagged:\n%s\nwant a line with %q", got, want)
		}
	}
	if strings.Contains(got, "kept") || strings.Contains(got, "adopted") {
		t.Errorf("flagged a worker that is parked and recorded, or adopted:\n%s", got)
	}
}

// A worker that served a cluster of one repository and then one of another is flagged; the same
// repository's next cluster is not.
func TestCrossRepoWorkers(t *testing.T) {
	bm := func(id, cluster string) scwsim.Resource {
		return scwsim.Resource{Kind: "baremetal_server", ID: id, Tags: []string{"pocbot", "pocbot-cluster=" + cluster}}
	}
	repoOf := map[string]string{"acme-b-1": "acme/b", "acme-b-2": "acme/b", "acme-a-1": "acme/a"}
	seen := map[string]string{}
	if got := crossRepoWorkers([]scwsim.Resource{bm("w1", "acme-b-1"), bm("w2", "acme-a-1")}, repoOf, seen); len(got) != 0 {
		t.Fatalf("first sight flagged %v", got)
	}
	if got := crossRepoWorkers([]scwsim.Resource{bm("w1", "acme-b-2")}, repoOf, seen); len(got) != 0 {
		t.Fatalf("the same repository's next cluster flagged: %v", got)
	}
	got := crossRepoWorkers([]scwsim.Resource{bm("w1", "acme-a-1")}, repoOf, seen)
	if len(got) != 1 || !strings.Contains(got[0], "w1") || !strings.Contains(got[0], "acme/b") {
		t.Fatalf("a worker of acme/b adopted by acme/a: flagged %v", got)
	}
}
