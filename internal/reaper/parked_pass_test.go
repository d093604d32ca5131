package reaper_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/statestore"
)

// passPool is a pool whose successive reads return the successive documents (the last one
// again once they run out), as a pool others change while a pass runs.
type passPool struct {
	mu      sync.Mutex
	reads   []pool.Doc
	removed []string
}

func (p *passPool) List(context.Context) (pool.Doc, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := p.reads[0]
	if len(p.reads) > 1 {
		p.reads = p.reads[1:]
	}
	return d, nil
}

func (p *passPool) Remove(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removed = append(p.removed, id)
	return nil
}

// passServers are the servers tagged parked; parked says which still carry the tag when a
// delete comes (an adopted one does not).
type passServers struct {
	mu      sync.Mutex
	listed  []scaleway.ParkedServer
	parked  map[string]bool
	deleted []string
}

func (s *passServers) ListParked(context.Context, ...scw.Zone) ([]scaleway.ParkedServer, error) {
	return s.listed, nil
}

func (s *passServers) DeleteParked(_ context.Context, _, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.parked[id] {
		return false, nil
	}
	s.deleted = append(s.deleted, id)
	return true, nil
}

// emptyOps are Ops on an empty state bucket of their own: the pass under test lists no cluster.
func emptyOps(t *testing.T) *clusterops.Ops {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	st, err := statestore.Open(t.Context(), statestore.Config{StateURL: "file://" + t.TempDir(), KeyURL: "base64key://" + base64.URLEncoding.EncodeToString(key)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return &clusterops.Ops{Store: st, Build: func(*provision.Graph, provision.Spec) error { return nil }}
}

// The parked pass decides from the pool and the servers tagged parked. A claim older than the
// grace is stale: the up that took it stopped before adopting the worker, so the server goes (one
// its claimer retagged already is left, and the entry goes either way); before issue 31 it stayed
// billed until its parked-until. A server tagged parked that the first read of the pool missed
// but a second read lists was parked while the pass ran, and stays; before, it was deleted as an
// orphan (its creation date, the order's, is older than any grace).
func TestParkedPass(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	grace := time.Hour
	entry := func(id, claimedBy string, claimedAgo time.Duration) pool.Worker {
		w := pool.Worker{ServerID: id, Zone: "fr-par-1", ParkedFrom: "acme-shop-1", ParkedAt: now.Add(-2 * time.Hour), ParkedUntil: now.Add(5 * time.Hour)}
		if claimedBy != "" {
			w.ClaimedBy, w.ClaimedAt = claimedBy, now.Add(-claimedAgo)
		}
		return w
	}
	server := func(id string) scaleway.ParkedServer {
		return scaleway.ParkedServer{ID: id, Zone: "fr-par-1", Created: now.Add(-30 * 24 * time.Hour)}
	}
	stale, adopted, young, free := entry("stale", "acme-shop-2", 2*time.Hour), entry("adopted", "acme-shop-3", 2*time.Hour),
		entry("young", "acme-shop-4", time.Minute), entry("free", "", 0)
	fresh := entry("fresh", "", 0)
	pl := &passPool{reads: []pool.Doc{{Workers: []pool.Worker{stale, adopted, young, free}}, {Workers: []pool.Worker{stale, adopted, young, free, fresh}}}}
	srv := &passServers{
		listed: []scaleway.ParkedServer{server("stale"), server("young"), server("free"), server("fresh"), server("lost")},
		parked: map[string]bool{"stale": true, "young": true, "free": true, "fresh": true, "lost": true},
	}
	rep, err := reaper.Run(t.Context(), reaper.Config{Ops: emptyOps(t), Pool: pl, Parked: srv, Grace: grace, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("parked pass:\n%s", table(t, rep))
	slices.Sort(srv.deleted)
	slices.Sort(pl.removed)
	if want := []string{"lost", "stale"}; !slices.Equal(srv.deleted, want) {
		t.Errorf("deleted servers %v, want %v (a stale claim's and an orphan's; not a young claim's, a free one's, or one parked during the pass)", srv.deleted, want)
	}
	if want := []string{"adopted", "stale"}; !slices.Equal(pl.removed, want) {
		t.Errorf("removed entries %v, want %v (the stale claims', whether the server was still parked or adopted)", pl.removed, want)
	}
	for id, reason := range map[string]string{"stale": string(reaper.ReasonParkStale), "adopted": string(reaper.ReasonParkStale), "lost": string(reaper.ReasonParkOrphan)} {
		if d, ok := decisionOf(rep, "parked/"+id); !ok || string(d.Reason) != reason || d.Action != reaper.ActionSwept {
			t.Errorf("decision for %s = %+v, want swept for %s", id, d, reason)
		}
	}
	for _, id := range []string{"young", "free", "fresh"} {
		if d, ok := decisionOf(rep, "parked/"+id); ok {
			t.Errorf("decision for %s = %+v, want none", id, d)
		}
	}
}
