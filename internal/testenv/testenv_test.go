package testenv

import (
	"errors"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper stopped it, instead of stopping.
type recorder struct {
	testing.TB
	failed, skipped string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Fatalf(f string, args ...any) { r.failed = f }
func (r *recorder) Skipf(f string, args ...any)  { r.skipped = f }

// A missing program fails under CI and skips elsewhere; a program that exists is found and stops
// nothing.
func TestUnavailableFailsUnderCIAndSkipsElsewhere(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Unavailable(r, "frobnicator", "apt-get install frob", errors.New("not found"))
		if ci != "" && (r.failed == "" || r.skipped != "") {
			t.Errorf("CI=%q: failed %q, skipped %q; want a failure", ci, r.failed, r.skipped)
		}
		if ci == "" && (r.skipped == "" || r.failed != "") {
			t.Errorf("CI=%q: failed %q, skipped %q; want a skip", ci, r.failed, r.skipped)
		}
		r = &recorder{TB: t}
		if p := Program(r, "sh", "apt-get install dash"); !strings.HasSuffix(p, "/sh") || r.failed != "" || r.skipped != "" {
			t.Errorf("CI=%q: Program(sh) = %q, failed %q, skipped %q", ci, p, r.failed, r.skipped)
		}
		r = &recorder{TB: t}
		if Program(r, "no-such-program-pocbot", "nothing"); (ci != "") != (r.failed != "") {
			t.Errorf("CI=%q: a missing program: failed %q, skipped %q", ci, r.failed, r.skipped)
		}
	}
}
