package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestBotUpIsBudgeted: `bot up` run by a repository's workflow is refused by the budget as a
// `/poc up` comment is (issue 23): with POC_MAX_CLUSTERS=1 and one cluster of the repository
// running, it creates nothing and says which limit. The old `bot up` set no budget and started
// provisioning.
func TestBotUpIsBudgeted(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, kv := range w.Env() {
		t.Setenv(kv[0], kv[1])
	}
	store, err := statestore.Open(ctx, statestore.Config{StateURL: w.StateURL, KeyURL: w.StateKey})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	st, err := provision.NewState("acme-shop-1", provision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(st)
	h := statestore.Header{Cluster: "acme-shop-1", Repository: "acme/shop", Number: 1, Phase: string(lifecycle.PhaseReady),
		Created: time.Now().UTC(), Expires: time.Now().UTC().Add(time.Hour)}
	clusterops.Meta{DailyCostNanos: 4_300_000_000}.Into(&h)
	if err := store.Put(ctx, &statestore.Document{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"GITHUB_REPOSITORY": "acme/shop", "POC_MAX_CLUSTERS": "1"}
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	var out, errb bytes.Buffer
	err = newApp(&out, &errb, getenv).dispatch(ctx, []string{"up", "--cluster", "acme-shop-2", "--ttl", "2d"})
	var ref *clusterops.Refusal
	if !errors.As(err, &ref) || ref.Kind != lifecycle.RefuseBudget || !strings.Contains(err.Error(), "max_clusters") {
		t.Fatalf("bot up beyond max_clusters: %v, want a budget refusal naming max_clusters", err)
	}
	if _, err := store.Get(ctx, "acme-shop-2"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a refused bot up wrote a state document: %v", err)
	}
}
