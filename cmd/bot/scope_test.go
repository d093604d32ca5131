package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestReadCommandsStayInTheirRepository replays issue 11 hole 10: run by another repository's
// workflow (GITHUB_REPOSITORY), `bot status`, `bot cost` and `bot kubeconfig` refuse the cluster,
// as `bot down` does, and print nothing of it; from its own repository they work.
func TestReadCommandsStayInTheirRepository(t *testing.T) {
	ctx, w := startWorld(t, time.Minute, world.Options{})
	setenvWorld(t, w)
	putReady(ctx, t, worldStore(ctx, t, w), statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1,
		Created: time.Now().UTC(), Expires: time.Now().UTC().Add(time.Hour)})
	bot := func(repo string, args ...string) (string, error) {
		out, _, err := runBot(ctx, over(map[string]string{"GITHUB_REPOSITORY": repo}), args...)
		return out, err
	}
	for _, tc := range []struct {
		args    []string
		fromOwn bool // also run from acme/shop, where it works
	}{
		{[]string{"status", "--cluster", "acme-shop-1", "--health=false"}, true},
		{[]string{"cost", "--cluster", "acme-shop-1"}, true},
		{[]string{"kubeconfig", "--cluster", "acme-shop-1"}, false},
		{[]string{"talosconfig", "--cluster", "acme-shop-1"}, false},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			out, err := bot("acme/web", tc.args...)
			if err == nil || !strings.Contains(err.Error(), "belongs to acme/shop") {
				t.Errorf("from acme/web: err %v, want a refusal naming acme/shop", err)
			}
			if out != "" {
				t.Errorf("from acme/web, printed:\n%s", out)
			}
			if tc.fromOwn {
				out, err := bot("acme/shop", tc.args...)
				if err != nil || !strings.Contains(out, "acme-shop-1") {
					t.Errorf("from acme/shop: err %v, out:\n%s", err, out)
				}
			}
		})
	}
}
