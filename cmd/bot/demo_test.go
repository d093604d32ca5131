//go:build sim

package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `bot demo` in-process, as `make demo` does, and checks the story it tells.
func TestDemo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// The demo must need none of the caller's settings.
	getenv := func(k string) string {
		if strings.HasPrefix(k, "POC_") || strings.HasPrefix(k, "SCW_") || strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "AWS_") {
			return ""
		}
		return os.Getenv(k)
	}
	t0 := time.Now()
	out, stderr, err := runBot(ctx, getenv, "demo")
	if err != nil {
		t.Fatalf("demo: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	took := time.Since(t0)
	for _, want := range []string{
		"alice comments on acme/shop#42: /poc up", "(new)", "edited", "Kubernetes API", "curl -fsS",
		"decrypt to a", "Total per day", "needs at least **write**", "Scaleway calls during bob's command: 0",
		"`/poc down` on cluster `acme-shop-42`", "nothing of this cluster is left", "👀 🚀 🎉", "demo finished",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// A figure, not a verdict: the README's "under a minute" holds on an idle machine (≈15 s), and
	// a test that fails when the machine is slow fails for the machine, not for the demo.
	t.Logf("demo took %s", took.Round(100*time.Millisecond))
	if t.Failed() {
		t.Logf("stdout:\n%s", out)
	}
}
