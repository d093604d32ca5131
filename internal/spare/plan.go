package spare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
)

// Action is what the schedule does to the pool.
type Action string

// Actions of a plan, in the order a plan lists them.
const (
	ActionForget  Action = "forget"  // a claimed spare's document, once its claim made a cluster of it
	ActionDestroy Action = "destroy" // tear a spare down
	ActionPark    Action = "park"    // tear a spare down, its worker parked until the next window (off hours)
	ActionBuild   Action = "build"   // build a new spare
	ActionCheck   Action = "check"   // check a ready spare's health again
)

// Step is one thing a plan does; Spare is empty for a build (a new name is drawn).
type Step struct {
	Action Action
	Spare  string
	Why    string
	// Until is how long a parked worker is kept (ActionPark).
	Until time.Time
}

// Keep is what the pool keeps outside its hours.
type Keep string

// What a pool can keep outside its hours. A paused spare is not among them: it keeps all a parked
// worker keeps (the worker, parked) and more (IPs, snapshot), and its claim, a resume, is no
// faster than an up adopting that worker (the control planes' chain is the same; docs/pool.md).
const (
	KeepSpares  Keep = "running spares"
	KeepParked  Keep = "parked workers"
	KeepNothing Keep = "nothing"
)

// Option is one thing the pool could keep outside its hours: how long a claim then takes
// (modeled on the latency profile) and what keeping it costs per day.
type Option struct {
	Keep       Keep
	Claim      time.Duration
	DailyNanos int64
}

// WarmClaim is how long a claim of a running spare takes, from the bot's start to the reply with
// the kubeconfig: BenchmarkClaim's median (3.6 s) and its 44 calls at an assumed 150 ms round
// trip each (docs/pool.md, "Speed"), rounded up.
const WarmClaim = 10 * time.Second

// Options are what a pool can keep outside its hours, with their figures: running spares (a claim
// takes WarmClaim and the spares cost spareDaily), parked workers (an up adopting one takes
// parked; they cost workerDaily; negative: not priced, left out), nothing (a cold up takes cold,
// costs nothing). The one list the pool pass decides on.
func Options(parked, cold time.Duration, spareDaily, workerDaily int64) []Option {
	opts := []Option{{Keep: KeepSpares, Claim: WarmClaim, DailyNanos: spareDaily}}
	if workerDaily >= 0 {
		opts = append(opts, Option{Keep: KeepParked, Claim: parked, DailyNanos: workerDaily})
	}
	return append(opts, Option{Keep: KeepNothing, Claim: cold})
}

// ReapGrace is how long past its expiry (pool.max_age after it was ready) the reaper leaves a
// stale spare to the pool pass, which replaces it building the new one first: the pass that finds
// it stale builds (a build, about 12 to 15 minutes, runs within that pass), and the next one
// destroys it once its replacement is ready. On the hourly schedule that is two passes; an hour
// more covers a late or skipped scheduled run (GitHub delays them at busy times). Past it the
// reaper destroys the spare like any expired cluster: a repository whose pool pass stopped
// running pays at most this much more of each spare.
const ReapGrace = 3 * time.Hour

// Pins are the versions a spare must run to be handed out.
type Pins struct{ Talos, Kubernetes string }

// PlanInput is what the schedule's pool pass read.
type PlanInput struct {
	Pool repoconfig.Pool
	// Spares are the repository's spares, every phase.
	Spares []Record
	// Claimers maps a cluster a claim made to the spare it was claimed from (its header's
	// LabelClaimedFrom): a claimed spare whose cluster exists is that cluster's.
	Claimers map[string]string
	Pins     Pins
	Now      time.Time
	// Lead is how long a spare's build takes (the ETA of a cold up); Interval how long until the
	// schedule's next pass.
	Lead, Interval time.Duration
	// Room is how many more spares the quotas leave room for now; negative: not known.
	Room int
	// CheckEvery: a ready spare not checked for this long is checked again (0: never).
	CheckEvery time.Duration
	// ClaimGrace: a claim older than this is over (its run made the cluster, or died).
	ClaimGrace time.Duration
	// Options are what the pool could keep outside its hours.
	Options []Option
}

// Plan is what the schedule does with the pool now.
type Plan struct {
	// Warm: the pool is kept at its size now (inside hours, or building ahead of them).
	Warm bool
	// Keep is what is kept (outside hours: the choice among the options); Why says why.
	Keep  Keep
	Why   string
	Steps []Step
}

