package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/world"
)

// The "done when": `bot doctor --live` killed half-way — its flexible IP reserved, the
// process gone while it deletes it — leaves the IP behind; run again with --record, it sweeps it
// first, passes, leaves nothing, and its recording replays against the stand-ins at 99 % at
// least. The first run is the bot's binary, killed with SIGKILL while a proxy in
// front of the Scaleway stand-in holds the IP's DELETE.
func TestDoctorLiveKilledHalfWayThenRerun(t *testing.T) {
	t.Parallel()
	ctx, w := startWorld(t, 3*time.Minute, world.Options{S3: "versitygw"})
	env := envMap(w)
	target, _ := url.Parse(w.ScalewayURL)
	held := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	rp := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && regexp.MustCompile(`/instance/v1/zones/[^/]+/ips/`).MatchString(r.URL.Path) {
			once.Do(func() { close(held) })
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(rw, r)
	}))
	defer proxy.Close()
	defer close(release)

	cmd := exec.CommandContext(ctx, buildBot(t), "doctor", "--live", "--dns-zone", "poc.example.com")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "SCW_API_URL="+proxy.URL, "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the probe never deleted its IP:\n%s", out.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if left := probeIPs(w); len(left) != 1 {
		t.Fatalf("after the kill, probe IPs %v: want the one the killed run held", left)
	}

	// The rerun is recorded (--record): the first contact of a real account comes back as
	// cassettes, and they replay against fresh stand-ins (`make fidelity CASSETTES=DIR`).
	rec := t.TempDir()
	rerun := exec.CommandContext(ctx, buildBot(t), "doctor", "--live", "--dns-zone", "poc.example.com", "--record", rec)
	for k, v := range env {
		rerun.Env = append(rerun.Env, k+"="+v)
	}
	rerun.Env = append(rerun.Env, "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir())
	raw, err := rerun.CombinedOutput()
	if err != nil {
		t.Fatalf("the rerun: %v\n%s", err, raw)
	}
	again := string(raw)
	if !regexp.MustCompile(`swept first, left by an earlier probe: flexible IP [0-9a-f-]{36}`).MatchString(again) || !strings.Contains(again, "nothing left behind") {
		t.Errorf("the rerun does not say it swept the IP:\n%s", again)
	}
	if left := probeIPs(w); len(left) != 0 {
		t.Errorf("after the rerun, probe IPs %v", left)
	}
	for _, r := range w.Scaleway.Inventory() {
		if strings.HasPrefix(r.Name, "_pocbot-probe-") {
			t.Errorf("after the rerun, the probe's DNS record %s %s", r.Kind, r.Name)
		}
	}
	files := cassettesIn(t, rec, "doctor-")
	var all strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	// The probes' exchanges are in it: the quota read, the DNS record, the flexible IP made,
	// retagged and deleted, the state bucket's conditional create.
	for _, want := range []string{"/iam/v1alpha1/quota", "/domain/v2beta1/dns-zones/poc.example.com/records", "method: PATCH",
		"/instance/v1/zones/fr-par-1/ips", "method: DELETE", "If-None-Match"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the recording lacks %q", want)
		}
	}
	checkReplay(t, w, rec, files, "emulated-doctor-live")
}

// probeIPs are the flexible IPs a doctor's probe made, as the stand-in holds them.
func probeIPs(w *world.World) []string {
	var out []string
	for _, r := range w.Scaleway.Inventory() {
		if r.Kind == "instance_ip" && strings.Contains(strings.Join(r.Tags, ","), "pocbot-cluster=doctor-probe-") {
			out = append(out, r.ID)
		}
	}
	return out
}
