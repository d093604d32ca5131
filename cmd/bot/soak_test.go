package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/soak"
)

// The bounded soak of `make test`: the histories in which the soak found bugs (each replayed as
// it was shrunk), a fixed set of whole histories, and a few new ones, with every invariant
// checked. `make soak` runs it long; a failure prints its seed and the replay command.
func TestSoak(t *testing.T) {
	if _, err := exec.LookPath("versitygw"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("versitygw is not installed: .ci/run installs it (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
		}
		t.Skip("the soak needs versitygw (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
	}
	var out strings.Builder
	a := newApp(io.Discard, io.Discard, func(string) string { return "" })
	base := soak.Options{Bot: soakBot{a: a}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Regressions: each one a bug the soak found, as its shrunk history (written out, so that a
	// later change of the generator cannot turn them into other histories).
	for _, r := range []struct {
		name   string
		seed   uint64 // the seed that found it
		events []soak.Event
	}{
		{"/poc up on a merged pull request built a cluster the next schedule destroyed", 3199412373323603324, []soak.Event{
			{Kind: soak.KindPR, Repo: "acme/b", Number: 10, User: "wes", Action: "labeled", Async: true},
			{Kind: soak.KindComment, Repo: "acme/b", Number: 10, User: "ada", Body: "/poc up",
				Faults: soak.Faults{Rate5xx: 0.05, Rate429: 0.05, AfterEffect: 0.1, Slow: 0.1, SlowMax: 300 * time.Millisecond}},
			{Kind: soak.KindPR, Repo: "acme/b", Number: 10, User: "wes", Action: "merged"},
			{Kind: soak.KindComment, Repo: "acme/b", Number: 10, User: "ada", Body: "/poc up --admin-cidr 203.0.113.0/24 --ttl 2h"},
		}},
		// Known before the soak (issue 11, hole 2), and found by it on its own with seed 3: three
		// concurrent ups on max_clusters: 1 made two or three clusters.
		{"concurrent ups passed a max_clusters: 1 budget", 3, []soak.Event{
			{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc up", Async: true},
			{Kind: soak.KindComment, Repo: "acme/a", Number: 2, User: "wes", Body: "/poc up", Async: true},
			{Kind: soak.KindComment, Repo: "acme/a", Number: 3, User: "ada", Body: "/poc up", Async: true},
			{Kind: soak.KindWait, Jump: 2 * time.Second},
		}},
		{"ghinstallation's \"token: could not refresh\" error was taken for a leaked token", 6842692122990793282, []soak.Event{
			{Kind: soak.KindSchedule, Repo: "acme/a", KillAfter: 1},
		}},
		// Found by the accrual invariant on its first history: the reaper priced the expiry warning
		// and the teardown notice pro rata to the second (7.5 h: 1.34 €), the replies by the
		// started hour (8 h: 1.43 €).
		{"the reaper's accrued cost was pro rata, every other figure per started hour", 1, []soak.Event{
			{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc up"},
			{Kind: soak.KindClock, Jump: 7*time.Hour + 30*time.Minute},
			{Kind: soak.KindSchedule, Repo: "acme/a"},
			{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc cost"},
			{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc status"},
			{Kind: soak.KindClock, Jump: time.Hour},
			{Kind: soak.KindSchedule, Repo: "acme/a"},
		}},
	} {
		res, err := soak.Run(ctx, base, r.seed, r.events)
		if err != nil || len(res.Violations) > 0 {
			t.Errorf("%s (found by seed %d): %v %v", r.name, r.seed, err, res.Violations)
		}
	}

	// A history every soak runs: acme/b parks (park_for: 2h), so its down keeps the worker and
	// the next up (acme/a's: one state bucket, one pool) adopts it; the reaper and the settle
	// then park and expire it, under every invariant (parked workers recorded, none left).
	parkAdopt := []soak.Event{
		{Kind: soak.KindComment, Repo: "acme/b", Number: 1, User: "ada", Body: "/poc up"},
		{Kind: soak.KindComment, Repo: "acme/b", Number: 1, User: "ada", Body: "/poc down"},
		{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc up"},
		{Kind: soak.KindComment, Repo: "acme/a", Number: 1, User: "ada", Body: "/poc down"},
	}
	if res, err := soak.Run(ctx, base, 1, parkAdopt); err != nil || len(res.Violations) > 0 {
		t.Errorf("park on down, adopt on the next up: %v %v", err, res.Violations)
	}

	// Whole histories: a fixed set, then new seeds for the rest of the bound.
	sum, err := soak.Soak(ctx, soak.Config{Options: base, Seeds: []uint64{1, 2, 3}, Duration: 45 * time.Second,
		Events: 40, Parallel: 3, ShrinkRuns: 8, Out: &out})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Histories < 3 || sum.Violations > 0 {
		t.Fatalf("soak: %d histories, %d events, %d violations (replay each failure with the command above)", sum.Histories, sum.Events, sum.Violations)
	}
}