// Decide is the schedule's plan for a repository's pool: pure, from its spares' records.
//
//   - A claimed spare is the claim's run's while ClaimGrace lasts. Past it, when the cluster it
//     became exists, its document is forgotten (its machines are that cluster's, recorded in that
//     cluster's state); otherwise the claim died before making the cluster, and the spare is
//     destroyed (nothing tells what its run did to it).
//   - A failed build, or one building for more than three leads (its run died), is destroyed.
//   - Warm (inside hours, or hours start within Lead+Interval: the build ends before the window
//     opens, and the next pass would be late): spares are built until the ready-and-fresh ones
//     plus those building reach the size. A stale, unpinned or unhealthy spare is never handed out;
//     it is destroyed once its replacement is ready, or first when the quotas leave no room for
//     the replacement (saying so). Fresh spares over the size are destroyed, oldest first.
//   - Outside hours: the cheapest option whose claim fits pool.off_hours (none fits, or 0: nothing
//     is kept). Running spares are kept as when warm; parked workers: the spares are torn down,
//     their workers parked until the next window opens; nothing: torn down.
func Decide(in PlanInput) Plan {
	p := Plan{}
	var pool []Record // unclaimed
	for _, r := range in.Spares {
		if r.ClaimedBy == "" {
			pool = append(pool, r)
			continue
		}
		age := in.Now.Sub(r.ClaimedAt)
		switch from, ok := in.Claimers[r.ClaimedBy]; {
		case age < in.ClaimGrace: // the claim's run is at work on it
		case ok && from == r.Name:
			p.Steps = append(p.Steps, Step{Action: ActionForget, Spare: r.Name, Why: "claimed by " + r.ClaimedBy + ", which holds its machines now"})
		default:
			p.Steps = append(p.Steps, Step{Action: ActionDestroy, Spare: r.Name,
				Why: fmt.Sprintf("claimed by %s %s ago, which never became a cluster (its run died)", r.ClaimedBy, age.Round(time.Minute))})
		}
	}
	var good, building, retiring []Record
	for _, r := range pool {
		switch {
		case r.Phase == lifecycle.PhaseProvisioning && in.Now.Sub(r.Created) <= 3*in.Lead:
			building = append(building, r)
		case r.Phase == lifecycle.PhaseProvisioning:
			p.Steps = append(p.Steps, Step{Action: ActionDestroy, Spare: r.Name, Why: "building since " + r.Created.UTC().Format(time.RFC3339) + ": its run died"})
		case r.Phase != lifecycle.PhaseReady:
			p.Steps = append(p.Steps, Step{Action: ActionDestroy, Spare: r.Name, Why: "phase " + string(r.Phase)})
		case r.Talos != in.Pins.Talos:
			retiring = append(retiring, withWhy(r, fmt.Sprintf("runs Talos %s, the pool pins %s", r.Talos, in.Pins.Talos)))
		default:
			if why := r.Claimable(in.Now, in.Pins.Kubernetes); why != "" {
				retiring = append(retiring, withWhy(r, why))
			} else {
				good = append(good, r)
			}
		}
	}
	p.Warm, p.Why = warm(in)
	keep := KeepSpares
	if !p.Warm && in.Pool.Size > 0 {
		var why string
		keep, why = offHours(in)
		p.Why += "; " + why
	}
	p.Keep = keep
	switch {
	case in.Pool.Size == 0 || keep == KeepNothing:
		for _, r := range slices.Concat(good, building, retiring) {
			p.Steps = append(p.Steps, Step{Action: ActionDestroy, Spare: r.Name, Why: p.Why})
		}
	case keep == KeepParked:
		until := in.Pool.Hours.NextPause(in.Now).Add(in.Interval)
		for _, r := range slices.Concat(good, retiring) {
			p.Steps = append(p.Steps, Step{Action: ActionPark, Spare: r.Name, Until: until, Why: p.Why})
		}
		// A spare still building is left to finish; the next pass parks it.
	default:
		p.Steps = append(p.Steps, keepSize(in, good, building, retiring)...)
	}
	return p
}

// withWhy keeps why a retiring spare goes, in its Unhealthy field (the record is a copy).
func withWhy(r Record, why string) Record {
	r.Unhealthy = why
	return r
}

