package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/sim/fidelity"
	"github.com/pocbot/pocbot/internal/sim/world"
)

var updateRecording = flag.Bool("update-recording", false, "rewrite the emulated world's recording under internal/sim/fidelity/testdata")

// checkRecording holds the recording of an up, a pause, a resume and a down of the emulated world
// (TestPauseAndResumeCommands): one cassette per command and service, none of the world's
// secrets in any of them, and its replay against fresh stand-ins matching at 99 % at least.
func checkRecording(t *testing.T, w *world.World, dir string) {
	t.Helper()
	files := cassettesIn(t, dir, "up-", "pause-", "resume-", "down-")
	checkReplay(t, w, dir, files, "emulated-up-pause-resume-down")
}

// cassettesIn lists dir's cassettes and fails unless each of the prefixes (a command's name)
// names one.
func cassettesIn(t *testing.T, dir string, prefixes ...string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.cassette.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, want := range prefixes {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no cassette of %s in %v", strings.TrimSuffix(want, "-"), names)
		}
	}
	return files
}

// checkReplay holds a recording of the emulated world: none of the world's secrets in any of its
// files, and its replay against fresh stand-ins matching at 99 % at least. With -update-recording
// it is copied under internal/sim/fidelity/testdata/recordings/NAME, which `make fidelity`
// replays.
func checkReplay(t *testing.T, w *world.World, dir string, files []string, name string) {
	t.Helper()
	secrets := map[string]string{"SCW_SECRET_KEY": w.SecretKey, "SCW_ACCESS_KEY": w.AccessKey, "POC_STATE_KEY": w.StateKey}
	if w.S3 != nil {
		secrets["AWS_SECRET_ACCESS_KEY"] = w.S3.SecretKey
	}
	var total int64
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		total += int64(len(raw))
		for name, v := range secrets {
			if v != "" && bytes.Contains(raw, []byte(v)) {
				t.Errorf("%s holds %s", filepath.Base(f), name)
			}
		}
	}
	rep, err := fidelity.ReplayDir(t.Context(), dir, fidelity.Options{TimeFactor: testTimeFactor})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Write(&out)
	t.Logf("%d cassettes, %d bytes\n%s", len(files), total, out.String())
	if rep.Rate() < 0.99 {
		t.Errorf("the recording replays at %.1f %%, under 99 %%", 100*rep.Rate())
	}
	if *updateRecording {
		dst := filepath.Join("..", "..", "internal", "sim", "fidelity", "testdata", "recordings", name)
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, "replay.json"), []byte(fmt.Sprintf(`{"time_factor": %v}`+"\n", testTimeFactor)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkHandleRecording holds the recording of a `bot handle` run in App mode: a GitHub cassette
// holding the installation token's minting, the token removed from its answer and from every
// request's header, and nothing of the App's key (nor of the world's other secrets).
func checkHandleRecording(t *testing.T, w *world.World, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.github.cassette.yaml"))
	if len(files) != 1 {
		t.Fatalf("GitHub cassettes of bot handle: %v, want one", files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(w.AppKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(key), "\n") {
		if len(l) > 16 && !strings.HasPrefix(l, "-----") && bytes.Contains(raw, []byte(l)) {
			t.Fatalf("the GitHub cassette holds a line of the App's key")
		}
	}
	if !bytes.Contains(raw, []byte("/access_tokens")) || !bytes.Contains(raw, []byte(`"token":"REDACTED"`)) {
		t.Errorf("the cassette lacks the token's minting, its token removed:\n%.2000s", raw)
	}
	if bytes.Contains(raw, []byte("ghs_")) || bytes.Contains(raw, []byte("Bearer eyJ")) {
		t.Errorf("an installation token or the App's JWT survives in the cassette")
	}
	all, _ := filepath.Glob(filepath.Join(dir, "*.cassette.yaml"))
	for _, f := range all {
		b, _ := os.ReadFile(f)
		for _, v := range []string{w.SecretKey, w.StateKey} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s holds a secret of the world", filepath.Base(f))
			}
		}
	}
}
