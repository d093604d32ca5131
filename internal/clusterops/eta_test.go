package clusterops_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Up estimates a new cluster's up and records how long it took, for `/poc up` and `bot up` alike
// (both call Ops.Up): once for a new cluster that came up, never for a dry run, a failed up or
// the converging up of an existing cluster. No world: a graph with nothing in it and a file store.
func TestUpRecordsItsDurationForTheETA(t *testing.T) {
	ctx := t.Context()
	key, err := statestore.NewKeyURL()
	if err != nil {
		t.Fatal(err)
	}
	store, err := statestore.Open(ctx, statestore.Config{StateURL: "file://" + t.TempDir(), KeyURL: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	fail := false
	build := func(g *provision.Graph, _ provision.Spec) error {
		if fail {
			return errors.New("no graph")
		}
		return nil
	}
	ops := &clusterops.Ops{Store: store, Build: build, ETA: &eta.Book{Store: store, Build: build}}
	spec := provision.DefaultSpec()
	spec.ImageBucket = "pocbot-images"
	intent := func(name string) clusterops.Intent {
		return clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"}
	}
	recorded := func() int {
		sh, err := store.GetShared(ctx, eta.DocName)
		if errors.Is(err, statestore.ErrNotFound) {
			return 0
		}
		var h eta.History
		if err == nil {
			err = json.Unmarshal(sh.Body, &h)
		}
		if err != nil {
			t.Fatal(err)
		}
		return len(h[eta.Path{}.String()])
	}

	dry := intent("c1")
	dry.DryRun = true
	if out, err := ops.Up(ctx, dry); err != nil || out.ETA == nil || recorded() != 0 {
		t.Fatalf("dry run: ETA %v, err %v, %d recorded; want an estimate and nothing recorded", out.ETA, err, recorded())
	}
	out, err := ops.Up(ctx, intent("c1"))
	if err != nil || out.ETA == nil || out.ETA.Path != (eta.Path{}) || recorded() != 1 {
		t.Fatalf("up of a new cluster: ETA %v, err %v, %d recorded; want its estimate and one duration of its path", out.ETA, err, recorded())
	}
	if out, err := ops.Up(ctx, intent("c1")); err != nil || out.ETA != nil || recorded() != 1 {
		t.Fatalf("converging up: ETA %v, err %v, %d recorded; want none", out.ETA, err, recorded())
	}
	fail = true
	if _, err := ops.Up(ctx, intent("c2")); err == nil || recorded() != 1 {
		t.Fatalf("failed up: err %v, %d recorded; want an error and nothing more recorded", err, recorded())
	}
}
