package reaper_test

import (
	"errors"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestPlan is the schedule's whole policy as a table: headers and issue states in, steps out, no
// stand-in and no I/O (issue 23: the reaper plans, then acts).
func TestPlan(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const repo = "acme/shop"
	policy := reaper.Policy{KeepLabel: "poc/keep", WarnBefore: time.Hour, Repository: repo, Comment: true}
	hdr := func(name string, expires time.Time, meta clusterops.Meta, phase lifecycle.Phase) statestore.Header {
		h := statestore.Header{Cluster: name, Repository: repo, Number: 7, Expires: expires, Phase: string(phase)}
		meta.Into(&h)
		return h
	}
	open := &reaper.IssueState{Open: true}
	kept := &reaper.IssueState{Open: true, Labels: []string{"poc/keep"}}
	keptByTriage := &reaper.IssueState{Open: true, Labels: []string{"poc/keep"}, KeepRefused: &commands.KeepRefusal{Actor: "eve", Permission: "triage"}}
	lookupFailed := &reaper.IssueState{Err: errors.New("GitHub 502")}
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		h        statestore.Header
		issue    *reaper.IssueState
		action   reaper.Action // for a step that is not a teardown
		reason   commands.ReapReason
		teardown bool
		warn     bool
		syncKeep *bool
	}{
		{name: "fresh", h: hdr("a", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: open, action: reaper.ActionNone},
		{name: "due within the warning lead", h: hdr("b", now.Add(30*time.Minute), clusterops.Meta{}, lifecycle.PhaseReady), issue: open,
			action: reaper.ActionNone, warn: true},
		{name: "already warned for this expiry", h: hdr("c", now.Add(30*time.Minute), clusterops.Meta{WarnedFor: now.Add(30 * time.Minute)}, lifecycle.PhaseReady),
			issue: open, action: reaper.ActionNone},
		{name: "no warning without the issue's state", h: hdr("d", now.Add(30*time.Minute), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: lookupFailed, action: reaper.ActionNone},
		{name: "expired", h: hdr("e", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhaseReady), issue: open,
			teardown: true, reason: commands.ReapExpired},
		{name: "expired, the issue unknown: expiry still applies", h: hdr("f", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: lookupFailed, teardown: true, reason: commands.ReapExpired},
		{name: "closed", h: hdr("g", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: &reaper.IssueState{},
			teardown: true, reason: commands.ReapClosed},
		{name: "merged", h: hdr("h", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: &reaper.IssueState{IsPR: true, Merged: true},
			teardown: true, reason: commands.ReapMerged},
		{name: "kept by a writer, expired: spared, the label recorded", h: hdr("i", now.Add(-time.Hour), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: kept, action: reaper.ActionKept, syncKeep: &yes},
		{name: "kept as last seen when GitHub fails", h: hdr("j", now.Add(-time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: lookupFailed, action: reaper.ActionKept},
		{name: "a label added by triage does not count", h: hdr("k", now.Add(-time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: keptByTriage, teardown: true, reason: commands.ReapExpired, syncKeep: &no},
		{name: "kept, but closed: goes", h: hdr("l", now.Add(5*time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: &reaper.IssueState{Labels: []string{"poc/keep"}}, teardown: true, reason: commands.ReapClosed},
		// A paused cluster expires at its own bound (max_paused), keep label or not.
		{name: "kept, but paused past max_paused: goes", h: hdr("n", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhasePaused),
			issue: kept, teardown: true, reason: commands.ReapExpired, syncKeep: &yes},
		{name: "kept and paused, due within the warning lead: warned", h: hdr("o", now.Add(30*time.Minute), clusterops.Meta{Keep: true}, lifecycle.PhasePaused),
			issue: kept, action: reaper.ActionNone, warn: true},
		{name: "a failed down is reported", h: hdr("m", now.Add(5*time.Hour), clusterops.Meta{DownFailed: now.Add(-time.Hour)}, lifecycle.PhaseFailed),
			issue: open, action: reaper.ActionDownFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := reaper.Plan([]statestore.Header{tc.h}, map[string]*reaper.IssueState{tc.h.Cluster: tc.issue}, now, policy)
			if len(steps) != 1 {
				t.Fatalf("%d steps, want 1", len(steps))
			}
			s := steps[0]
			if s.Teardown != tc.teardown || s.Warn != tc.warn {
				t.Errorf("teardown %v, warn %v; want %v, %v (%+v)", s.Teardown, s.Warn, tc.teardown, tc.warn, s.Decision)
			}
			if tc.teardown && s.Decision.Reason != tc.reason {
				t.Errorf("reason %q, want %q", s.Decision.Reason, tc.reason)
			}
			if !tc.teardown && s.Decision.Action != tc.action {
				t.Errorf("action %q, want %q (%s)", s.Decision.Action, tc.action, s.Decision.Detail)
			}
			if (s.SyncKeep == nil) != (tc.syncKeep == nil) || (s.SyncKeep != nil && *s.SyncKeep != *tc.syncKeep) {
				t.Errorf("sync keep %v, want %v", s.SyncKeep, tc.syncKeep)
			}
		})
	}
}

// TestPlanOrder: what is not due first, in the headers' order; then closed before expired, the
// longest overdue first.
func TestPlanOrder(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := func(name string, expires time.Time) statestore.Header {
		return statestore.Header{Cluster: name, Repository: "acme/shop", Number: 1, Expires: expires}
	}
	headers := []statestore.Header{h("late-1h", now.Add(-time.Hour)), h("fresh", now.Add(time.Hour)), h("late-3h", now.Add(-3*time.Hour)), h("closed", now.Add(time.Hour))}
	issues := map[string]*reaper.IssueState{"closed": {}}
	var got []string
	for _, s := range reaper.Plan(headers, issues, now, reaper.Policy{KeepLabel: "poc/keep"}) {
		got = append(got, s.Decision.Cluster)
	}
	want := []string{"fresh", "closed", "late-3h", "late-1h"}
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
