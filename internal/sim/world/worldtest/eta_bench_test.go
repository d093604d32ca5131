package worldtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/eta"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// BenchmarkETA plays 20 ups on the emulated world at a time factor (POC_BENCH_FACTOR, default
// 0.01), cold and parked in turn (every other down parks its worker for the next up), each
// estimated beforehand by the ETA book as a real up would be — the latency profile (scaled)
// until three ups of a path are recorded, then their median — and reports the share that
// finished within ±20 % of their ETA (goal: 90 %).
func BenchmarkETA(b *testing.B) {
	factor := benchFactor(b)
	hosts := world.DefaultHosts()
	for i := 0; i < b.N; i++ {
		p, _ := benchParts(b, factor, hosts)
		spec := p.Spec
		spec.ServiceAccountKey = "ecdsa" // the RSA key's seconds of CPU have no figure in the profile
		book := &eta.Book{Store: p.Store, Build: p.Ops.Build, Profile: worldtest.Waits(scwsim.DefaultLatency(), hosts), SharedImage: p.Driver.SharedSnapshot}
		ctx := b.Context()
		const ups = 20
		within := 0
		for k := range ups {
			name := fmt.Sprintf("eta-%d-%d", i, k)
			req := clusterops.Intent{Cluster: name, Spec: spec, TTL: time.Hour, RequestedBy: "bench", Command: "up"}
			req.DryRun = true // the pre-flight of the up, nothing created
			dry, err := p.Ops.Up(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			req.DryRun = false
			pf := dry.Preflight
			adopt := false
			for _, c := range pf.Candidates {
				adopt = adopt || (c.Taken && c.Offer.Adopt)
			}
			est := book.Estimate(ctx, spec, adopt)
			want := est.D
			if est.From == "the latency profile" {
				want = time.Duration(float64(want) * factor)
			}
			t0 := time.Now()
			if _, err := p.Ops.Up(ctx, req); err != nil {
				b.Fatalf("up %d: %v", k, err)
			}
			took := time.Since(t0)
			if err := book.Record(ctx, est.Path, took, "", 0); err != nil {
				b.Fatal(err)
			}
			ratio := float64(took) / float64(want)
			ok := ratio >= 0.8 && ratio <= 1.2
			if ok {
				within++
			}
			fmt.Printf("up %2d %-28s ETA %8v (%s) took %8v ratio %.2f %v\n", k, est.Path, want.Round(time.Millisecond), est.From,
				took.Round(time.Millisecond), ratio, ok)
			down := clusterops.Intent{Cluster: name, RequestedBy: "bench", Command: "down"}
			if k%2 == 0 {
				down.ParkFor = time.Hour // the next up adopts the worker
			}
			if _, err := p.Ops.Down(ctx, down); err != nil {
				b.Fatalf("down %d: %v", k, err)
			}
		}
		fmt.Printf("%d of %d ups within ±20 %% of their ETA (%.0f %%; goal 90 %%)\n", within, ups, 100*float64(within)/ups)
		b.ReportMetric(float64(within)/ups, "within20%")
	}
}
