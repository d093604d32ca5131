package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// A spare's row on the board says what a claim would say of it: building, claimed, failed its
// check and why, stale, or healthy with its last check; a record that does not decode says so.
func TestSpareHealthOnTheBoard(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	ready := now.Add(-90 * time.Minute)
	header := func(edit func(r *spare.Record)) statestore.Header {
		r := spare.Record{Name: "spare-qwertyui", Phase: lifecycle.PhaseReady, Created: ready.Add(-12 * time.Minute), Ready: ready,
			Checked: now.Add(-30 * time.Minute), Stale: ready.Add(24 * time.Hour)}
		edit(&r)
		h := statestore.Header{Cluster: r.Name}
		r.Into(&h)
		return h
	}
	for _, tc := range []struct {
		name   string
		header statestore.Header
		want   string
	}{
		{"healthy", header(func(*spare.Record) {}), "healthy, checked 30m ago"},
		{"building", header(func(r *spare.Record) { r.Phase, r.Ready = lifecycle.PhaseProvisioning, time.Time{} }), "building since"},
		{"claimed", header(func(r *spare.Record) { r.ClaimedBy = "acme-shop-4" }), "claimed by acme-shop-4"},
		{"failed its check", header(func(r *spare.Record) { r.Unhealthy = "nodes: worker NotReady" }), "failed its health check at 09:30 UTC: nodes: worker NotReady"},
		{"stale", header(func(r *spare.Record) { r.Stale = now.Add(-time.Minute) }), "stale: built 2026-12-05 08:30 UTC"},
		{"unreadable", statestore.Header{Cluster: "spare-x", Kind: spare.Kind, Labels: map[string]string{"spare_ready": "yesterday"}}, "unreadable record"},
	} {
		if _, got := spareHealth(tc.header, now); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q in it", tc.name, got, tc.want)
		}
	}
}
