// Package githubtest serves the GitHub stand-in for one test and stops it when the test ends.
package githubtest

import (
	"testing"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// Serve starts the GitHub stand-in made with opts on loopback (Server.Start: the real client's API
// and web URL both) until the test ends; it returns the stand-in and its URL.
func Serve(t testing.TB, opts ghsim.Options) (*ghsim.Server, string) {
	t.Helper()
	return ghsim.ServeFor(t, opts)
}
