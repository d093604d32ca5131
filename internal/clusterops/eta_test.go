package clusterops_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/firstcontact"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Up estimates a new cluster's up and records how long it took, for `/poc up` and `bot up` alike
// (both call Ops.Up): once for a new cluster that came up, never for a dry run, a failed up or
// the converging up of an existing cluster. No world: a graph with nothing in it and a file store.
func TestUpRecordsItsDurationForTheETA(t *testing.T) {
	ctx := t.Context()
	store := fileStore(t)
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

// An up keeps the first-contact observations its steps report (provision.Run.Observe) in the
// state bucket, for `bot doctor --live`: those of an up that succeeded, and those of one that
// failed on the refusal it observed (a refusal is what they are for). No world: a graph whose
// steps only observe, and a file store.
func TestUpRecordsItsFirstContactObservations(t *testing.T) {
	ctx := t.Context()
	store := fileStore(t)
	refuse := false
	build := func(g *provision.Graph, _ provision.Spec) error {
		return g.Add(provision.Node{Name: "poweron-0", Kind: "fake_server", Apply: func(_ context.Context, r *provision.Run) error {
			r.Observe("poweron-0", assume.EMPatchDelivering, "refused", "a PATCH while delivering was refused")
			if refuse {
				r.Observe("poweron-0", assume.UserDataCap, "too-small", "user data of 81920 bytes refused")
				return errors.New("user data refused")
			}
			r.Observe("poweron-0", assume.UserDataCap, "fits", "user data of 81920 bytes taken")
			return nil
		}, Destroy: func(context.Context, *provision.Run) error { return nil }})
	}
	book := &firstcontact.Book{Store: store}
	ops := &clusterops.Ops{Store: store, Build: build, FirstContact: book}
	spec := provision.DefaultSpec()
	spec.ImageBucket = "pocbot-images"
	if _, err := ops.Up(ctx, clusterops.Intent{Cluster: "c1", Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"}); err != nil {
		t.Fatal(err)
	}
	refuse = true
	if _, err := ops.Up(ctx, clusterops.Intent{Cluster: "c2", Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"}); err == nil {
		t.Fatal("the up whose user data was refused succeeded")
	}
	o, err := book.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s := o[assume.EMPatchDelivering]; s == nil || s.Counts["refused"] != 2 {
		t.Errorf("em-patch-delivering: %+v, want both ups' refusals", s)
	}
	ud := o[assume.UserDataCap]
	if ud == nil || ud.Counts["fits"] != 1 || ud.Counts["too-small"] != 1 || ud.Reading(assume.MustLookup(assume.UserDataCap)) != "too-small" {
		t.Errorf("user-data-cap: %+v, want one fit and the failed up's refusal, standing at too-small", ud)
	}
}

// fileStore is a state store in t's temporary directory.
func fileStore(t *testing.T) *statestore.Store {
	t.Helper()
	key, err := statestore.NewKeyURL()
	if err != nil {
		t.Fatal(err)
	}
	store, err := statestore.Open(t.Context(), statestore.Config{StateURL: "file://" + t.TempDir(), KeyURL: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}
