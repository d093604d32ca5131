package repoinit

import (
	"strings"
	"testing"
)

// The App is installed on the owner's selected repositories (acme/shop); init on a second one
// (acme/api) adds it to that installation with the admin's token: no browser trip. Its dry run
// plans it without doing it, and a second init changes nothing.
func TestInitAddsASecondRepositoryToTheInstallation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	f.gh.SelectRepositories("acme/shop")
	f.gh.AddRepo("acme/api", "main")
	f.gh.SetPermission("acme/api", "ada", "admin")
	if f.gh.InstallationID("acme/api") != 0 {
		t.Fatal("the stand-in covers acme/api before init: the test would prove nothing")
	}
	second := func(c *Config) { c.Repo = "acme/api" }

	_, out, err := f.run(t, func(c *Config) { second(c); c.DryRun = true })
	if err != nil || !strings.Contains(out, "would add acme/api to the App") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if f.gh.InstallationID("acme/api") != 0 {
		t.Fatal("the dry run added the repository to the installation")
	}

	rep, out, err := f.run(t, second)
	if err != nil {
		t.Fatalf("init on a second repository of an installed owner: %v\n%s", err, out)
	}
	if got, want := f.gh.InstallationID("acme/api"), f.gh.InstallationID("acme/shop"); got == 0 || got != want {
		t.Errorf("acme/api is covered by installation %d, want the owner's (%d)", got, want)
	}
	if !strings.Contains(out, "no browser needed") || rep.PR == 0 {
		t.Errorf("report %+v\n%s", rep, out)
	}
	added := 0
	for _, r := range f.gh.Requests() {
		if r.Method == "PUT" && strings.HasPrefix(r.Path, "/user/installations/") {
			added++
		}
	}
	if added != 1 {
		t.Errorf("%d PUT /user/installations/… requests, want 1", added)
	}

	before := len(f.gh.Requests())
	rep2, out2, err := f.run(t, second)
	if err != nil {
		t.Fatalf("second init: %v\n%s", err, out2)
	}
	if n, list := f.writes(before); n != 0 || rep2.Changes != 0 {
		t.Errorf("the second init changed things: %v\n%s", list, out2)
	}
}
