package clusterops_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// TestDownStopsAnUpWhoseWorkerWaitsForTheBootstrap: a down asks a running up to stop while the
// worker's configuration waits for the cluster to trust it, which needs the bootstrap, and the
// bootstrap has not started yet (most power-on actions of the control planes are refused 429, as a
// busy zone would). The up sees the cancel at its next step and starts nothing more; it must then
// cut the worker's wait too, or that wait holds the lock for its whole timeout (15 minutes) while
// the down waits for it. Soak seed 2413725338745003662, replayed 16 at once, hung this way.
func TestDownStopsAnUpWhoseWorkerWaitsForTheBootstrap(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{Faults: scwsim.Faults{Seed: 7,
		PerEndpoint: map[string]float64{scwsim.EndpointKey("POST", "/instance/v1/zones/fr-par-1/servers/00000000-0000-0000-0000-000000000000/action"): 0.95}}})

	var (
		mu           sync.Mutex
		bootstrapped bool
		once         sync.Once
	)
	workerWaits := make(chan bool, 1) // whether the bootstrap was done when the worker's config started
	progress := provision.ProgressFunc(func(ev provision.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Step == cluster.NodeBootstrap && ev.Phase == provision.PhaseDone:
			bootstrapped = true
		case ev.Step == cluster.NodeWorkerConfig && ev.Phase == provision.PhaseStarted:
			once.Do(func() { workerWaits <- bootstrapped })
		}
	})
	upErr := make(chan error, 1)
	go func() {
		_, err := e.ops.Run(ctx, clusterops.VerbUp, clusterops.Intent{Cluster: "cut-1", Spec: e.spec, TTL: time.Hour, Command: "up"},
			clusterops.Steps(progress))
		upErr <- err
	}()
	select {
	case done := <-workerWaits:
		if done {
			t.Fatal("precondition: the bootstrap was done before the worker's config started (the refused power-ons were meant to delay it)")
		}
	case err := <-upErr:
		t.Fatalf("the up ended before the worker's config started: %v", err)
	case <-ctx.Done():
		t.Fatal("the worker's config never started")
	}

	downErr := make(chan error, 1)
	go func() {
		_, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "cut-1", Spec: e.spec, Command: "down"})
		downErr <- err
	}()
	select {
	case err := <-upErr:
		if !errors.Is(err, provision.ErrCancelled) {
			t.Fatalf("up asked to stop: %v, want ErrCancelled", err)
		}
	case <-ctx.Done():
		t.Fatal("the up asked to stop went on until the test's deadline: its worker's config waits for a bootstrap the cancel keeps from starting")
	}
	select {
	case err := <-downErr:
		if err != nil {
			t.Fatalf("the down that stopped the up: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the down never finished")
	}
	if live := e.live("cut-1"); len(live) > 0 {
		t.Errorf("left after the down: %v", live)
	}
}
