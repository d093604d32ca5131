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

	// Regressions: each one a bug the soak found, replayed as shrunk.
	for _, r := range []struct {
		name string
		seed uint64
		keep []int
	}{
		// `/poc up` on a merged pull request built a cluster the next schedule destroyed.
		{"up on a merged PR", 3199412373323603324, []int{38, 44, 46, 47}},
		// ghinstallation's "token: could not refresh" error was taken for a leaked token.
		{"killed at its first request", 6842692122990793282, []int{16}},
	} {
		sum, err := soak.Soak(ctx, soak.Config{Options: base, Seeds: []uint64{r.seed}, Keep: r.keep, Out: &out})
		if err != nil || sum.Violations > 0 {
			t.Errorf("%s (seed %d): %v\n%s", r.name, r.seed, err, out.String())
		}
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
