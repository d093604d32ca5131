package opsboard_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/opsboard"
	simgithub "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
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
	h := opsboard.Merge(opsboard.History{Entries: history}, live, now)
	for _, e := range h.Entries {
		if e.Cluster == "acme-shop-1" {
			t.Error("a lifetime that ended last month, outside the window, was kept")
		}
		if e.Cluster == "acme-shop-9" && !e.Ended.Equal(now) {
			t.Errorf("a cluster gone from the state is not ended now: %+v", e)
		}
	}
	body := opsboard.Render(h, []opsboard.Orphan{{Cluster: "old-3", Zone: "fr-par-1", Detail: "2 servers, 1 IP"}}, now)
	golden(t, "board", body)
	back := opsboard.ParseHistory(body)
	if len(back.Entries) != len(h.Entries) {
		t.Errorf("history round trip: %d entries, want %d", len(back.Entries), len(h.Entries))
	}
	golden(t, "board_empty", opsboard.Render(opsboard.History{}, nil, now))
}

// The warm pool's section: each spare's age (since ready, or building for how long), health and
// cost, apart from the live clusters; its cost per day on a line of the spend, and its lifetime
// drawn and counted in the month like any cluster's.
func TestRenderWarmPool(t *testing.T) {
	history, live := fleet()
	live = append(live,
		opsboard.Entry{Cluster: "spare-qwertyui", Repository: "acme/shop", Created: now.Add(-72 * time.Minute), Ready: now.Add(-60 * time.Minute),
			Expires: now.Add(23 * time.Hour), DailyNanoEUR: 4_296_000_000, Phase: "ready", Spare: true, Health: "healthy, checked 1h ago"},
		opsboard.Entry{Cluster: "spare-asdfghjk", Repository: "acme/shop", Created: now.Add(-5 * time.Minute), DailyNanoEUR: 4_296_000_000,
			Phase: "provisioning", Spare: true, Health: "building since 21:55 UTC"},
		opsboard.Entry{Cluster: "spare-zxcvbnmp", Repository: "acme/shop", Created: now.Add(-3 * time.Hour), Ready: now.Add(-170 * time.Minute),
			DailyNanoEUR: 4_296_000_000, Phase: "ready", Spare: true, Health: "failed its health check at 21:40 UTC: nodes: worker | NotReady"})
	h := opsboard.Merge(opsboard.History{Entries: history}, live, now)
	body := opsboard.Render(h, nil, now)
	golden(t, "board_pool", body)
	live1, _, _ := strings.Cut(body, "## Warm pool")
	if strings.Contains(live1, "spare-") {
		t.Error("a spare is listed among the live clusters")
	}
	back := opsboard.ParseHistory(body)
	for _, e := range back.Entries {
		if e.Spare && (e.Health != "" || !e.Ready.IsZero()) {
			t.Errorf("the history remembers a spare's health or ready time: %+v", e)
		}
	}
}

func TestMonthSpend(t *testing.T) {
	// 2 € a day for the 12 hours since the first of the month: 1 €; the day before is not counted.
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	e := opsboard.History{Entries: []opsboard.Entry{{Cluster: "c", Created: start.Add(-24 * time.Hour), DailyNanoEUR: 2_000_000_000}}}
	if got := opsboard.MonthSpend(e, start.Add(12*time.Hour)).Format(2); got != "€ 1.00" {
		t.Errorf("month spend %s, want 1.00", got)
	}
}

