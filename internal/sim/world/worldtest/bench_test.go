package worldtest_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

func benchFactor(b *testing.B) float64 {
	factor := 0.01
	if v := os.Getenv("POC_BENCH_FACTOR"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			b.Fatalf("POC_BENCH_FACTOR=%q is not a positive number", v)
		}
		factor = f
	}
	return factor
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
		w, err := world.Start(context.Background(), world.Options{Dir: b.TempDir(), TimeFactor: factor, S3: "file", Hosts: hosts})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close() })
		poll := max(scale(time.Second)/4, time.Millisecond)
		p := worldtest.New(b, w, worldtest.Options{PollInterval: poll})
		eng := provision.New(provision.Options{PollInterval: poll})
		g := provision.NewGraph()
		if err := p.Ops.Build(g, p.Spec); err != nil {
			b.Fatal(err)
		}
		st, err := provision.NewState(fmt.Sprintf("bench-%d", i), p.Spec)
		if err != nil {
			b.Fatal(err)
		}
		upLB := scale(g.CriticalPath(waits.Of))
		downLB := scale(waits.Down(false))
		ctx := context.Background()
		t0 := time.Now()
		if err := eng.Up(ctx, g, st, provision.NewMemorySaver()); err != nil {
			b.Fatal(err)
		}
		up := time.Since(t0)
		t1 := time.Now()
		if _, err := eng.Down(ctx, g, st, provision.NewMemorySaver()); err != nil {
			b.Fatal(err)
		}
		down := time.Since(t1)
		b.ReportMetric(float64(up)/float64(upLB), "up/bound")
		b.ReportMetric(float64(down)/float64(downLB), "down/bound")
		b.Logf("factor %.3g: up %v (bound %v, ratio %.3f); down %v (bound %v, ratio %.3f)",
			factor, up.Round(time.Millisecond), upLB, float64(up)/float64(upLB), down.Round(time.Millisecond), downLB, float64(down)/float64(downLB))
		if i == 0 {
			logModeled(b, g, waits)
		}
	}
}

// logModeled prints the modeled real minutes at factor 1 (computed from the profile, not
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
	b.Logf("%-30s %8s %8s", "up (modeled, factor 1)", "minutes", "÷ cold")
	for _, r := range rows {
		d := g.CriticalPath(r.w.Of)
		b.Logf("%-30s %8.1f %7.0f%%", r.name, d.Minutes(), 100*float64(d)/float64(cold))
	}
	b.Logf("%-30s %8.1f", "down, delete", w.Down(false).Minutes())
	b.Logf("%-30s %8.1f", "down, park", w.Down(true).Minutes())
	b.ReportMetric(float64(g.CriticalPath(rows[2].w.Of))/float64(cold), "parked/cold")
}
