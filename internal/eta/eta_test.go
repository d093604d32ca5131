package eta

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

func TestHistory(t *testing.T) {
	cold, parked := Path{}, Path{Parked: true, SharedImage: true}
	h := History{}
	if e := h.Of(cold, 11*time.Minute); e.D != 11*time.Minute || e.From != "the latency profile" {
		t.Fatalf("no history: %+v", e)
	}
	for _, m := range []int{9, 14, 10} {
		h.Add(cold, time.Duration(m)*time.Minute)
	}
	if e := h.Of(cold, 11*time.Minute); e.D != 10*time.Minute || e.From != "this project's last 3 ups of this path" {
		t.Errorf("three cold ups: %+v, want their median 10 min", e)
	}
	if e := h.Of(parked, 3*time.Minute); e.D != 3*time.Minute {
		t.Errorf("another path reads the profile: %+v", e)
	}
	for i := range 2 * Keep {
		h.Add(cold, time.Duration(i)*time.Second)
	}
	if n := len(h[cold.String()]); n != Keep {
		t.Errorf("kept %d durations, want %d", n, Keep)
	}
}

// memStore keeps shared documents in memory (no conditional write: one writer).
type memStore map[string][]byte

func (m memStore) GetShared(_ context.Context, name string) (*statestore.Shared, error) {
	b, ok := m[name]
	if !ok {
		return nil, statestore.ErrNotFound
	}
	return &statestore.Shared{Name: name, Body: b}, nil
}

func (m memStore) PutShared(_ context.Context, doc *statestore.Shared) error {
	m[doc.Name] = doc.Body
	return nil
}

// Register row em-delivery: whatever an offer's delivery takes (fast, recorded, slow), the ETA of
// a cold up learns it from this project's orders of that offer, one order on; a parked up and
// another offer keep the profile's figure.
func TestETALearnsEachOffersDelivery(t *testing.T) {
	worker := func(g *provision.Graph, _ provision.Spec) error {
		nop := func(context.Context, *provision.Run) error { return nil }
		return g.Add(provision.Node{Name: scaleway.NodeWorker, Kind: scaleway.KindBaremetal, Apply: nop, Destroy: nop})
	}
	profile := cluster.Waits{Scaleway: scaleway.Waits{BMDelivery: 287 * time.Second}}
	for _, tc := range []struct {
		reading string
		took    time.Duration
	}{{"fast", 12 * time.Second}, {"recorded", 287 * time.Second}, {"slow", 40 * time.Minute}} {
		t.Run(tc.reading, func(t *testing.T) {
			b := &Book{Store: memStore{}, Build: worker, Profile: profile}
			spec := provision.DefaultSpec()
			if e := b.Estimate(t.Context(), spec, false); e.D != 287*time.Second {
				t.Fatalf("before any order: %v, want the profile's 287 s", e.D)
			}
			if err := b.Record(t.Context(), Path{}, time.Hour, spec.BaremetalOffer, tc.took); err != nil {
				t.Fatal(err)
			}
			if e := b.Estimate(t.Context(), spec, false); e.D != tc.took || !strings.Contains(e.From, "delivery (1 order") {
				t.Errorf("after one order: %+v, want %v learned", e, tc.took)
			}
			if d, n, err := b.LearnedDelivery(t.Context(), spec.BaremetalOffer); err != nil || d != tc.took || n != 1 {
				t.Errorf("learned %v from %d (%v)", d, n, err)
			}
			other := spec
			other.BaremetalOffer = "EM-B112X-SSD"
			if e := b.Estimate(t.Context(), other, false); e.D != 287*time.Second {
				t.Errorf("another offer: %v, want the profile's", e.D)
			}
			if e := b.Estimate(t.Context(), spec, true); e.D != 0 {
				t.Errorf("a parked up orders nothing: %v", e.D)
			}
		})
	}
}
