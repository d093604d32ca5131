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
// process gone while it deletes it — leaves the IP behind; run again, it sweeps it first, passes,
// and leaves nothing. The first run is the bot's binary, killed with SIGKILL while a proxy in
// front of the Scaleway stand-in holds the IP's DELETE.
func TestDoctorLiveKilledHalfWayThenRerun(t *testing.T) {
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

	rerun, err := runBotOut(ctx, env, "doctor", "--live", "--dns-zone", "poc.example.com")
	if err != nil {
		t.Fatalf("the rerun: %v\n%s", err, rerun)
	}
	if !regexp.MustCompile(`swept first, left by an earlier probe: flexible IP [0-9a-f-]{36}`).MatchString(rerun) || !strings.Contains(rerun, "nothing left behind") {
		t.Errorf("the rerun does not say it swept the IP:\n%s", rerun)
	}
	if left := probeIPs(w); len(left) != 0 {
		t.Errorf("after the rerun, probe IPs %v", left)
	}
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
