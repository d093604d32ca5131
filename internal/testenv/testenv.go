// Package testenv owns what a test may ask of the machine it runs on: a program on PATH, a server
// binary. Where CI is set (.ci/run sets it, after installing everything the tests need) a missing
// one fails the test, so CI never passes a test it did not run; elsewhere it skips the test,
// naming how to install what is missing, so a developer's machine without, say, sshd still runs
// the rest. Only tests import it.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// InCI tells whether the tests run under CI (the CI variable is set, as .ci/run and GitHub
// Actions set it).
func InCI() bool { return os.Getenv("CI") != "" }

// Unavailable stops tb because what it needs is missing (err says why): a failure under CI, a
// skip elsewhere; both name install, the way to get it.
func Unavailable(tb testing.TB, what, install string, err error) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("CI is set and %s is required: %v (.ci/run installs it: %s)", what, err, install)
		return
	}
	tb.Skipf("%s is not available here: %v (install it to run this test: %s; under CI it fails instead)", what, err, install)
}

// Program returns the path of the program name on PATH; a missing one stops tb (Unavailable).
func Program(tb testing.TB, name, install string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(tb, name, install, err)
	}
	return p
}
