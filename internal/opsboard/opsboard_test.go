package opsboard_test

import (
	"context"
	"flag"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/opsboard"
	simgithub "github.com/pocbot/pocbot/internal/sim/github"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var now = time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (run `go test ./internal/opsboard -update`)", path, err)
	}
	if got != string(want) {
		t.Errorf("%s differs (rerun with -update after reviewing):\n%s", path, got)
	}
}

func fleet() (history, live []opsboard.Entry) {
	history = []opsboard.Entry{
		// Ended three days ago: a done bar in the chart, counted in the month.
		{Cluster: "acme-shop-7", Repository: "acme/shop", Number: 7, RequestedBy: "carol", Created: now.Add(-80 * time.Hour), DailyNanoEUR: 4_300_000_000, Ended: now.Add(-72 * time.Hour)},
		// Ended last month, beyond the window: dropped.
		{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1, Created: now.AddDate(0, -1, -2), Ended: now.AddDate(0, -1, -1), DailyNanoEUR: 4_300_000_000},
		// Live last time, gone from the state now: ended at this run.
		{Cluster: "acme-shop-9", Repository: "acme/shop", Number: 9, RequestedBy: "dave", Created: now.Add(-5 * time.Hour), DailyNanoEUR: 4_300_000_000},
	}
	live = []opsboard.Entry{
		{Cluster: "acme-shop-42", Repository: "acme/shop", Number: 42, RequestedBy: "alice", Created: now.Add(-26 * time.Hour), Expires: now.Add(6 * time.Hour), DailyNanoEUR: 4_296_000_000, Phase: "ready"},
		{Cluster: "acme-shop-43", Repository: "acme/shop", Number: 43, RequestedBy: "bob", Created: now.Add(-9 * 24 * time.Hour), Kept: true, DailyNanoEUR: 2_100_000_000, Phase: "ready"},
		{Cluster: "acme-shop-50", Repository: "acme/shop", Number: 50, RequestedBy: "erin", Created: now.Add(-2 * time.Hour), Phase: "parked"},
	}
	return history, live
}

func TestRender(t *testing.T) {
	history, live := fleet()
	entries := opsboard.Merge(history, live, now)
	for _, e := range entries {
		if e.Cluster == "acme-shop-1" {
			t.Error("a lifetime that ended last month, outside the window, was kept")
		}
		if e.Cluster == "acme-shop-9" && !e.Ended.Equal(now) {
			t.Errorf("a cluster gone from the state is not ended now: %+v", e)
		}
	}
	body := opsboard.Render(entries, []opsboard.Orphan{{Cluster: "old-3", Zone: "fr-par-1", Detail: "2 servers, 1 IP"}}, now)
	golden(t, "board", body)
	back := opsboard.ParseHistory(body)
	if len(back) != len(entries) {
		t.Errorf("history round trip: %d entries, want %d", len(back), len(entries))
	}
	golden(t, "board_empty", opsboard.Render(nil, nil, now))
}

func TestMonthSpend(t *testing.T) {
	// 2 € a day for the 12 hours since the first of the month: 1 €; the day before is not counted.
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	e := []opsboard.Entry{{Cluster: "c", Created: start.Add(-24 * time.Hour), DailyNanoEUR: 2_000_000_000}}
	if got := opsboard.MonthSpend(e, start.Add(12*time.Hour)).Format(2); got != "€ 1.00" {
		t.Errorf("month spend %s, want 1.00", got)
	}
}

// The whole update against the GitHub stand-in with the real client: created once, then edited
// in place (the history carried in its body), never duplicated; a person's look-alike issue is
// not taken over.
func TestUpdateOnTheStandIn(t *testing.T) {
	s, err := simgithub.New(simgithub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	s.AddRepo("acme/shop", "main")
	// A look-alike by a person, marker included: must not be edited.
	fake := s.AddIssue("acme/shop", simgithub.Issue{Title: opsboard.Title, Author: "mallory"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c, err := github.NewClient(ctx, github.Auth{AppID: s.AppID(), PrivateKeyPEM: s.AppPrivateKeyPEM(), Owner: "acme", Repo: "shop", BaseURL: srv.URL,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	history, live := fleet()
	n1, err := opsboard.Update(ctx, c, append(history[2:], live...), nil, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n1 == fake {
		t.Fatal("the person's issue was taken as the board")
	}
	n2, err := opsboard.Update(ctx, c, live, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if n2 != n1 {
		t.Fatalf("second run wrote issue #%d, first #%d: the board was duplicated", n2, n1)
	}
	title, body, _ := s.IssueBody("acme/shop", n1)
	if title != opsboard.Title || !strings.Contains(body, "acme-shop-9 9 :done") || !strings.Contains(body, "acme-shop-42 42 :active") {
		t.Errorf("board #%d %q:\n%s", n1, title, body)
	}
	if _, fb, _ := s.IssueBody("acme/shop", fake); fb != "" {
		t.Error("the look-alike issue was edited")
	}
}
