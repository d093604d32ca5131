package chatops

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/settings"
)

// TestStatusBudget is the status comment's cadence as a table: a step's change is written once
// the gap is over, a change of times or notes only once the heartbeat is, and neither without a
// token; the bucket refills at the run's share of the hour and never beyond its burst.
func TestStatusBudget(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	b := budgetFor(3, 3*time.Second) // 80 an hour each
	refill := time.Hour / 80
	wrote := func(times ...time.Duration) writeBook {
		w := writeBook{}
		for i, d := range times {
			w = b.spend(w, t0.Add(d), fmt.Sprint("shape ", i))
		}
		return w
	}
	last := func(w writeBook) string { return w.shape }
	tests := []struct {
		name  string
		book  writeBook
		at    time.Duration
		shape func(writeBook) string
		write bool
		wait  time.Duration
	}{
		{"nothing written yet", writeBook{}, 0, func(writeBook) string { return "a" }, true, 0},
		{"a step changed within the gap", wrote(0), time.Second, func(writeBook) string { return "a" }, false, 2 * time.Second},
		{"a step changed after the gap", wrote(0), 3 * time.Second, func(writeBook) string { return "a" }, true, 0},
		{"only times moved, within the heartbeat", wrote(0), 30 * time.Second, last, false, 30 * time.Second},
		{"only times moved, a heartbeat on", wrote(0), time.Minute, last, true, 0},
		{"the burst spent: a step changes", wrote(0, 3*time.Second, 6*time.Second, 9*time.Second), 12 * time.Second,
			func(writeBook) string { return "a" }, false, refill - 12*time.Second}, // refilling since the first write
		{"the burst spent, refilled by one", wrote(0, 3*time.Second, 6*time.Second, 9*time.Second), 9*time.Second + refill,
			func(writeBook) string { return "a" }, true, 0},
		{"an idle hour refills the burst, no more", wrote(0, time.Second, 2*time.Second, 3*time.Second), 5 * time.Hour,
			func(writeBook) string { return "a" }, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			write, wait := b.due(tc.book, t0.Add(tc.at), tc.shape(tc.book))
			if write != tc.write || wait.Round(time.Millisecond) != tc.wait.Round(time.Millisecond) {
				t.Fatalf("due = %v after %v, want %v after %v", write, wait, tc.write, tc.wait)
			}
		})
	}
	// The burst after an idle hour is the burst, not more.
	w := wrote(0, time.Second, 2*time.Second, 3*time.Second)
	at := t0.Add(5 * time.Hour)
	n := 0
	for ; n < 10; n++ {
		ok, _ := b.due(w, at, fmt.Sprint("later ", n))
		if !ok {
			break
		}
		w = b.spend(w, at, fmt.Sprint("later ", n))
		at = at.Add(b.Gap)
	}
	if n != statusBurst {
		t.Errorf("%d writes in a row after an idle hour, want the burst (%d)", n, statusBurst)
	}
}

// TestBudgetShares: the runs' shares add up to at most the status comments' share of the hour,
// whatever max_clusters (1 to 100) is.
func TestBudgetShares(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 10, 100} {
		b := budgetFor(n, time.Second)
		if got := b.PerHour * n; got > statusSharePerHour || b.PerHour < 1 {
			t.Errorf("max_clusters %d: %d an hour each, %d together (share %d)", n, b.PerHour, got, statusSharePerHour)
		}
	}
}

// coldUp is the timeline of a cold up's status: the steps the engine reports, each started and
// done at the times the latency profile gives its node on the real graph (every node as soon as
// its needs are done: the engine's order), the pre-flight first, and a progress note every 10 s of
// a long step (a pessimistic stand-in for the notes the real steps send).
type timelineEvent struct {
	at    time.Duration
	step  string
	phase int // 0 started, 1 done, 2 note
}

func coldUp(b *testing.B) ([]timelineEvent, time.Duration) {
	b.Helper()
	g, waits := coldUpGraph(b)
	finish := map[string]time.Duration{}
	var visit func(string) time.Duration
	const preflight = time.Second
	visit = func(n string) time.Duration {
		if f, ok := finish[n]; ok {
			return f
		}
		node, _ := g.Node(n)
		start := preflight
		for _, m := range node.Needs {
			start = max(start, visit(m))
		}
		finish[n] = start + waits(n)
		return finish[n]
	}
	var evs []timelineEvent
	var end time.Duration
	for _, n := range g.Names() {
		node, _ := g.Node(n)
		if node.Preflight != nil {
			evs = append(evs, timelineEvent{0, "preflight " + n, 0}, timelineEvent{preflight, "preflight " + n, 1})
		}
		f := visit(n)
		start := f - waits(n)
		evs = append(evs, timelineEvent{start, n, 0}, timelineEvent{f, n, 1})
		for at := start + 10*time.Second; at < f; at += 10 * time.Second {
			evs = append(evs, timelineEvent{at, n, 2})
		}
		end = max(end, f)
	}
	slices.SortStableFunc(evs, func(a, b timelineEvent) int { return int(a.at - b.at) })
	return evs, end
}

