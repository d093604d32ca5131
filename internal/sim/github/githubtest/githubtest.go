// Package githubtest serves the GitHub stand-in for one test and stops it when the test ends.
package githubtest

import (
	"net/http/httptest"
	"testing"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// Serve starts the GitHub stand-in made with opts on loopback (the real client's API and web URL
// both) and registers its stop; it returns the stand-in and its URL.
func Serve(t testing.TB, opts ghsim.Options) (*ghsim.Server, string) {
	t.Helper()
	s, err := ghsim.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}
