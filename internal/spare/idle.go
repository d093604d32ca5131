package spare

import (
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
)

// Life is one spare's life in an idle simulation: from its build's start to its teardown.
type Life struct {
	Spare      string
	From, To   time.Time
	Keep       Keep // what it was kept as (a parked worker's life is its worker's)
	BilledHour int64
}

// Idle plays the schedule's plan (Decide) on a pool nobody claims from, one pass every interval
// from start for days: each build takes lead, each teardown ends a life at its pass. It returns the
// lives, each with its billed hours (Scaleway bills every started hour of a resource). It is what
// the pool costs idle: the price of a spare per hour times the billed hours. The parked option's
// lives are its workers' (priced at the offer's hourly price by the caller), each until the next
// build adopts it or its park ends.
func Idle(pool repoconfig.Pool, pins Pins, lead, interval time.Duration, options []Option, start time.Time, days int) []Life {
	var (
		spares []Record
		parked []Life
		lives  = map[string]*Life{}
		out    []Life
		n      int
	)
	end := start.Add(time.Duration(days) * 24 * time.Hour)
	closeLife := func(name string, at time.Time) {
		if l, ok := lives[name]; ok {
			l.To = at
			out = append(out, *l)
			delete(lives, name)
		}
	}
	for t := start; t.Before(end); t = t.Add(interval) {
		for i := range spares { // builds finished since the last pass
			if spares[i].Phase == lifecycle.PhaseProvisioning && !t.Before(spares[i].Created.Add(lead)) {
				spares[i].Phase, spares[i].Ready = lifecycle.PhaseReady, spares[i].Created.Add(lead)
				spares[i].Checked, spares[i].Stale = spares[i].Ready, spares[i].Ready.Add(pool.MaxAge)
			}
		}
		p := Decide(PlanInput{Pool: pool, Spares: spares, Pins: pins, Now: t, Lead: lead, Interval: interval, Room: -1, Options: options})
		gone := map[string]bool{}
		for _, s := range p.Steps {
			switch s.Action {
			case ActionBuild:
				// The build's up adopts a parked worker of the pool's spec: that worker's park ends.
				for i, w := range parked {
					if w.To.After(t) {
						parked[i].To = t
						break
					}
				}
				n++
				name := fmt.Sprintf("spare-%d", n)
				spares = append(spares, Record{Name: name, Phase: lifecycle.PhaseProvisioning, Created: t, Talos: pins.Talos, Kubernetes: pins.Kubernetes})
				lives[name] = &Life{Spare: name, From: t, Keep: KeepSpares}
			case ActionDestroy:
				gone[s.Spare] = true
				closeLife(s.Spare, t)
			case ActionPark:
				gone[s.Spare] = true
				closeLife(s.Spare, t)
				n++
				parked = append(parked, Life{Spare: fmt.Sprintf("parked-%d", n), From: t, To: minTime(s.Until, end), Keep: KeepParked})
			}
		}
		kept := spares[:0]
		for _, r := range spares {
			if !gone[r.Name] {
				kept = append(kept, r)
			}
		}
		spares = kept
	}
	for name := range lives {
		closeLife(name, end)
	}
	out = append(out, parked...)
	for i := range out {
		out[i].BilledHour = cost.BilledHours(out[i].To.Sub(out[i].From))
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// IdleHours sums the billed hours of lives kept as keep.
func IdleHours(lives []Life, keep Keep) int64 {
	var h int64
	for _, l := range lives {
		if l.Keep == keep {
			h += l.BilledHour
		}
	}
	return h
}
