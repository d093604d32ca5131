package scaleway

import (
	"fmt"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// waitsOf is the driver's part of the emulator's profile.
func waitsOf(l scwsim.Latency) Waits {
	return Waits{SnapshotImport: l.SnapshotImport, BMDelivery: l.BMDelivery, SGRules: l.SGRules,
		VolumeCreate: l.VolumeCreate, Poweron: l.Poweron, Terminate: l.Terminate, BMDelete: l.BMDelete}
}

// BenchmarkUpDown measures up and down on the emulator with the proportions of docs/seed.md, Latencies, scaled by
// factor, against the critical-path lower bound of that profile (target ratio <= 1.05).
// POC_BENCH_FACTOR sets the factor (default 0.01): at small factors down's bound is a few tens of
// milliseconds, and the fixed cost of the HTTP calls and the sweep's look-ups dominates its ratio.
func BenchmarkUpDown(b *testing.B) {
	factor, err := scwsim.BenchFactor()
	if err != nil {
		b.Fatal(err)
	}
	lat := scwsim.DefaultLatency()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * factor) }
	for i := 0; i < b.N; i++ {
		w := newWorldB(b, factor)
		spec := testSpec("")
		id := fmt.Sprintf("bench-%d", i)
		st, _ := provision.NewState(id, spec)
		g := provision.NewGraph()
		if err := w.drv.Build(g, spec); err != nil {
			b.Fatal(err)
		}
		upLB := scale(g.CriticalPath(waitsOf(lat).Of))
		// down: terminate (the boot volume is released with it), then the volume delete; the worker's delete
		// runs beside it.
		downLB := scale(waitsOf(lat).Down())
		ctx := b.Context()
		t0 := time.Now()
		if err := w.eng.Up(ctx, g, st, provision.NewMemorySaver()); err != nil {
			b.Fatal(err)
		}
		up := time.Since(t0)
		t1 := time.Now()
		if _, err := w.eng.Down(ctx, g, st, provision.NewMemorySaver()); err != nil {
			b.Fatal(err)
		}
		down := time.Since(t1)
		b.ReportMetric(float64(up)/float64(upLB), "up/bound")
		b.ReportMetric(float64(down)/float64(downLB), "down/bound")
		b.Logf("factor %.3g: up %v (bound %v, ratio %.3f); down %v (bound %v, ratio %.3f)",
			factor, up.Round(time.Millisecond), upLB, float64(up)/float64(upLB), down.Round(time.Millisecond), downLB, float64(down)/float64(downLB))
	}
}