// keepSize keeps the pool at its size: builds, retirements (after their replacement is ready, or
// before it when the quotas leave no room), the spares over the size, the health checks due.
func keepSize(in PlanInput, good, building, retiring []Record) []Step {
	var steps []Step
	need := in.Pool.Size - len(good) - len(building)
	slices.SortFunc(good, func(a, b Record) int { return a.Ready.Compare(b.Ready) }) // oldest first
	for len(good) > in.Pool.Size {
		steps = append(steps, Step{Action: ActionDestroy, Spare: good[0].Name, Why: fmt.Sprintf("over pool.size %d", in.Pool.Size)})
		good = good[1:]
	}
	for _, r := range retiring {
		switch {
		case need <= 0 && len(building) == 0:
			steps = append(steps, Step{Action: ActionDestroy, Spare: r.Name, Why: r.Unhealthy + "; its replacement is ready"})
		case in.Room >= 0 && in.Room < need:
			steps = append(steps, Step{Action: ActionDestroy, Spare: r.Name, Why: r.Unhealthy + "; destroyed before its replacement is built: the quotas leave no room for both"})
			in.Room++
		}
	}
	if need > 0 {
		n := need
		why := fmt.Sprintf("%d ready and %d building of pool.size %d", len(good), len(building), in.Pool.Size)
		if in.Room >= 0 && in.Room < n {
			why += fmt.Sprintf("; the quotas leave room for %d", max(in.Room, 0))
			n = max(in.Room, 0)
		}
		for range n {
			steps = append(steps, Step{Action: ActionBuild, Why: why})
		}
	}
	if in.CheckEvery > 0 {
		for _, r := range good {
			if in.Now.Sub(cmp.Or(r.Checked, r.Ready)) >= in.CheckEvery {
				steps = append(steps, Step{Action: ActionCheck, Spare: r.Name, Why: "last checked " + cmp.Or(r.Checked, r.Ready).UTC().Format(time.RFC3339)})
			}
		}
	}
	return steps
}

// warm tells whether the pool is kept full now, and why.
func warm(in PlanInput) (bool, string) {
	h := in.Pool.Hours
	switch {
	case in.Pool.Size == 0:
		return false, "pool.size is 0"
	case h == nil:
		return true, fmt.Sprintf("pool.size %d, no pool.hours: always warm", in.Pool.Size)
	case h.Paused(in.Now):
		return true, "inside pool.hours (" + h.String() + ")"
	}
	next := h.NextPause(in.Now)
	if ahead := next.Sub(in.Now); ahead <= in.Lead+in.Interval {
		return true, fmt.Sprintf("pool.hours open at %s, in %s: building now (a build takes %s, the next pass is in %s) so that the first claim is warm",
			next.In(h.Loc).Format("Mon 15:04 MST"), ahead.Round(time.Minute), in.Lead.Round(time.Minute), in.Interval.Round(time.Minute))
	}
	return false, "outside pool.hours (" + h.String() + "; next window " + next.In(h.Loc).Format("Mon 15:04 MST") + ")"
}

// offHours chooses what is kept outside hours: the cheapest option whose claim fits
// pool.off_hours (the faster of two equally cheap), and says why, with the figures.
func offHours(in PlanInput) (Keep, string) {
	if in.Pool.OffHours <= 0 {
		return KeepNothing, "pool.off_hours is 0: nothing is kept"
	}
	var fit []Option
	var too []string
	for _, o := range in.Options {
		if o.Claim <= in.Pool.OffHours {
			fit = append(fit, o)
		} else {
			too = append(too, fmt.Sprintf("%s claim in %s", o.Keep, fmtDuration(o.Claim)))
		}
	}
	if len(fit) == 0 {
		return KeepNothing, fmt.Sprintf("no option claims within pool.off_hours %s (%s): nothing is kept", fmtDuration(in.Pool.OffHours), strings.Join(too, ", "))
	}
	slices.SortStableFunc(fit, func(a, b Option) int {
		if c := cmp.Compare(a.DailyNanos, b.DailyNanos); c != 0 {
			return c
		}
		return cmp.Compare(a.Claim, b.Claim)
	})
	best := fit[0]
	why := fmt.Sprintf("keeping %s: a claim in %s ≤ pool.off_hours %s, %s/day", best.Keep, fmtDuration(best.Claim), fmtDuration(in.Pool.OffHours), euros(best.DailyNanos))
	for _, o := range fit[1:] {
		why += fmt.Sprintf("; %s: %s/day", o.Keep, euros(o.DailyNanos))
	}
	return best.Keep, why
}

func fmtDuration(d time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%.1f min", d.Minutes())
}

// euros prints nano-euros with two decimals.
func euros(nanos int64) string {
	return fmt.Sprintf("%d.%02d €", nanos/1_000_000_000, (nanos%1_000_000_000)/10_000_000)
}
