package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/appsetup/appsetuptest"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
)

// browserWriter is init's stderr: when init prints the page to open, it does what the user's
// browser does — load the page, post its form to GitHub, follow the redirect back.
type browserWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done chan error
}

var pageRE = regexp.MustCompile(`Open (http://\S+) in your browser`)

func (b *browserWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if m := pageRE.FindSubmatch(p); m != nil {
		go func(page string) { b.done <- visit(page) }(string(m[1]))
	}
	return len(p), nil
}

func visit(page string) error {
	_, _, err := appsetuptest.Browse(page, nil)
	return err
}

// Without an App, init registers one through the manifest flow (the browser's one confirmation),
// writes its key to a 0600 file, never prints it, and says what comes next: install, run again.
func TestInitRegistersTheApp(t *testing.T) {
	s, url := githubtest.Serve(t, ghsim.Options{})
	s.AddRepo("acme/shop", "main")
	s.SetPermission("acme/shop", "ada", "admin")
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	env := map[string]string{"GH_TOKEN": s.AddUserToken("ada")}
	var so bytes.Buffer
	se := &browserWriter{done: make(chan error, 1)}
	a := newApp(&so, se, func(k string) string { return env[k] })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := a.dispatch(ctx, []string{"init", "--repo", "acme/shop", "--api-url", url, "--github-url", url, "--app-key-file", keyFile,
		"--action", testActionRef}); err != nil {
		t.Fatalf("init: %v\n%s%s", err, so.String(), se.buf.String())
	}
	if err := <-se.done; err != nil {
		t.Fatalf("the browser: %v", err)
	}
	apps := s.ManifestApps()
	if len(apps) != 1 {
		t.Fatalf("%d Apps registered, want 1", len(apps))
	}
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	out := so.String() + se.buf.String()
	if strings.Contains(out, strings.TrimSpace(apps[0].KeyPEM)[40:90]) {
		t.Error("init printed the App's private key")
	}
	for _, want := range []string{"/apps/pocbot/installations/new", "POC_APP_PRIVATE_KEY_FILE=" + keyFile, "run init again"} {
		if !strings.Contains(out, want) {
			t.Errorf("init's output lacks %q:\n%s", want, out)
		}
	}
	if len(s.PullRequests("acme/shop")) != 0 {
		t.Error("init went on without an installed App")
	}
}
