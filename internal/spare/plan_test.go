package spare

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
)

func hours(t *testing.T, v string) *settings.PauseSchedule {
	t.Helper()
	h, err := settings.ParseHours(v)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// steps prints a plan's steps compactly: "build", "destroy spare-a", "park spare-a".
func steps(p Plan) string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, strings.TrimSpace(string(s.Action)+" "+s.Spare))
	}
	return strings.Join(out, ", ")
}

// The schedule's plan for a pool, as a table: what it builds, destroys, parks and checks, and
// that it says why.
func TestDecide(t *testing.T) {
	paris := "weekdays 08:00-19:00 Europe/Paris"
	base := PlanInput{Pool: repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour}, Pins: Pins{Talos: "v1.13.11", Kubernetes: "1.33.6"},
		Now: now, Lead: 12 * time.Minute, Interval: time.Hour, Room: -1, ClaimGrace: 30 * time.Minute}
	mod := func(r Record, f func(*Record)) Record { f(&r); return r }
	options := Options(246*time.Second, 726*time.Second, 4_300_000_000, 2_900_000_000)
	tests := []struct {
		name  string
		in    func(*PlanInput)
		steps string
		warm  bool
		keep  Keep
		why   string
	}{
		{name: "no pool", in: func(in *PlanInput) { in.Pool.Size = 0 }, keep: KeepSpares, why: "pool.size is 0"},
		{name: "no pool: spares left are destroyed", in: func(in *PlanInput) { in.Pool.Size = 0; in.Spares = []Record{ready("spare-a")} },
			steps: "destroy spare-a", keep: KeepSpares},
		{name: "empty, always warm: build", steps: "build", warm: true, keep: KeepSpares, why: "always warm"},
		{name: "full", in: func(in *PlanInput) { in.Spares = []Record{ready("spare-a")} }, warm: true, keep: KeepSpares},
		{name: "building counts", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Phase, r.Created = lifecycle.PhaseProvisioning, now.Add(-5*time.Minute) })}
		}, warm: true, keep: KeepSpares},
		{name: "a build whose run died", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Phase, r.Created = lifecycle.PhaseProvisioning, now.Add(-2*time.Hour) })}
		}, steps: "destroy spare-a, build", warm: true, keep: KeepSpares},
		{name: "failed build", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Phase = lifecycle.PhaseFailed })}
		},
			steps: "destroy spare-a, build", warm: true, keep: KeepSpares},
		{name: "size 2, one ready", in: func(in *PlanInput) { in.Pool.Size = 2; in.Spares = []Record{ready("spare-a")} }, steps: "build", warm: true, keep: KeepSpares},
		{name: "over size: the oldest goes", in: func(in *PlanInput) {
			in.Spares = []Record{ready("spare-a"), mod(ready("spare-b"), func(r *Record) { r.Ready = now.Add(-3 * time.Hour) })}
		}, steps: "destroy spare-b", warm: true, keep: KeepSpares},
		{name: "stale: replacement first", in: func(in *PlanInput) { in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Stale = now })} },
			steps: "build", warm: true, keep: KeepSpares},
		{name: "stale, replacement building: kept", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Stale = now }),
				mod(ready("spare-b"), func(r *Record) { r.Phase, r.Created = lifecycle.PhaseProvisioning, now.Add(-5*time.Minute) })}
		}, warm: true, keep: KeepSpares},
		{name: "stale, replacement ready: destroyed", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Stale = now }), ready("spare-b")}
		}, steps: "destroy spare-a", warm: true, keep: KeepSpares},
		{name: "stale, no room for both: destroyed first", in: func(in *PlanInput) {
			in.Room = 0
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Stale = now })}
		}, steps: "destroy spare-a, build", warm: true, keep: KeepSpares},
		{name: "no room at all", in: func(in *PlanInput) { in.Room = 0 }, warm: true, keep: KeepSpares},
		{name: "unhealthy: replaced", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Unhealthy = "nodes" })}
		},
			steps: "build", warm: true, keep: KeepSpares},
		{name: "another Talos pinned: replaced", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Talos = "v1.13.10" })}
		},
			steps: "build", warm: true, keep: KeepSpares},
		{name: "another Kubernetes pinned: replaced", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.Kubernetes = "1.33.5" })}
		},
			steps: "build", warm: true, keep: KeepSpares},
		{name: "health check due", in: func(in *PlanInput) { in.CheckEvery = 30 * time.Minute; in.Spares = []Record{ready("spare-a")} },
			steps: "check spare-a", warm: true, keep: KeepSpares},
		{name: "a claim at work is left alone", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.ClaimedBy, r.ClaimedAt = "acme-shop-1", now.Add(-time.Minute) })}
		}, steps: "build", warm: true, keep: KeepSpares},
		{name: "a claim made its cluster: forgotten", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.ClaimedBy, r.ClaimedAt = "acme-shop-1", now.Add(-time.Hour) })}
			in.Claimers = map[string]string{"acme-shop-1": "spare-a"}
		}, steps: "forget spare-a, build", warm: true, keep: KeepSpares},
		{name: "a claim that died: destroyed", in: func(in *PlanInput) {
			in.Spares = []Record{mod(ready("spare-a"), func(r *Record) { r.ClaimedBy, r.ClaimedAt = "acme-shop-1", now.Add(-time.Hour) })}
			in.Claimers = map[string]string{"acme-shop-1": "spare-z"}
		}, steps: "destroy spare-a, build", warm: true, keep: KeepSpares, why: "always warm"},
		// Monday 10:00 UTC is 11:00 in Paris: inside the hours.
		{name: "inside hours", in: func(in *PlanInput) { in.Pool.Hours = hours(t, paris) }, steps: "build", warm: true, keep: KeepSpares, why: "inside pool.hours"},
		{name: "before hours, far: nothing kept by default", in: func(in *PlanInput) {
			in.Pool.Hours, in.Now = hours(t, paris), time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
			in.Spares = []Record{ready("spare-a")}
		}, steps: "destroy spare-a", keep: KeepNothing, why: "pool.off_hours is 0: nothing is kept"},
		// 05:50 UTC is 06:50 in Paris: the window opens in 70 min ≤ 12 min + 60 min.
		{name: "before hours, near: built early", in: func(in *PlanInput) {
			in.Pool.Hours, in.Now = hours(t, paris), time.Date(2026, 12, 7, 5, 50, 0, 0, time.UTC)
		}, steps: "build", warm: true, keep: KeepSpares, why: "pool.hours open at Mon 08:00 CET, in 1h10m0s: building now"},
		{name: "one pass earlier: not yet", in: func(in *PlanInput) {
			in.Pool.Hours, in.Now = hours(t, paris), time.Date(2026, 12, 7, 4, 50, 0, 0, time.UTC)
		}, keep: KeepNothing},
		{name: "off hours: parked workers are the cheapest within 5 min", in: func(in *PlanInput) {
			in.Pool.Hours, in.Pool.OffHours, in.Options = hours(t, paris), 5*time.Minute, options
			in.Now, in.Spares = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC), []Record{ready("spare-a")}
		}, steps: "park spare-a", keep: KeepParked, why: "keeping parked workers: a claim in 4.1 min ≤ pool.off_hours 5.0 min, 2.90 €/day; running spares: 4.30 €/day"},
		{name: "off hours: only running spares claim within 1 min", in: func(in *PlanInput) {
			in.Pool.Hours, in.Pool.OffHours, in.Options = hours(t, paris), time.Minute, options
			in.Now, in.Spares = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC), []Record{ready("spare-a")}
		}, keep: KeepSpares, why: "keeping running spares"},
		{name: "off hours: nothing within 15 min", in: func(in *PlanInput) {
			in.Pool.Hours, in.Pool.OffHours, in.Options = hours(t, paris), 15*time.Minute, options
			in.Now, in.Spares = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC), []Record{ready("spare-a")}
		}, steps: "destroy spare-a", keep: KeepNothing, why: "keeping nothing"},
		{name: "off hours: no option fits 5 s", in: func(in *PlanInput) {
			in.Pool.Hours, in.Pool.OffHours, in.Options = hours(t, paris), 5*time.Second, options
			in.Now = time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
		}, keep: KeepNothing, why: "no option claims within pool.off_hours 5s"},
		{name: "weekend: outside hours", in: func(in *PlanInput) {
			in.Pool.Hours, in.Now, in.Spares = hours(t, paris), time.Date(2026, 12, 12, 10, 0, 0, 0, time.UTC), []Record{ready("spare-a")}
		}, steps: "destroy spare-a", keep: KeepNothing, why: "outside pool.hours"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			if tc.in != nil {
				tc.in(&in)
			}
			p := Decide(in)
			if got := steps(p); got != tc.steps {
				t.Errorf("steps %q, want %q (%s)", got, tc.steps, p.Why)
			}
			if p.Warm != tc.warm || p.Keep != tc.keep {
				t.Errorf("warm %v keep %q, want %v %q (%s)", p.Warm, p.Keep, tc.warm, tc.keep, p.Why)
			}
			if !strings.Contains(p.Why, tc.why) {
				t.Errorf("why %q, want it to contain %q", p.Why, tc.why)
			}
			for _, s := range p.Steps {
				if s.Why == "" {
					t.Errorf("step %s %s says not why", s.Action, s.Spare)
				}
				if s.Action == ActionPark && !s.Until.After(in.Now) {
					t.Errorf("park until %s, not after now", s.Until)
				}
			}
		})
	}
}

