package fidelity

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
