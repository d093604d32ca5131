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
	s, err := ghsim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s, url
}
