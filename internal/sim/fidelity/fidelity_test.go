package fidelity

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

var cassettes = flag.String("cassettes", "", "a directory of recorded cassettes to replay instead of testdata/recordings (make fidelity CASSETTES=DIR)")

// replayOptions are a recording's: its replay.json names the latency scale of the world it was
// recorded on (an emulated world's); none is a real account's.
func replayOptions(t *testing.T, dir string) Options {
	var o struct {
		TimeFactor float64 `json:"time_factor"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "replay.json")); err == nil {
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s/replay.json: %v", dir, err)
		}
	}
	return Options{TimeFactor: o.TimeFactor, Dir: t.TempDir()}
}

// Every recording under testdata/recordings (or the directory -cassettes names) replays against
// the stand-ins at 99 % at least. testdata/recordings/emulated-up-pause-resume-down is `bot up`,
// `pause`, `resume` and `down` with --record on the emulated world (cmd/bot's
// TestPauseAndResumeCommands writes it again with -update-recording).
func TestRecordedFidelity(t *testing.T) {
	t.Parallel()
	dirs, _ := filepath.Glob(filepath.Join("testdata", "recordings", "*"))
	if *cassettes != "" {
		dirs = []string{*cassettes}
	}
	if len(dirs) == 0 {
		t.Fatal("no recording to replay under testdata/recordings")
	}
	objstoretest.Require(t)
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			rep, err := ReplayDir(t.Context(), dir, replayOptions(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Write(&out)
			t.Logf("%s\n%s", dir, out.String())
			if rep.Rate() < 0.99 {
				t.Errorf("%s replays at %.1f %%, under 99 %%", dir, 100*rep.Rate())
			}
		})
	}
}

// The replay fails a stand-in that answers otherwise than the recording: a recorded answer
// without one of its fields (the stand-in then has one the real API did not send), and a recorded
// status the stand-in does not give, each count as one mismatch.
func TestReplayCatchesWhatTheStandInAnswersOtherwise(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("testdata", "recordings", "emulated-up-pause-resume-down")
	ex, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	field, status := -1, -1
	for i, x := range ex {
		switch {
		case field < 0 && x.Request.Method == "GET" && strings.Contains(x.Request.URL, "/instance/v1/zones/") &&
			strings.Contains(x.Request.URL, "/security_groups/") && x.Response.Code == 200:
			field = i
			x.Response.Body = strings.Replace(x.Response.Body, `"enable_default_security":`, `"x_enable_default_security":`, 1)
		case status < 0 && x.Request.Method == "GET" && strings.Contains(x.Request.URL, "/iam/v1alpha1/ssh-keys") && x.Response.Code == 200:
			status = i
			x.Response.Code = 403
		}
	}
	if field < 0 || status < 0 {
		t.Fatalf("the recording has no exchange to alter (%d, %d)", field, status)
	}
	// The recording up to the altered exchanges is enough.
	rep, err := Replay(t.Context(), ex[:max(field, status)+1], replayOptions(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	m, n, _ := rep.Counts()
	if n-m != 2 {
		var out bytes.Buffer
		rep.Write(&out)
		t.Fatalf("%d mismatches, want the 2 made:\n%s", n-m, out.String())
	}
	if v := rep.Results[field].Verdict; !strings.Contains(v.Why, "enable_default_security") {
		t.Errorf("the altered answer's verdict: %q", v.Why)
	}
	if v := rep.Results[status].Verdict; !strings.Contains(v.Why, "recorded 403") {
		t.Errorf("the altered status's verdict: %q", v.Why)
	}
}
