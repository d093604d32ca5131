package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

var perDay = regexp.MustCompile(`Total per day: € ([0-9.]+)`)

func dailyOf(t *testing.T, out string) float64 {
	t.Helper()
	m := perDay.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no daily total in:\n%s", out)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// `bot pause` and `bot resume` are /poc pause and /poc resume for an operator; `bot cost` prices
// a paused cluster as it bills paused (before, the CLI had neither verb, and `bot cost` priced a
// paused cluster's machines, which no longer exist).
func TestPauseAndResumeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the bot and runs a whole cluster: not in -short")
	}
	t.Parallel()
	// Object Storage is the real server when installed, so that the recording has its exchanges.
	_, w := startWorld(t, procBound, world.Options{S3: "auto"})
	b := newBotProc(t, w)
	rec := t.TempDir()
	b.mustRun(t, nil, "up", "--cluster", "p1", "--record", rec)
	running := dailyOf(t, b.mustRun(t, nil, "cost", "--cluster", "p1").stdout)
	// `bot up` records its duration for the ETA as `/poc up` does (clusterops.Ops.Up). The bucket
	// is the real S3 server's when installed, opened with the world's credentials.
	var opts []statestore.Option
	if w.S3 != nil {
		bucket, err := w.S3.OpenBucket(t.Context(), world.StateBucket)
		if err != nil {
			t.Fatal(err)
		}
		defer bucket.Close()
		opts = append(opts, statestore.WithBucket(bucket))
	}
	store, err := statestore.Open(t.Context(), statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if sh, err := store.GetShared(t.Context(), eta.DocName); err != nil || !strings.Contains(string(sh.Body), "cold, first image") {
		t.Errorf("bot up did not record its duration for the ETA: %v", err)
	}

	if r := b.run(t, nil, "resume", "--cluster", "p1"); r.code == 0 || !strings.Contains(r.stderr, "not paused") {
		t.Errorf("resume of a ready cluster (exit %d):\n%s", r.code, r.stderr)
	}
	p := b.mustRun(t, nil, "pause", "--cluster", "p1", "--record", rec)
	if !strings.Contains(p.stdout, "cluster p1 is paused") {
		t.Errorf("pause:\n%s\n%s", p.stdout, p.stderr)
	}
	paused := dailyOf(t, b.mustRun(t, nil, "cost", "--cluster", "p1").stdout)
	if paused <= 0 || paused >= running*0.10 {
		t.Errorf("bot cost of the paused cluster: %.2f per day, running %.2f: want the paused price (IPs, image, snapshot)", paused, running)
	}
	// bot status prices it as bot cost does (it priced the machines a paused cluster has not).
	if st := b.mustRun(t, nil, "status", "--cluster", "p1", "--health=false").stdout; !strings.Contains(st, fmt.Sprintf("€ %.2f per day", paused)) {
		t.Errorf("bot status of the paused cluster does not say € %.2f per day:\n%s", paused, st)
	}
	r := b.mustRun(t, nil, "resume", "--cluster", "p1", "--record", rec)
	if !strings.Contains(r.stdout, "cluster p1 is ready") {
		t.Errorf("resume:\n%s\n%s", r.stdout, r.stderr)
	}
	if again := dailyOf(t, b.mustRun(t, nil, "cost", "--cluster", "p1").stdout); again != running {
		t.Errorf("bot cost after the resume: %.2f per day, want the running %.2f", again, running)
	}
	// POC_RECORD_DIR is the flag's setting: the down is recorded through it.
	b.mustRun(t, map[string]string{"POC_RECORD_DIR": rec}, "down", "--cluster", "p1")
	checkRecording(t, w, rec)
}