// The pool never holds more than its size of claimable and building spares, whatever the plan
// starts from: a plan's builds never push it over.
func TestDecideNeverAboveSize(t *testing.T) {
	for size := 0; size <= settings.MaxPoolSize; size++ {
		for good := 0; good <= 6; good++ {
			for building := 0; building <= 6; building++ {
				var spares []Record
				for i := range good {
					spares = append(spares, ready(fmt.Sprintf("spare-g%d", i)))
				}
				for i := range building {
					r := ready(fmt.Sprintf("spare-b%d", i))
					r.Phase, r.Created = lifecycle.PhaseProvisioning, now.Add(-time.Minute)
					spares = append(spares, r)
				}
				p := Decide(PlanInput{Pool: repoconfig.Pool{Size: size, MaxAge: 24 * time.Hour}, Spares: spares, Pins: Pins{Talos: "v1.13.11", Kubernetes: "1.33.6"},
					Now: now, Lead: 12 * time.Minute, Interval: time.Hour, Room: -1})
				builds, destroys := 0, 0
				for _, s := range p.Steps {
					switch s.Action {
					case ActionBuild:
						builds++
					case ActionDestroy:
						destroys++
					}
				}
				if after := good + building + builds - destroys; builds > 0 && after > size {
					t.Errorf("size %d, %d ready, %d building: %d builds, %d destroys leave %d", size, good, building, builds, destroys, after)
				}
			}
		}
	}
}