// The whole update against the GitHub stand-in with the real client and a state bucket: created
// once, then edited in place (the history carried in its body), never duplicated although
// search has not indexed the new issue yet (the stand-in's search lags, as GitHub's does); a
// person's look-alike issue is not taken over.
func TestUpdateOnTheStandIn(t *testing.T) {
	s, c, store := standIn(t)
	// A look-alike by a person, marker included: must not be edited.
	fake := s.AddIssue("acme/shop", simgithub.Issue{Title: opsboard.Title, Body: "<!-- pocbot:board -->", Author: "mallory"})
	mem := opsboard.StoreMemory(store, "acme/shop", statestore.LockInfo{Command: "test"})
	history, live := fleet()
	n1, err := opsboard.Update(t.Context(), c, mem, append(history[2:], live...), nil, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n1 == fake {
		t.Fatal("the person's issue was taken as the board")
	}
	n2, err := opsboard.Update(t.Context(), c, mem, live, nil, now)
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
	if _, fb, _ := s.IssueBody("acme/shop", fake); fb != "<!-- pocbot:board -->" {
		t.Error("the look-alike issue was edited")
	}
}

// TestTwoRunsCreateOneBoard: two scheduled runs find no board at the same moment (and search
// finds none: it lags); the lock lets one create it, the other then reads its number and edits
// the same issue.
func TestTwoRunsCreateOneBoard(t *testing.T) {
	s, c, store := standIn(t)
	_, live := fleet()
	var wg sync.WaitGroup
	ns := make([]int, 2)
	errs := make([]error, 2)
	for i := range ns {
		mem := opsboard.StoreMemory(store, "acme/shop", statestore.LockInfo{Command: "test", RunID: strconv.Itoa(i)})
		wg.Go(func() { ns[i], errs[i] = opsboard.Update(t.Context(), c, mem, live, nil, now) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || ns[0] != ns[1] {
		t.Fatalf("runs wrote #%d (%v) and #%d (%v): want one board", ns[0], errs[0], ns[1], errs[1])
	}
	boards := 0
	for n := 1; n <= 5; n++ {
		if title, _, ok := s.IssueBody("acme/shop", n); ok && title == opsboard.Title {
			boards++
		}
	}
	if boards != 1 {
		t.Fatalf("%d boards, want 1", boards)
	}
}

// TestBoardIsTheAppsOwn: an issue with the board's title and marker opened by another App is not
// taken for the board (before, any bot's was), nor is a remembered number that now points at
// someone else's issue; the board found by search (one an earlier version made) is remembered.
func TestBoardIsTheAppsOwn(t *testing.T) {
	s, c, store := standIn(t)
	other := s.AddIssue("acme/shop", simgithub.Issue{Title: opsboard.Title, Body: "x <!-- pocbot:board -->", Author: "other-app[bot]"})
	mem := opsboard.StoreMemory(store, "acme/shop", statestore.LockInfo{Command: "test"})
	if err := mem.Remember(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	_, live := fleet()
	n, err := opsboard.Update(t.Context(), c, mem, live, nil, now)
	if err != nil {
		t.Fatal(err)
	}
	if n == other {
		t.Fatal("another App's issue was taken for the board")
	}
	if got, _ := mem.Number(t.Context()); got != n {
		t.Errorf("remembered #%d, want the new board #%d", got, n)
	}
	// An earlier version's board, found by search (indexed long ago), is taken and remembered.
	s2, c2, store2 := standIn(t, simgithub.Options{SearchLag: simgithub.NoSearchLag})
	old := s2.AddIssue("acme/shop", simgithub.Issue{Title: opsboard.Title, Body: "<!-- pocbot:board -->", Author: s2.BotLogin()})
	mem2 := opsboard.StoreMemory(store2, "acme/shop", statestore.LockInfo{Command: "test"})
	if n, err := opsboard.Update(t.Context(), c2, mem2, live, nil, now); err != nil || n != old {
		t.Fatalf("an earlier board: #%d %v, want #%d", n, err, old)
	}
	if got, _ := mem2.Number(t.Context()); got != old {
		t.Errorf("remembered #%d, want #%d", got, old)
	}
}

// standIn is a GitHub stand-in (of opts: search lagging by its default) with acme/shop, an App
// client on it, and a state bucket in a directory.
func standIn(t *testing.T, opts ...simgithub.Options) (*simgithub.Server, *github.Client, *statestore.Store) {
	t.Helper()
	s, err := simgithub.New(append(opts, simgithub.Options{})[0])
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.AddRepo("acme/shop", "main")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	c, err := github.NewClient(ctx, github.Auth{AppID: s.AppID(), PrivateKeyPEM: s.AppPrivateKeyPEM(), Owner: "acme", Repo: "shop", BaseURL: srv.URL,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	key, err := statestore.NewKeyURL()
	if err != nil {
		t.Fatal(err)
	}
	store, err := statestore.Open(ctx, statestore.Config{StateURL: "file://" + t.TempDir(), KeyURL: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return s, c, store
}

// TestBoardAtItsLimit: a thousand clusters of history in the month (spread over it, or all in
// the chart's last 7 days), a hundred live ones (max_clusters' bound) and five hundred orphans,
// with names at GitHub's and Scaleway's longest: the body stays within commands.MaxBodyBytes
// (GitHub's 65,536 less room for the schedule notice) run after run, lists every live cluster,
// says what it left out, and the month's spend stays exact (what is folded out of the list is
// still counted). Before, the history was a plain list: past about 255 clusters every update was
// refused.
func TestBoardAtItsLimit(t *testing.T) {
	month := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	long := func(prefix string, i, n int) string {
		s := fmt.Sprintf("%s-%d-", prefix, i)
		return s + strings.Repeat("x", n-len(s))
	}
	var live []opsboard.Entry
	for i := range 100 {
		live = append(live, opsboard.Entry{Cluster: long("acme-shop", i, 63), Repository: "acme/" + strings.Repeat("s", 90), Number: 100000 + i,
			RequestedBy: long("u", i, 39), Created: end.Add(-time.Duration(i) * time.Hour), Expires: end.Add(time.Hour), DailyNanoEUR: 4_300_000_000, Phase: "ready"})
	}
	// A hundred spares (ten times pool.size's bound), their health at its longest.
	for i := range 100 {
		live = append(live, opsboard.Entry{Cluster: long("spare", i, 63), Repository: "acme/" + strings.Repeat("s", 90), Spare: true,
			Created: end.Add(-time.Duration(i) * time.Minute), Ready: end, DailyNanoEUR: 4_300_000_000, Phase: "ready",
			Health: "failed its health check at 21:40 UTC: " + strings.Repeat("nodes: worker NotReady | ", 40)})
	}
	var orphans []opsboard.Orphan
	for i := range 500 {
		orphans = append(orphans, opsboard.Orphan{Cluster: long("old", i, 63), Zone: "fr-par-1", Detail: strings.Repeat("3 servers, ", 30)})
	}
	for _, tc := range []struct {
		name string
		span time.Duration // the thousand lifetimes start over this span before end
	}{{"spread over the month", end.Sub(month) - 24*time.Hour}, {"all in the last 7 days", 7*24*time.Hour - 2*time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			var ended []opsboard.Entry
			for i := range 1000 {
				start := end.Add(-tc.span + time.Duration(i)*tc.span/1000)
				ended = append(ended, opsboard.Entry{Cluster: long("acme-shop", 1000+i, 63), Repository: "acme/" + strings.Repeat("s", 90), Number: 200000 + i,
					RequestedBy: long("u", i, 39), Created: start, Expires: start.Add(8 * time.Hour), Ended: start.Add(90 * time.Minute), DailyNanoEUR: 4_300_000_000 + int64(i)})
			}
			all := opsboard.History{Month: "2026-11", Entries: append(slices.Clone(ended), live...)}
			want := opsboard.MonthSpend(all, end)
			// Runs every half hour: each reads the last body, merges the live clusters, renders.
			body := ""
			prev := opsboard.History{Entries: ended}
			for run := range 3 {
				at := end.Add(time.Duration(run) * 30 * time.Minute)
				body = opsboard.Render(opsboard.Merge(prev, live, at), orphans, at)
				if len(body) > commands.MaxBodyBytes {
					t.Fatalf("run %d: %d bytes, over %d", run, len(body), commands.MaxBodyBytes)
				}
				prev = opsboard.ParseHistory(body)
				if got := opsboard.MonthSpend(prev, end); got != want {
					t.Fatalf("run %d: the month's spend is %s after the body's round trip, want %s", run, got.Format(2), want.Format(2))
				}
			}
			for _, e := range live {
				if !strings.Contains(body, e.Cluster) {
					t.Fatalf("live cluster %s is not listed", e.Cluster)
				}
			}
			for _, said := range []string{"and 400 more, not listed", "not drawn"} {
				if !strings.Contains(body, said) {
					t.Errorf("the board does not say what it left out (%q)", said)
				}
			}
			t.Logf("%d bytes; %d lifetimes remembered, %d folded into the spend", len(body), len(prev.Entries), prev.Folded)
		})
	}
}

// TestMergeFolds: a lifetime that leaves the chart's window is folded into the month's spend
// (its cost this month, and a count) when it ended this month, dropped when it ended before;
// a new month starts the folded sum again.
func TestMergeFolds(t *testing.T) {
	day := 2_400_000_000 // 2.40 € a day: 0.10 € an hour
	old := opsboard.Entry{Cluster: "a", Created: now.Add(-10 * 24 * time.Hour), Ended: now.Add(-9 * 24 * time.Hour), DailyNanoEUR: int64(day)}
	lastMonth := opsboard.Entry{Cluster: "b", Created: now.AddDate(0, -1, -3), Ended: now.AddDate(0, -1, -2), DailyNanoEUR: int64(day)}
	h := opsboard.Merge(opsboard.History{Month: "2026-11", FoldedNanoEUR: 500_000_000, Folded: 2, Entries: []opsboard.Entry{old, lastMonth}}, nil, now)
	if len(h.Entries) != 0 || h.Folded != 3 || h.FoldedNanoEUR != 500_000_000+int64(day) {
		t.Fatalf("folded %d for %d nano-euros, entries %v; want 3 for 2.90 €, none left", h.Folded, h.FoldedNanoEUR, h.Entries)
	}
	if got := opsboard.MonthSpend(h, now).Format(2); got != "€ 2.90" {
		t.Errorf("month spend %s, want € 2.90", got)
	}
	next := opsboard.Merge(h, nil, now.AddDate(0, 0, 2)) // December
	if next.Folded != 0 || next.FoldedNanoEUR != 0 || next.Month != "2026-12" {
		t.Errorf("a new month kept November's folded sum: %+v", next)
	}
}