// runSim plays one run of the timeline, started at start, through the live edits' decisions
// (statusBudget.wake, as startLive calls it), and returns the times of its writes: the first
// body, the live edits, the final body.
func runSim(evs []timelineEvent, end, start time.Duration, b statusBudget, t0 time.Time) []time.Duration {
	rows := []commands.Step{}
	index := map[string]int{}
	started := map[string]time.Duration{}
	view := commands.StickyView{Cluster: "acme-shop-42", Verb: commands.VerbUp, Started: t0.Add(start), Tick: b.Heartbeat}
	render := func(now time.Duration) string {
		v := view
		v.Now = t0.Add(start + now)
		v.Steps = slices.Clone(rows)
		for i := range v.Steps {
			if v.Steps[i].State == commands.StepRunning {
				v.Steps[i].Duration = now - started[v.Steps[i].Name]
			}
		}
		return commands.RenderSticky(v)
	}
	writes := []time.Duration{start}
	state := liveState{book: b.spend(writeBook{}, t0.Add(start), shapeOf(nil))}
	wake := b.Heartbeat
	i := 0
	for now := time.Duration(0); now < end; {
		// The next wake: the next event (a change) or the timer, whichever comes first.
		next := wake
		if i < len(evs) && evs[i].at-now < next {
			next = max(evs[i].at-now, 0)
		}
		now += next
		for ; i < len(evs) && evs[i].at <= now; i++ {
			e := evs[i]
			k, ok := index[e.step]
			if !ok {
				k = len(rows)
				index[e.step] = k
				rows = append(rows, commands.Step{Name: e.step})
			}
			switch e.phase {
			case 0:
				rows[k].State, started[e.step] = commands.StepRunning, e.at
			case 1:
				rows[k].State, rows[k].Duration, rows[k].Note = commands.StepDone, e.at-started[e.step], ""
			case 2:
				rows[k].Note = fmt.Sprintf("waiting, %s", e.at-started[e.step])
			}
		}
		body, after, wait := b.wake(state, t0.Add(start+now), rows, func([]commands.Step) string { return render(now) })
		if state = after; body != "" {
			writes = append(writes, start+now)
		}
		wake = max(wait, time.Millisecond)
	}
	return append(writes, start+end) // the final body
}

// otherWrites are a run's content-generating requests besides its status comment: 👀, 🚀 and
// the result's reaction, the notification, a label (chatops: one run, at most two new comments).
const otherWrites = 5

// peak is the most writes in any window of d among times.
func peak(times []time.Duration, d time.Duration) int {
	slices.Sort(times)
	best, j := 0, 0
	for i := range times {
		for times[i]-times[j] >= d {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

// BenchmarkStatusWrites reports what the status comment costs GitHub's secondary limits on the
// real cold-up graph and latency profile (cluster.DefaultWaits, 12 min): the writes of one cold
// up, at max_clusters 1 and at the default (3); the most writes in any minute when max_clusters
// cold ups start at once, and in any hour when max_clusters lanes run cold ups back to back, with
// each run's other writes counted; each against GitHub's bound (ratio < 1 is under it). The old
// cadence (a write every 3 s while the body changed, running times to the second) is reported
// beside it.
func BenchmarkStatusWrites(b *testing.B) {
	evs, end := coldUp(b)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	gap := (&Handler{}).stickyInterval() // the production default
	n := settings.DefaultMaxClusters
	var perUp1, perUpN, perMin, perHour, old int
	for b.Loop() {
		perUp1 = len(runSim(evs, end, 0, budgetFor(1, gap), t0))
		perUpN = len(runSim(evs, end, 0, budgetFor(n, gap), t0))
		// max_clusters cold ups at once, each with its other writes at its start and end.
		var minute []time.Duration
		for range n {
			w := runSim(evs, end, 0, budgetFor(n, gap), t0)
			minute = append(minute, w...)
			for k := range otherWrites {
				minute = append(minute, time.Duration(k)*time.Second, end)
			}
		}
		perMin = peak(minute, time.Minute)
		// max_clusters lanes of back-to-back cold ups for two hours: the busiest hour.
		var hour []time.Duration
		for lane := range n {
			for s := time.Duration(lane) * 20 * time.Second; s < 2*time.Hour; s += end {
				hour = append(hour, runSim(evs, end, s, budgetFor(n, gap), t0)...)
				for k := range otherWrites {
					hour = append(hour, s+time.Duration(k)*time.Second)
				}
			}
		}
		perHour = peak(hour, time.Hour)
		old = oldCadence(end)
	}
	b.ReportMetric(float64(perUp1), "writes/coldup@1")
	b.ReportMetric(float64(perUpN), fmt.Sprintf("writes/coldup@%d", n))
	b.ReportMetric(float64(old), "writes/coldup-old")
	b.ReportMetric(float64(perMin), fmt.Sprintf("writes/min@%d", n))
	b.ReportMetric(float64(perMin)/github.ContentPerMinute, "min-ratio")
	b.ReportMetric(float64(perHour), fmt.Sprintf("writes/h@%d", n))
	b.ReportMetric(float64(perHour)/github.ContentPerHour, "hour-ratio")
	b.ReportMetric(end.Minutes(), "coldup-min")
}

// oldCadence counts the writes of the cadence before the budget: one every 3 s while the command
// ran (the body changed every second: running times to the second), the first and the final.
func oldCadence(end time.Duration) int { return int(end/(3*time.Second)) + 2 }
