package appsetup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/appsetup"
	"github.com/pocbot/pocbot/internal/appsetup/appsetuptest"
	simgithub "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
)

// browser is appsetuptest.Browse, its failures t's.
func browser(t *testing.T, pageURL string, tamper func(action string, form url.Values) string) (int, string) {
	t.Helper()
	code, body, err := appsetuptest.Browse(pageURL, tamper)
	if err != nil {
		t.Error(err)
	}
	return code, body
}

func standIn(t *testing.T) (*simgithub.Server, string) {
	return githubtest.Serve(t, simgithub.Options{})
}

func TestManifestFlow(t *testing.T) {
	s, base := standIn(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "pocbot.pem")
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := appsetup.Run(ctx, appsetup.Config{Owner: "acme", WebURL: base, APIURL: base, KeyFile: keyFile, Repository: "acme/shop", Out: &out,
		Ready: func(u string) {
			go func() {
				if code, body := browser(t, u, nil); code != http.StatusOK || !strings.Contains(body, "is registered") {
					t.Errorf("the browser ended on %d: %s", code, body)
				}
			}()
		}})
	if err != nil {
		t.Fatal(err)
	}
	apps := s.ManifestApps()
	if len(apps) != 1 {
		t.Fatalf("%d Apps registered, want 1", len(apps))
	}
	app := apps[0]
	if res.AppID != app.ID || res.Slug != "pocbot" || app.Owner != "acme" {
		t.Errorf("result %+v, registered %+v", res, app)
	}
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(keyFile); string(b) != app.KeyPEM {
		t.Error("the key file is not the key GitHub handed out")
	}
	if want := map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "read",
		"deployments": "write", "checks": "write", "actions": "write"}; !reflect.DeepEqual(app.Permissions, want) {
		t.Errorf("permissions %v, want %v", app.Permissions, want)
	}
	if len(app.Events) != 0 || app.Manifest["hook_attributes"] != nil {
		t.Errorf("the App subscribes to events or has a webhook: %v %v", app.Events, app.Manifest["hook_attributes"])
	}
	o := out.String()
	for _, want := range []string{"gh variable set POC_APP_ID --env poc --repo acme/shop --body " + strings.TrimSpace(jsonInt(app.ID)),
		"gh secret set POC_APP_PRIVATE_KEY --env poc --repo acme/shop < " + keyFile, "/apps/pocbot/installations/new"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "PRIVATE KEY-----") {
		t.Error("the private key is printed")
	}
	// Every variable it tells the user to set is one the workflow passes to the bot, and every
	// command it prints exists on Linux and macOS alike (shred does not exist on macOS).
	workflow, err := os.ReadFile(filepath.Join("..", "..", "deploy", "workflow", "poc.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(o, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[0] == "gh" && f[1] == "variable" && f[2] == "set" && !strings.Contains(string(workflow), "vars."+f[3]+" ") {
			t.Errorf("it asks for variable %s, which deploy/workflow/poc.yml never passes to the bot", f[3])
		}
		if len(f) > 0 && f[0] == "shred" {
			t.Errorf("it prints %q, which macOS lacks", strings.TrimSpace(line))
		}
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A redirect with another run's state is refused (the flow keeps waiting, then times out), and no
// key is written; an existing key file is never overwritten.
func TestManifestFlowRefusals(t *testing.T) {
	_, base := standIn(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "k.pem")
	ctx := t.Context()
	_, err := appsetup.Run(ctx, appsetup.Config{WebURL: base, APIURL: base, KeyFile: keyFile, Timeout: 3 * time.Second,
		Ready: func(u string) {
			go func() {
				code, _ := browser(t, u, func(action string, _ url.Values) string {
					return regexp.MustCompile(`state=[0-9a-f]+`).ReplaceAllString(action, "state=forged")
				})
				if code != http.StatusBadRequest {
					t.Errorf("forged state: the callback answered %d, want 400", code)
				}
			}()
		}})
	if err == nil || !strings.Contains(err.Error(), "no redirect from GitHub") {
		t.Errorf("forged state: err = %v", err)
	}
	if _, err := os.Stat(keyFile); err == nil {
		t.Error("a key was written for a forged state")
	}
	if err := os.WriteFile(keyFile, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := appsetup.Run(ctx, appsetup.Config{WebURL: base, KeyFile: keyFile}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("existing key file: err = %v", err)
	}
}

// The stand-in's conversion works once per code (GitHub's codes are single-use).
func TestConversionCodeIsSingleUse(t *testing.T) {
	_, base := standIn(t)
	m, _ := json.Marshal(appsetup.Manifest{Name: "x", URL: "https://example.com", RedirectURL: "http://127.0.0.1:1/cb"})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(base+"/settings/apps/new?state=s", url.Values{"manifest": {string(m)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	code := loc.Query().Get("code")
	if resp.StatusCode != http.StatusFound || code == "" || loc.Query().Get("state") != "s" {
		t.Fatalf("register: %d %s", resp.StatusCode, loc)
	}
	for i, want := range []int{http.StatusCreated, http.StatusNotFound} {
		r, err := http.Post(base+"/app-manifests/"+code+"/conversions", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("conversion #%d: %d, want %d", i+1, r.StatusCode, want)
		}
	}
}

// deploy/app-manifest.json is the manifest the flow posts (without the per-run redirect_url), and
// the stand-in accepts it.
func TestDeployManifestIsTheDefault(t *testing.T) {
	b, err := os.ReadFile("../../deploy/app-manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(appsetup.DefaultManifest(""))
	var want map[string]any
	_ = json.Unmarshal(wb, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deploy/app-manifest.json:\n%s\nwant:\n%s", b, wb)
	}
}
