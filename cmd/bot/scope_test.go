package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestRunByAWorkflow is the bot run by a repository's workflow (GITHUB_REPOSITORY), one cluster of
// acme/shop running: it stays in its repository, and its up is budgeted.
func TestRunByAWorkflow(t *testing.T) {
	ctx, _, store := cliWorld(t, 2*time.Minute)
	h := statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1,
		Created: time.Now().UTC(), Expires: time.Now().UTC().Add(time.Hour)}
	clusterops.Meta{DailyCostNanos: 4_300_000_000}.Into(&h)
	putReady(ctx, t, store, h)

	// Issue 11 hole 10: run by another repository's workflow, `bot status`, `bot cost` and `bot
	// kubeconfig` refuse the cluster, as `bot down` does, and print nothing of it; from its own
	// repository they work.
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
		t.Run(tc.args[0]+" stays in its repository", func(t *testing.T) {
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

	// Issue 23: `bot up` is refused by the budget as a `/poc up` comment is: with
	// POC_MAX_CLUSTERS=1 and the repository's cluster running, it creates nothing and says which
	// limit. The old `bot up` set no budget and started provisioning.
	t.Run("up is budgeted", func(t *testing.T) {
		env := map[string]string{"GITHUB_REPOSITORY": "acme/shop", "POC_MAX_CLUSTERS": "1"}
		_, _, err := runBot(ctx, over(env), "up", "--cluster", "acme-shop-2", "--ttl", "2d")
		var ref *clusterops.Refusal
		if !errors.As(err, &ref) || ref.Kind != lifecycle.RefuseBudget || !strings.Contains(err.Error(), "max_clusters") {
			t.Fatalf("bot up beyond max_clusters: %v, want a budget refusal naming max_clusters", err)
		}
		if _, err := store.Get(ctx, "acme-shop-2"); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("a refused bot up wrote a state document: %v", err)
		}
	})
}
