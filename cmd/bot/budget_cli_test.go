package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestBotUpIsBudgeted: `bot up` run by a repository's workflow is refused by the budget as a
// `/poc up` comment is (issue 23): with POC_MAX_CLUSTERS=1 and one cluster of the repository
// running, it creates nothing and says which limit. The old `bot up` set no budget and started
// provisioning.
func TestBotUpIsBudgeted(t *testing.T) {
	ctx, w := startWorld(t, time.Minute, world.Options{})
	setenvWorld(t, w)
	store := worldStore(ctx, t, w)
	h := statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1,
		Created: time.Now().UTC(), Expires: time.Now().UTC().Add(time.Hour)}
	clusterops.Meta{DailyCostNanos: 4_300_000_000}.Into(&h)
	putReady(ctx, t, store, h)
	env := map[string]string{"GITHUB_REPOSITORY": "acme/shop", "POC_MAX_CLUSTERS": "1"}
	_, _, err := runBot(ctx, over(env), "up", "--cluster", "acme-shop-2", "--ttl", "2d")
	var ref *clusterops.Refusal
	if !errors.As(err, &ref) || ref.Kind != lifecycle.RefuseBudget || !strings.Contains(err.Error(), "max_clusters") {
		t.Fatalf("bot up beyond max_clusters: %v, want a budget refusal naming max_clusters", err)
	}
	if _, err := store.Get(ctx, "acme-shop-2"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a refused bot up wrote a state document: %v", err)
	}
}
