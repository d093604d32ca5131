package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestReapCommand runs `bot reap` in-process against an emulated world: an operator's reap
// without GitHub settings (dry run, then for real), a reap with the App's settings that reads
// the repository's keep label from .github/poc.yml and comments on a closed issue, and partial
// GitHub settings refused.
func TestReapCommand(t *testing.T) {
	// openWorld's Scaleway client reads the process environment.
	ctx, w, store := cliWorld(t, 2*time.Minute)
	now := time.Now().UTC()
	put := func(h statestore.Header) {
		t.Helper()
		putReady(ctx, t, store, h)
	}
	exists := func(c string) bool {
		_, err := store.Get(ctx, c)
		if err != nil && !errors.Is(err, statestore.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	bot := func(env map[string]string, args ...string) (string, string, error) {
		return runBot(ctx, over(env), append([]string{"reap"}, args...)...)
	}
	operator := map[string]string{"POC_APP_ID": "", "POC_APP_PRIVATE_KEY_FILE": "", "GITHUB_TOKEN": "", "POC_APP_PRIVATE_KEY": ""}

	put(statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1, Expires: now.Add(-time.Minute)})
	put(statestore.Header{Cluster: "acme-shop-2", Repository: "acme/shop", Expires: now.Add(5 * time.Hour)})

	out, _, err := bot(operator, "--dry-run")
	if err != nil {
		t.Fatalf("reap --dry-run: %v", err)
	}
	t.Logf("\n%s", out)
	if !strings.Contains(out, "acme-shop-1") || !strings.Contains(out, "would destroy") || !strings.Contains(out, "1 would be destroyed") || !exists("acme-shop-1") {
		t.Fatalf("dry run did not report (or did perform) the teardown:\n%s", out)
	}
	out, _, err = bot(operator)
	if err != nil {
		t.Fatalf("reap: %v", err)
	}
	t.Logf("\n%s", out)
	if exists("acme-shop-1") || !exists("acme-shop-2") {
		t.Fatalf("operator reap: expired left = %v, live left = %v", exists("acme-shop-1"), exists("acme-shop-2"))
	}
	if !strings.Contains(out, "1 destroyed") {
		t.Errorf("summary does not count the teardown:\n%s", out)
	}

	// With the App: the closed issue's cluster goes, the repository's own keep label holds an
	// expired one, and another repository's cluster is not this run's business.
	w.GitHub.AddRepo("acme/shop", "main")
	w.GitHub.SetFile("acme/shop", "main", ".github/poc.yml", []byte("keep_label: hold-on\n"))
	closed := w.GitHub.AddIssue("acme/shop", ghsim.Issue{Title: "poc", Closed: true})
	held := w.GitHub.AddIssue("acme/shop", ghsim.Issue{Title: "poc", Labels: []string{"hold-on"}})
	put(statestore.Header{Cluster: "acme-shop-closed", Repository: "acme/shop", Number: closed, Expires: now.Add(5 * time.Hour)})
	put(statestore.Header{Cluster: "acme-shop-held", Repository: "acme/shop", Number: held, Expires: now.Add(-time.Hour)})
	put(statestore.Header{Cluster: "acme-other-1", Repository: "acme/other", Number: 1, Expires: now.Add(-time.Hour)})
	out, _, err = bot(map[string]string{"GITHUB_REPOSITORY": "acme/shop"})
	if err != nil {
		t.Fatalf("reap with GitHub: %v", err)
	}
	t.Logf("\n%s", out)
	if exists("acme-shop-closed") || !exists("acme-shop-held") || !exists("acme-other-1") {
		t.Errorf("with GitHub: closed left %v, held left %v, other repo left %v", exists("acme-shop-closed"), exists("acme-shop-held"), exists("acme-other-1"))
	}
	if !strings.Contains(out, "kept") || !strings.Contains(out, "hold-on") {
		t.Errorf("the repository's keep label is not in the table:\n%s", out)
	}
	cs := w.GitHub.Comments("acme/shop", closed)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "torn down by the reaper") {
		t.Errorf("closed issue comments: %+v", cs)
	}

	// Half-configured GitHub settings are an error, not a quiet operator mode.
	_, _, err = bot(map[string]string{"GITHUB_REPOSITORY": "acme/shop", "POC_APP_PRIVATE_KEY_FILE": ""})
	if err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("App id without a key: %v", err)
	}
	_, _, err = bot(map[string]string{"GITHUB_REPOSITORY": ""})
	if err == nil || !strings.Contains(err.Error(), "--repository") {
		t.Errorf("GitHub settings without a repository: %v", err)
	}
}
