package scaleway

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// The cassettes are third-party data under their own licence (testdata/cassettes/README.md), kept
// as unmodified copies: each file's git blob hash must be the one SOURCE.md names for it, so an
// edit (or a truncated checkout) fails here rather than silently changing what fidelity means.
func TestCassettesAreUnmodified(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(cassetteDir, "SOURCE.md"))
	if err != nil {
		t.Fatalf("reading the cassettes' provenance: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(cassetteDir, "*.cassette.yaml"))
	if len(files) == 0 {
		t.Fatalf("no cassettes under %s", cassetteDir)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(regexp.QuoteMeta("### "+filepath.Base(f)) + `\s+- Source path: [^\n]*git blob ` + "`([0-9a-f]{40})`")
		m := want.FindSubmatch(source)
		if m == nil {
			t.Errorf("%s: SOURCE.md names no git blob hash for it", filepath.Base(f))
			continue
		}
		if got := gitBlobHash(raw); got != string(m[1]) {
			t.Errorf("%s: blob hash %s, SOURCE.md says %s: the recording was modified", filepath.Base(f), got, m[1])
		}
	}
}

// gitBlobHash is `git hash-object` of a file's bytes.
func gitBlobHash(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}
