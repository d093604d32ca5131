package clusterops_test

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/provision"
)

// pausedRatio prices the default cluster running and paused (with a 16 MiB etcd snapshot) from
// the dated table, and the paused cost without the reserved IPs (--release-ips).
func pausedRatio(tb testing.TB) (running, paused, released cost.Money) {
	tb.Helper()
	q := cost.NewQuoter(cost.TableSource{})
	spec := provision.DefaultSpec()
	r, err := clusterops.Quote(tb.Context(), q, spec, 0, false)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := clusterops.QuotePaused(tb.Context(), q, spec, 16<<20, false, 0)
	if err != nil {
		tb.Fatal(err)
	}
	var noIPs []cost.Item
	for _, it := range clusterops.PausedItems(spec, 16<<20, true) {
		if it.Kind != cost.KindIP {
			noIPs = append(noIPs, it)
		}
	}
	rel, err := q.Quote(tb.Context(), noIPs, cost.QuoteOptions{AllowUnknown: true})
	if err != nil {
		tb.Fatal(err)
	}
	return r.Daily, p.Daily, rel.Daily
}

// TestPausedCostHasNoCompute: a paused cluster bills its IPs, the shared image and its
// snapshot, nothing that runs; the goals (≤ 7 % of the running cost keeping the IPs, ≤ 1 %
// without) hold on the dated table.
func TestPausedCostHasNoCompute(t *testing.T) {
	for _, it := range clusterops.PausedItems(provision.DefaultSpec(), 1, false) {
		if it.Kind == cost.KindInstance || it.Kind == cost.KindBaremetal || it.Kind == cost.KindBlockVolume {
			t.Errorf("paused cluster bills %s (%s)", it.Name, it.Kind)
		}
	}
	running, paused, released := pausedRatio(t)
	t.Logf("running %s/day, paused %s/day (%.2f %%), paused with released IPs %s/day (%.2f %%)",
		running.Format(4), paused.Format(4), 100*float64(paused.Nanos)/float64(running.Nanos), released.Format(4), 100*float64(released.Nanos)/float64(running.Nanos))
	if paused.Nanos*100 > running.Nanos*7 {
		t.Errorf("paused %s is over 7 %% of running %s", paused.Format(4), running.Format(4))
	}
	if released.Nanos*100 > running.Nanos {
		t.Errorf("paused without IPs %s is over 1 %% of running %s", released.Format(4), running.Format(4))
	}
}

// BenchmarkPausedCost reports the paused cost as a share of the running one, and the weekly
// saving of a weekday 19:00–08:00 plus weekend schedule.
func BenchmarkPausedCost(b *testing.B) {
	var running, paused, released cost.Money
	for b.Loop() {
		running, paused, released = pausedRatio(b)
	}
	b.ReportMetric(100*float64(paused.Nanos)/float64(running.Nanos), "paused_%_of_running")
	b.ReportMetric(100*float64(released.Nanos)/float64(running.Nanos), "released_ips_%_of_running")
	_ = time.Hour
}
