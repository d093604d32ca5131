package worldtest_test

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

func benchFactor(b *testing.B) float64 {
	factor, err := scwsim.BenchFactor()
	if err != nil {
		b.Fatal(err)
	}
	return factor
}

// benchParts starts a world of hosts at factor, closed when b ends, and its parts, which poll
// every quarter of a scaled second (poll).
func benchParts(b *testing.B, factor float64, hosts world.Hosts) (p *worldtest.Parts, poll time.Duration) {
	b.Helper()
	w := worldtest.Start(b, world.Options{TimeFactor: factor, S3: "file", Hosts: hosts})
	poll = max(time.Duration(float64(time.Second)*factor)/4, time.Millisecond)
	return worldtest.New(b, w, worldtest.Options{PollInterval: poll}), poll
}

// BenchmarkWholeUpDown measures the whole seed cluster's up (image chain, control planes,
// rescue, dd, reboot, Talos apply, bootstrap, kubeconfig) and down on the emulated world, every
// latency scaled by factor (POC_BENCH_FACTOR, default 0.01), against the critical-path lower
// bound of the same profile over every node of the graph (goal: ratio <= 1.05 for both).
func BenchmarkWholeUpDown(b *testing.B) {
	factor := benchFactor(b)
	hosts := world.DefaultHosts()
	waits := worldtest.Waits(scwsim.DefaultLatency(), hosts)
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }
	for i := 0; i < b.N; i++ {
		p, poll := benchParts(b, factor, hosts)
		var (
			t0      time.Time
			mu      sync.Mutex
			secrets time.Duration // the talos-secrets step's key generation, CPU the profile has no figure for
		)
		trace := os.Getenv("POC_BENCH_TRACE") != ""
		eng := provision.New(provision.Options{PollInterval: poll, Progress: provision.ProgressFunc(func(e provision.Event) {
			if trace && (e.Phase == provision.PhaseDone || e.Phase == provision.PhaseStarted) {
				fmt.Fprintf(os.Stderr, "%8v %-22s %s\n", time.Since(t0).Round(time.Millisecond), e.Step, e.Phase)
			}
			if e.Step == cluster.NodeTalosSecrets && e.Phase == provision.PhaseDone {
				mu.Lock()
				secrets = e.Elapsed
				mu.Unlock()
			}
		})})
		g := provision.NewGraph()
		if err := p.Ops.Build(g, p.Spec); err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		parked := waits
		parked.Parked, parked.SharedImage = true, true
		cold := g.CriticalPath(waits.Of)
		steps := []struct {
			name  string
			bound time.Duration
			run   func(st *provision.State) error
		}{
			{"up", cold, func(st *provision.State) error { return eng.Up(ctx, g, st, provision.NewMemorySaver()) }},
			{"down-park", waits.Down(true), func(st *provision.State) error {
				_, err := eng.Down(cluster.WithParkFor(ctx, time.Hour), g, st, provision.NewMemorySaver())
				return err
			}},
			{"up-adopt", g.CriticalPath(parked.Of), func(st *provision.State) error { return eng.Up(ctx, g, st, provision.NewMemorySaver()) }},
			{"down", waits.Down(false), func(st *provision.State) error {
				_, err := eng.Down(ctx, g, st, provision.NewMemorySaver())
				return err
			}},
		}
		var st *provision.State
		for k, s := range steps {
			if k%2 == 0 {
				var err error
				if st, err = provision.NewState(fmt.Sprintf("bench-%d-%d", i, k), p.Spec); err != nil {
					b.Fatal(err)
				}
			}
			t0 = time.Now()
			if err := s.run(st); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			wall, lb := time.Since(t0), scale(s.bound)
			b.ReportMetric(float64(wall)/float64(lb), s.name+"/bound")
			b.Logf("factor %.3g: %-9s %8v (bound %8v, ratio %.3f)", factor, s.name, wall.Round(time.Millisecond), lb, float64(wall)/float64(lb))
			if k%2 == 0 {
				// The same bound with the key generation's measured CPU time in its node: at a
				// small factor seconds of CPU weigh minutes, at factor 1 they are noise.
				w := waits
				if k == 2 {
					w = parked
				}
				mu.Lock()
				cpu := secrets
				mu.Unlock()
				adj := g.CriticalPath(func(n string) time.Duration {
					if n == cluster.NodeTalosSecrets {
						return max(scale(w.Of(n)), cpu)
					}
					return scale(w.Of(n))
				})
				b.ReportMetric(float64(wall)/float64(adj), s.name+"/bound+cpu")
				b.Logf("factor %.3g: %-9s %8v (bound with the secrets' %v of CPU: %v, ratio %.3f)", factor, s.name, wall.Round(time.Millisecond),
					cpu.Round(time.Millisecond), adj.Round(time.Millisecond), float64(wall)/float64(adj))
			}
		}
		if i == 0 {
			logModeled(b, g, waits)
		}
	}
}

// logModeled prints (to stdout: a benchmark's log is cut after a few lines) the modeled real minutes at factor 1 (computed from the profile, not
// waited) of the cold path and of the parked path.
func logModeled(b *testing.B, g *provision.Graph, w cluster.Waits) {
	rows := []struct {
		name string
		w    cluster.Waits
	}{
		{"cold, first image", w},
		{"cold, shared image", func() cluster.Waits { v := w; v.SharedImage = true; return v }()},
		{"parked worker, shared image", func() cluster.Waits { v := w; v.SharedImage = true; v.Parked = true; return v }()},
		{"parked worker, first image", func() cluster.Waits { v := w; v.Parked = true; return v }()},
	}
	cold := g.CriticalPath(rows[1].w.Of)
	fmt.Printf("%-30s %8s %8s\n", "up (modeled, factor 1)", "minutes", "÷ cold")
	for _, r := range rows {
		d := g.CriticalPath(r.w.Of)
		fmt.Printf("%-30s %8.1f %7.0f%%\n", r.name, d.Minutes(), 100*float64(d)/float64(cold))
	}
	fmt.Printf("%-30s %8.1f\n", "down, delete", w.Down(false).Minutes())
	fmt.Printf("%-30s %8.1f\n", "down, park", w.Down(true).Minutes())
	b.ReportMetric(float64(g.CriticalPath(rows[2].w.Of))/float64(cold), "parked/cold")
}
