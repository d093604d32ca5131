package clusterops_test

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Extend writes the header once per operation (the new expiry and the re-armed warning in one
// write), and a refused extend writes nothing; a warning mark of the old expiry is cleared.
func TestExtendWritesTheHeaderOnce(t *testing.T) {
	e, ctx := start(t, time.Minute, world.Options{})
	const name = "acme-shop-9"
	expires := time.Now().UTC().Add(30 * time.Minute).Truncate(time.Second)
	h := statestore.Header{Cluster: name, Repository: "acme/shop", Number: 9, Kind: "issue", RequestedBy: "alice",
		Phase: string(lifecycle.PhaseReady), Expires: expires, Labels: map[string]string{}}
	clusterops.Meta{WarnedFor: expires}.Into(&h)
	if err := e.store.Put(ctx, &statestore.Document{Header: h, Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	in := clusterops.Intent{Cluster: name, Repository: "acme/shop", Number: 9, Kind: "issue", RequestedBy: "alice",
		Command: "extend", Bounds: &repoconfig.RepoConfig{MaxTTL: 24 * time.Hour}}
	for _, tc := range []struct {
		name    string
		by      time.Duration
		refusal lifecycle.Kind
		writes  int64
	}{
		{"within max_ttl", 4 * time.Hour, "", 1},
		{"beyond max_ttl", 48 * time.Hour, lifecycle.RefuseMaxTTL, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := e.store.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.ops.Extend(ctx, in, tc.by)
			if got := refusalKind(out); err != nil && got == "" || got != tc.refusal {
				t.Fatalf("extend by %s: refusal %q, err %v; want refusal %q", tc.by, got, err, tc.refusal)
			}
			after, err := e.store.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if writes := after.Header.Serial - before.Header.Serial; writes != tc.writes {
				t.Errorf("extend by %s wrote the header %d times, want %d", tc.by, writes, tc.writes)
			}
			if tc.refusal != "" {
				return
			}
			if want := before.Header.Expires.Add(tc.by); !after.Header.Expires.Equal(want) {
				t.Errorf("expires %s, want %s", after.Header.Expires, want)
			}
			if m, err := clusterops.MetaOf(after.Header); err != nil || !m.WarnedFor.IsZero() {
				t.Errorf("meta after extend %+v (%v): want the warning re-armed", m, err)
			}
		})
	}
}

func refusalKind(out *clusterops.Outcome) lifecycle.Kind {
	if out == nil || out.Refusal == nil {
		return ""
	}
	return out.Refusal.Kind
}
