package reaper_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/settings"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

type fakePauser struct {
	mu   sync.Mutex
	reqs []clusterops.Intent
}

func (f *fakePauser) Pause(_ context.Context, req clusterops.Intent) (*clusterops.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	// The worker kept (no Elastic Metal server in the report's deletions), as a pause does while
	// its offer is not in stock.
	return &clusterops.Outcome{Spec: provision.Spec{BaremetalOffer: "EM-A116X-SSD"}, Report: &provision.Report{}}, nil
}

func (f *fakePauser) paused() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.reqs {
		out = append(out, r.Cluster)
	}
	slices.Sort(out)
	return out
}

// TestSchedulePausesReadyClustersInItsWindow: in a window of pause_schedule the reaper pauses the
// repository's ready clusters — not one provisioning, already paused, kept past its expiry or due
// for teardown, nor a warm spare — with the paused cost and max_paused; outside the window it pauses nothing.
func TestSchedulePausesReadyClustersInItsWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "file")
	ctx := ctxFor(t, time.Minute)
	sched, err := settings.ParsePauseSchedule("weekdays 19:00-08:00 UTC")
	if err != nil {
		t.Fatal(err)
	}
	night := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC) // a Tuesday
	day := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, phase string
		expires     time.Time
	}{
		{"acme-shop-ready", string(lifecycle.PhaseReady), night.Add(48 * time.Hour)},
		{"acme-shop-prov", string(lifecycle.PhaseProvisioning), night.Add(48 * time.Hour)},
		{"acme-shop-paused", string(lifecycle.PhasePaused), night.Add(48 * time.Hour)},
		{"acme-shop-expired", string(lifecycle.PhaseReady), night.Add(-time.Hour)},
	} {
		n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"})
		e.putDoc(t, statestore.Header{Cluster: c.name, Repository: repo, Number: n, Kind: "issue", Phase: c.phase, Created: night.Add(-time.Hour), Expires: c.expires})
	}
	// A warm spare is the pool's (pool.hours, pool.off_hours), not pause_schedule's: a paused
	// spare could not be claimed.
	e.putDoc(t, statestore.Header{Cluster: "spare-abcdefgh", Repository: repo, Kind: spare.Kind, Phase: string(lifecycle.PhaseReady),
		Created: night.Add(-time.Hour), Expires: night.Add(20 * time.Hour)})
	for _, tc := range []struct {
		at   time.Time
		want []string
	}{{day, nil}, {night, []string{"acme-shop-ready"}}} {
		p := &fakePauser{}
		cfg := e.config(tc.at)
		cfg.Inventory = nil
		cfg.PauseSchedule, cfg.Pauser, cfg.MaxPaused = sched, p, 72*time.Hour
		cfg.Teardown = noTeardown{}
		var told []string // the pull requests' deployments go inactive with the pause
		cfg.Paused = func(_ context.Context, cluster string, _ int) { told = append(told, cluster) }
		rep, err := reaper.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.paused(); !slices.Equal(got, tc.want) {
			t.Errorf("at %s the schedule paused %v, want %v\n%s", tc.at, got, tc.want, table(t, rep))
		}
		if !slices.Equal(told, tc.want) {
			t.Errorf("at %s the reaper told of the pauses of %v, want %v", tc.at, told, tc.want)
		}
		for _, r := range p.reqs {
			if r.MaxPaused != 72*time.Hour || r.Precondition.Phase != lifecycle.PhaseReady || !r.Precondition.AsleepAt.Equal(tc.at) {
				t.Errorf("pause request %+v: want max_paused and the precondition ready, asleep at %s", r, tc.at)
			}
			// Register row em-stock: the worker is kept parked while its offer is not in stock,
			// until the window ends (08:00) and an hour more for the resume to adopt it.
			if r.ParkWhileScarce != 11*time.Hour {
				t.Errorf("pause request keeps a scarce worker %v, want 11h (to 08:00, and an hour)", r.ParkWhileScarce)
			}
		}
		if d, ok := decisionOf(rep, "acme-shop-ready"); len(tc.want) > 0 && (!ok || d.Action != reaper.ActionPaused || !strings.Contains(d.Detail, "kept parked: EM-A116X-SSD is not available")) {
			t.Errorf("decision of the paused cluster = %+v", d)
		}
	}
}

type noTeardown struct{}

func (noTeardown) Down(context.Context, clusterops.Intent) (*clusterops.Outcome, error) {
	return &clusterops.Outcome{}, nil
}
