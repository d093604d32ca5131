package live

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/github"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
	"github.com/pocbot/pocbot/internal/statestore/storetest"
)

const ghRepo = "acme/shop"

// ghConfig is the doctor's configuration for the GitHub rows: the App installed on ghRepo of a
// stand-in shaped by o, nothing else (no world: the question is the reads and their reading).
func ghConfig(t *testing.T, o ghsim.Options) (*ghsim.Server, Config) {
	t.Helper()
	s, url := githubtest.Serve(t, o)
	s.AddRepo(ghRepo, "main")
	owner, name, _ := strings.Cut(ghRepo, "/")
	auth := github.Auth{AppID: s.AppID(), PrivateKeyPEM: s.AppPrivateKeyPEM(), Owner: owner, Repo: name, BaseURL: url}
	return s, Config{GitHubRepo: ghRepo, GitHubAPIURL: url, HTTP: &http.Client{Timeout: 10 * time.Second},
		GitHubToken: func(ctx context.Context) (string, error) {
			c, err := github.NewClient(ctx, auth)
			if err != nil {
				return "", err
			}
			return c.Token(ctx)
		}}
}

// Register row compare-base, under each reading the stand-in plays: reads of the default
// branch's own history tell them apart (head...older lists nothing under merge-base, head's
// changes under base-tip); a branch of one commit, or of commits of one tree, settles nothing.
func TestCompareBaseProbe(t *testing.T) {
	for _, c := range []struct {
		baseTip bool
		want    string
	}{{false, "merge-base"}, {true, "base-tip"}} {
		t.Run(c.want, func(t *testing.T) {
			t.Parallel()
			s, cfg := ghConfig(t, ghsim.Options{CompareBaseTip: c.baseTip})
			s.SetFile(ghRepo, "", "README.md", []byte("hello\n"))
			s.SetFile(ghRepo, "", "main.go", []byte("package main\n"))
			before := len(s.Requests())
			f := compareBase(t.Context(), cfg)
			if f.Err != nil || f.Reading != c.want {
				t.Fatalf("found %q (%v): %s; the stand-in plays %s", f.Reading, f.Err, f.Detail, c.want)
			}
			for _, r := range s.Requests()[before:] {
				if r.Method != http.MethodGet && !strings.HasSuffix(r.Path, "/access_tokens") {
					t.Errorf("the probe wrote: %s %s", r.Method, r.Path)
				}
			}
		})
	}
	_, cfg := ghConfig(t, ghsim.Options{})
	if f := compareBase(t.Context(), cfg); f.Err != nil || f.Reading != "" || !strings.Contains(f.Detail, "one commit") {
		t.Errorf("a branch of one commit: %+v, want unknown, saying why", f)
	}
	s, cfg := ghConfig(t, ghsim.Options{})
	s.SetFile(ghRepo, "", "README.md", []byte("same\n"))
	s.SetFile(ghRepo, "", "README.md", []byte("same\n"))
	if f := compareBase(t.Context(), cfg); f.Reading != "" && f.Reading != "merge-base" {
		t.Errorf("commits of one tree: %+v", f)
	}
	if f := compareBase(t.Context(), Config{}); f.Skipped == "" {
		t.Errorf("no App or repository: %+v, want skipped", f)
	}
}

// Register row variable-writers: a read cannot tell the readings apart; the probe says whom they
// concern here (collaborators with write who are not administrators), and never settles a reading.
func TestVariableWritersProbe(t *testing.T) {
	s, cfg := ghConfig(t, ghsim.Options{})
	s.SetPermission(ghRepo, "ada", "admin")
	s.SetPermission(ghRepo, "rita", "read")
	f := variableWriters(t.Context(), cfg)
	if f.Err != nil || f.Reading != "" || !strings.Contains(f.Detail, "every collaborator who may push is an administrator") {
		t.Errorf("admins only: %+v", f)
	}
	s.SetPermission(ghRepo, "wes", "write")
	s.SetPermission(ghRepo, "max", "maintain")
	f = variableWriters(t.Context(), cfg)
	if f.Err != nil || f.Reading != "" || !strings.Contains(f.Detail, "wes (write)") || !strings.Contains(f.Detail, "max (maintain)") || strings.Contains(f.Detail, "ada") || strings.Contains(f.Detail, "rita") {
		t.Errorf("with writers: %+v, want wes and max named, not ada or rita", f)
	}
}

// The rows the bot's runs settle (internal/firstcontact): unknown, saying what settles them,
// until a run recorded one; then the reading it met, with what it saw; a reading the bot does not
// handle fails the doctor.
func TestObservedRows(t *testing.T) {
	store, _ := storetest.Open(t)
	book := &firstcontact.Book{Store: store}
	cfg := Config{FirstContact: book}
	ctx := t.Context()
	for _, id := range []string{assume.EMPatchDelivering, assume.UserDataCap, assume.JobStart} {
		p := probeOf(t, id)
		if f := p(ctx, cfg); f.Reading != "" || f.Err != nil || !strings.Contains(f.Detail, "settled by") {
			t.Errorf("%s before any run: %+v", id, f)
		}
		if f := p(ctx, Config{}); f.Skipped == "" {
			t.Errorf("%s without a state bucket: %+v, want skipped", id, f)
		}
	}
	n, _ := firstcontact.JobStart(time.Now().Add(-45*time.Second), time.Now())
	if err := book.Record(ctx, n,
		firstcontact.Note{Row: assume.EMPatchDelivering, Reading: "refused", Detail: "400 Server is not delivered"},
		firstcontact.Note{Row: assume.UserDataCap, Reading: "too-small", Detail: "user data of 81920 bytes refused"}); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{assume.EMPatchDelivering: "refused", assume.UserDataCap: "too-small", assume.JobStart: "queued"} {
		f := probeOf(t, id)(ctx, cfg)
		res := Result{Row: assume.MustLookup(id), Finding: f}
		if f.Reading != want || f.Detail == "" {
			t.Errorf("%s after a run: %+v, want %s", id, f, want)
		}
		if failed := res.Status() == Failed; failed != (id == assume.UserDataCap) {
			t.Errorf("%s=%s: failed %v", id, f.Reading, failed)
		}
	}
}

func probeOf(t *testing.T, id string) func(context.Context, Config) Finding {
	t.Helper()
	for _, p := range register() {
		if p.row == id {
			return p.run
		}
	}
	t.Fatalf("no probe of %s", id)
	return nil
}
