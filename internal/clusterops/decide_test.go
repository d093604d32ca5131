package clusterops_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The decision's table: verbs, intents and facts in, decisions out, with no I/O and no stand-in.
// Every refusal kind of lifecycle has a case here, or is named in decidedElsewhere with the test
// that holds it.

var t0 = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC) // a Wednesday noon

// seedSpec is the seed's spec as a cluster records it (its image key computed as an up does).
func seedSpec() provision.Spec {
	s := provision.DefaultSpec()
	s.ImageBucket = "pocbot-images"
	s.ImageKey = provision.ImageKeyFor(cluster.SchematicID(s), s.TalosVersion)
	return s
}

// doc is the facts of an existing cluster of acme/shop#42 in phase, serial 7, expiring in 4 h.
func doc(phase lifecycle.Phase, edit ...func(*statestore.Header)) clusterops.Facts {
	h := statestore.Header{Cluster: "acme-shop-42", Repository: "acme/shop", Number: 42, Kind: "issue", RequestedBy: "alice",
		Created: t0.Add(-time.Hour), Expires: t0.Add(4 * time.Hour), Phase: string(phase), Serial: 7}
	for _, e := range edit {
		e(&h)
	}
	return clusterops.Facts{Doc: &statestore.Document{Header: h}, State: &provision.State{ClusterID: h.Cluster, Spec: seedSpec()}}
}

// read are facts with the price and the pre-flight read (the quote: 4.30 € a day).
func read(f clusterops.Facts) clusterops.Facts {
	f.Read |= clusterops.NeedQuote | clusterops.NeedPreflight
	f.Quote = &cost.Quote{Daily: cost.EUR(4, 300_000_000)}
	f.Preflight = &preflight.Result{}
	return f
}

// budgeted are read facts with the budget's others read: running clusters of these daily costs.
func budgeted(f clusterops.Facts, daily ...int64) clusterops.Facts {
	f = read(f)
	f.Read |= clusterops.NeedBudget
	f.Running = []cost.ClusterCost{}
	for i, d := range daily {
		f.Running = append(f.Running, cost.ClusterCost{Name: "other-" + string(rune('a'+i)), Daily: cost.EUR(0, d)})
	}
	return f
}

// intent is alice's on acme/shop#42, within the default bounds.
func intent(edit ...func(*clusterops.Intent)) clusterops.Intent {
	b := repoconfig.Default()
	in := clusterops.Intent{Cluster: "acme-shop-42", Spec: seedSpec(), Repository: "acme/shop", Number: 42, Kind: "issue",
		RequestedBy: "alice", RequesterID: 9, Permission: "write", Bounds: &b}
	for _, e := range edit {
		e(&in)
	}
	return in
}

// nightly pauses from 19:00 to 08:00 UTC, weekdays and weekends.
func nightly(in *clusterops.Intent) {
	s, err := settings.ParsePauseSchedule("daily 19:00-08:00 UTC")
	if err != nil {
		panic(err)
	}
	in.Bounds.PauseSchedule = s
}

var none clusterops.Facts

// decisionCase is one line of the table: what Decide must answer.
type decisionCase struct {
	name   string
	verb   clusterops.Verb
	in     clusterops.Intent
	facts  clusterops.Facts
	now    time.Time
	refuse lifecycle.Kind  // the refusal's kind ("" none)
	err    string          // a failure's words ("" none)
	need   clusterops.Need // facts still to read
	does   clusterops.Verb // what it does when it goes ahead ("" the verb)
	check  func(t *testing.T, d clusterops.Decision)
}

func withPatch(p clusterops.SpecPatch) func(*clusterops.Intent) {
	return func(in *clusterops.Intent) { in.Patch = p }
}

func decisionCases() []decisionCase {
	return slices.Concat(upCases(), claimCases(), resumeCases(), teardownCases(), otherCases())
}

// upCases are an up's: what needs no state first, then the cluster's rules, the facts it asks
// for, the quota, the budget, and the header of its one write.
func upCases() []decisionCase {
	return []decisionCase{
		{name: "up on a closed issue", verb: clusterops.VerbUp, in: intent(func(in *clusterops.Intent) { in.Closed = true }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseClosed},
		{name: "up with a DNS zone the repository does not list", verb: clusterops.VerbUp,
			in: intent(withPatch(clusterops.SpecPatch{"dns-zone": "prod.example.com"})), refuse: lifecycle.RefuseDNSZone},
		{name: "an operator's up may use any zone", verb: clusterops.VerbUp,
			in:   intent(withPatch(clusterops.SpecPatch{"dns-zone": "prod.example.com"}), func(in *clusterops.Intent) { in.Number = 0 }),
			need: clusterops.NeedQuote | clusterops.NeedPreflight},
		{name: "up of an invalid spec", verb: clusterops.VerbUp, in: intent(withPatch(clusterops.SpecPatch{"cp-count": 2})), refuse: lifecycle.RefuseInvalid},
		{name: "up of a cluster of another issue", verb: clusterops.VerbUp, in: intent(func(in *clusterops.Intent) { in.Number = 7 }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseCollision},
		{name: "a workflow's up of another repository's cluster", verb: clusterops.VerbUp,
			in:    intent(func(in *clusterops.Intent) { in.Number, in.Repository, in.Scope = 0, "acme/web", "acme/web" }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseScope},
		{name: "up of a rolled-back state", verb: clusterops.VerbUp, in: intent(func(in *clusterops.Intent) { in.Witness = 9 }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseRollback,
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Refusal.Serial != 7 || d.Refusal.Witness != 9 {
					t.Errorf("rollback names serial %d and witness %d, want 7 and 9", d.Refusal.Serial, d.Refusal.Witness)
				}
			}},
		{name: "up of a change that cannot apply in place", verb: clusterops.VerbUp, in: intent(withPatch(clusterops.SpecPatch{"cp-count": 5})),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseChanges},
		{name: "a dry up lists the change it would refuse", verb: clusterops.VerbUp,
			in:    intent(withPatch(clusterops.SpecPatch{"cp-count": 5}), func(in *clusterops.Intent) { in.DryRun = true }),
			facts: read(doc(lifecycle.PhaseReady)),
			check: func(t *testing.T, d clusterops.Decision) {
				if len(d.Plan.Refused) != 1 || d.Plan.Refused[0].Field != "cp_count" || d.Plan.Write || d.Plan.Phase != lifecycle.PhasePlanned {
					t.Errorf("dry plan %+v, want cp_count refused, nothing written, planned", d.Plan)
				}
			}},
		{name: "a new cluster needs its price and pre-flight", verb: clusterops.VerbUp, in: intent(),
			need: clusterops.NeedQuote | clusterops.NeedPreflight,
			check: func(t *testing.T, d clusterops.Decision) {
				if !d.Plan.Create || d.Plan.Life != settings.DefaultTTL || !slices.Equal(d.Plan.Offers, []string{settings.DefaultWorkerOffer}) {
					t.Errorf("plan so far %+v, want a create priced over the default TTL for the default offer", d.Plan)
				}
			}},
		{name: "a new cluster the quotas refuse", verb: clusterops.VerbUp, in: intent(),
			facts: func() clusterops.Facts {
				f := read(none)
				f.Preflight = &preflight.Result{Refusal: &preflight.Refusal{Check: preflight.Check{Key: "PLAY2-NANO", What: "PLAY2-NANO Instances", Source: preflight.FromAPI, Limit: 5, Used: 3, Need: 3}}}
				return f
			}(), refuse: lifecycle.RefuseQuota},
		{name: "a new cluster needs the budget's others, under the admission lock", verb: clusterops.VerbUp, in: intent(),
			facts: read(none), need: clusterops.NeedBudget},
		{name: "a new cluster over max_daily_eur", verb: clusterops.VerbUp, in: intent(),
			facts: budgeted(none, 6e9, 5e9), refuse: lifecycle.RefuseBudget,
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Refusal.Budget == nil || d.Refusal.Budget.Limit != "max_daily_eur" || len(d.Refusal.Running) != 2 {
					t.Errorf("budget refusal %+v, want max_daily_eur naming the 2 running", d.Refusal)
				}
			}},
		{name: "a budget that cannot be checked refuses", verb: clusterops.VerbUp, in: intent(),
			facts: func() clusterops.Facts {
				f := budgeted(none)
				f.Running, f.RunningErr = nil, errors.New("bucket unreachable")
				return f
			}(), refuse: lifecycle.RefuseBudget},
		{name: "a new cluster admitted: the header's one write", verb: clusterops.VerbUp,
			in:    intent(func(in *clusterops.Intent) { in.Witness, in.StatusComment = 12, 555 }),
			facts: budgeted(none, 4e9),
			check: func(t *testing.T, d clusterops.Decision) {
				h := d.Plan.Header
				m, _ := clusterops.MetaOf(h)
				if !d.Plan.Write || h.Serial != 12 || h.Expires != t0.Add(settings.DefaultTTL) || h.Phase != string(lifecycle.PhaseProvisioning) ||
					m.StickyID != 555 || m.DailyCostNanos != 4_300_000_000 {
					t.Errorf("header %+v meta %+v: want serial 12 (above the witness), expiry in the default TTL, provisioning, status comment 555, 4.30 € a day", h, m)
				}
			}},
		{name: "a convergence passes no budget", verb: clusterops.VerbUp, in: intent(withPatch(clusterops.SpecPatch{"admin-cidr": []string{"203.0.113.0/24"}})),
			facts: read(doc(lifecycle.PhaseReady)),
			check: func(t *testing.T, d clusterops.Decision) {
				if len(d.Plan.InPlace) != 1 || d.Plan.Spec.AdminCIDRs[0] != "203.0.113.0/24" || d.Plan.Create || !d.Plan.Write {
					t.Errorf("convergence %+v, want one change in place, written", d.Plan)
				}
			}},
		{name: "a pre-flight's offer is the worker's", verb: clusterops.VerbUp, in: intent(),
			facts: func() clusterops.Facts {
				f := budgeted(none)
				f.Preflight.Offer = "EM-B112X-SSD"
				return f
			}(),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Spec.BaremetalOffer != "EM-B112X-SSD" {
					t.Errorf("worker offer %s, want the pre-flight's", d.Plan.Spec.BaremetalOffer)
				}
			}},
		{name: "an up of a paused cluster is its resume, budgeted", verb: clusterops.VerbUp, in: intent(), facts: read(doc(lifecycle.PhasePaused)),
			need: clusterops.NeedBudget},
		{name: "a budget without prices fails", verb: clusterops.VerbUp, in: intent(),
			facts: func() clusterops.Facts { f := read(none); f.Quote = nil; return f }(), err: "no quoter"},
		{name: "a stored spec that no longer validates fails", verb: clusterops.VerbUp, in: intent(),
			facts: func() clusterops.Facts { f := doc(lifecycle.PhaseReady); f.State.Spec.CPCount = 4; return f }(), err: "cp_count 4"},
	}
}

// resumeCases are a resume's and the pause window's wake.
func resumeCases() []decisionCase {
	return []decisionCase{
		{name: "resume of a cluster that is not paused", verb: clusterops.VerbResume, in: intent(), facts: doc(lifecycle.PhaseReady),
			refuse: lifecycle.RefuseNotPaused,
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Refusal.Phase != lifecycle.PhaseReady {
					t.Errorf("not paused names phase %q", d.Refusal.Phase)
				}
			}},
		{name: "resume of no cluster", verb: clusterops.VerbResume, in: intent(), refuse: lifecycle.RefuseNoCluster},
		{name: "resume inside the pause window keeps it awake until the window ends", verb: clusterops.VerbResume, in: intent(nightly),
			facts: budgeted(doc(lifecycle.PhasePaused)), now: t0.Add(9 * time.Hour), // 21:00
			check: func(t *testing.T, d clusterops.Decision) {
				m, _ := clusterops.MetaOf(d.Plan.Header)
				if want := time.Date(2026, 3, 5, 8, 0, 0, 0, time.UTC); !m.AwakeUntil.Equal(want) || d.Plan.Header.Phase != string(lifecycle.PhaseResuming) {
					t.Errorf("awake until %s, phase %s; want %s, resuming", m.AwakeUntil, d.Plan.Header.Phase, want)
				}
			}},
		{name: "extend inside the window wakes the cluster", verb: clusterops.VerbExtend, in: intent(nightly, func(in *clusterops.Intent) { in.ExtendBy = time.Hour }),
			facts: budgeted(doc(lifecycle.PhasePaused)), now: t0.Add(9 * time.Hour), does: clusterops.VerbResume},
		{name: "kubeconfig inside the window wakes the cluster", verb: clusterops.VerbKubeconfig, in: intent(nightly),
			facts: budgeted(doc(lifecycle.PhasePaused)), now: t0.Add(9 * time.Hour), does: clusterops.VerbResume},
		{name: "up inside the window wakes the cluster, without its flags", verb: clusterops.VerbUp,
			in:    intent(nightly, withPatch(clusterops.SpecPatch{"dns-zone": "prod.example.com", "cp-count": 5})),
			facts: budgeted(doc(lifecycle.PhasePaused)), now: t0.Add(9 * time.Hour), does: clusterops.VerbResume},
		{name: "status inside the window wakes nothing", verb: clusterops.VerbStatus, in: intent(nightly),
			facts: doc(lifecycle.PhasePaused), now: t0.Add(9 * time.Hour)},
		{name: "a reader's kubeconfig inside the window wakes nothing", verb: clusterops.VerbKubeconfig,
			in: intent(nightly, func(in *clusterops.Intent) { in.Permission = "read" }), facts: doc(lifecycle.PhasePaused), now: t0.Add(9 * time.Hour)},
		{name: "a dry up inside the window wakes nothing", verb: clusterops.VerbUp, in: intent(nightly, func(in *clusterops.Intent) { in.DryRun = true }),
			facts: read(doc(lifecycle.PhasePaused)), now: t0.Add(9 * time.Hour)},
		{name: "extend outside the window extends", verb: clusterops.VerbExtend, in: intent(nightly, func(in *clusterops.Intent) { in.ExtendBy = time.Hour }),
			facts: doc(lifecycle.PhasePaused)},
		{name: "a woken cluster of a closed issue is refused", verb: clusterops.VerbExtend,
			in:    intent(nightly, func(in *clusterops.Intent) { in.Closed = true }),
			facts: doc(lifecycle.PhasePaused), now: t0.Add(9 * time.Hour), refuse: lifecycle.RefuseClosed, does: clusterops.VerbResume},
	}
}

// teardownCases are a down's and a pause's, the schedule's included.
func teardownCases() []decisionCase {
	return []decisionCase{
		{name: "down of no cluster sweeps its tag", verb: clusterops.VerbDown, in: intent(),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Exists || d.Plan.Write || d.Plan.Spec.ImageBucket == "" {
					t.Errorf("plan %+v, want the intent's spec swept, nothing written", d.Plan)
				}
			}},
		{name: "a pull request's close of no cluster", verb: clusterops.VerbDown, in: intent(func(in *clusterops.Intent) { in.IfExists = true }),
			refuse: lifecycle.RefuseNoCluster},
		{name: "down of another issue's cluster", verb: clusterops.VerbDown, in: intent(func(in *clusterops.Intent) { in.Number = 1 }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseCollision},
		{name: "the schedule's teardown of a cluster extended since", verb: clusterops.VerbDown,
			in:    intent(func(in *clusterops.Intent) { in.Precondition.ExpiredAt = t0 }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefusePrecondition,
			check: func(t *testing.T, d clusterops.Decision) {
				if !errors.Is(d.Refusal, clusterops.ErrPrecondition) || !strings.Contains(d.Refusal.Error(), "by an extend") {
					t.Errorf("refusal %v, want ErrPrecondition naming the extend", d.Refusal)
				}
			}},
		{name: "the schedule's teardown of an expired cluster", verb: clusterops.VerbDown,
			in:    intent(func(in *clusterops.Intent) { in.Precondition.ExpiredAt = t0 }),
			facts: doc(lifecycle.PhaseReady, func(h *statestore.Header) { h.Expires = t0.Add(-time.Minute) }),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Header.Phase != string(lifecycle.PhaseDestroying) || !d.Plan.Write {
					t.Errorf("plan %+v, want the destroying phase written", d.Plan)
				}
			}},

		{name: "a job's up of a cluster another run made meanwhile", verb: clusterops.VerbUp,
			in:    intent(func(in *clusterops.Intent) { in.Precondition.Absent = true }),
			facts: doc(lifecycle.PhaseProvisioning), refuse: lifecycle.RefusePrecondition},

		// Pause.
		{name: "pause of a provisioning cluster", verb: clusterops.VerbPause, in: intent(), facts: doc(lifecycle.PhaseProvisioning),
			refuse: lifecycle.RefuseNotReady},
		{name: "pause of a failed cluster", verb: clusterops.VerbPause, in: intent(), facts: doc(lifecycle.PhaseFailed), refuse: lifecycle.RefuseNotReady},
		{name: "pause of no cluster", verb: clusterops.VerbPause, in: intent(), refuse: lifecycle.RefuseNoCluster},
		{name: "pause of a paused cluster does nothing", verb: clusterops.VerbPause, in: intent(), facts: doc(lifecycle.PhasePaused),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Write {
					t.Error("the pause of a paused cluster writes")
				}
			}},
		{name: "pause of a half-paused cluster finishes it", verb: clusterops.VerbPause, in: intent(), facts: doc(lifecycle.PhasePausing)},
		{name: "the schedule's pause of a cluster a command resumed since", verb: clusterops.VerbPause,
			in: intent(func(in *clusterops.Intent) {
				in.Precondition = clusterops.Precondition{Phase: lifecycle.PhaseReady, AsleepAt: t0}
			}),
			facts: doc(lifecycle.PhaseResuming), refuse: lifecycle.RefusePrecondition},
		{name: "the schedule's pause of a cluster a command keeps awake", verb: clusterops.VerbPause,
			in: intent(func(in *clusterops.Intent) {
				in.Precondition = clusterops.Precondition{Phase: lifecycle.PhaseReady, AsleepAt: t0}
			}),
			facts: doc(lifecycle.PhaseReady, func(h *statestore.Header) {
				clusterops.Meta{AwakeUntil: t0.Add(time.Hour)}.Into(h)
			}), refuse: lifecycle.RefusePrecondition},
	}
}

// otherCases are an extend's, the schedule's marks (keep) and the reads'.
func otherCases() []decisionCase {
	return []decisionCase{
		{name: "extend beyond max_ttl", verb: clusterops.VerbExtend, in: intent(func(in *clusterops.Intent) { in.ExtendBy = 8 * 24 * time.Hour }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseMaxTTL},
		{name: "extend of no cluster", verb: clusterops.VerbExtend, in: intent(), refuse: lifecycle.RefuseNoCluster},
		{name: "extend re-arms the warning", verb: clusterops.VerbExtend, in: intent(func(in *clusterops.Intent) { in.ExtendBy = time.Hour }),
			facts: doc(lifecycle.PhaseReady, func(h *statestore.Header) { clusterops.Meta{WarnedFor: t0.Add(4 * time.Hour)}.Into(h) }),
			check: func(t *testing.T, d clusterops.Decision) {
				m, _ := clusterops.MetaOf(d.Plan.Header)
				if !d.Plan.Header.Expires.Equal(t0.Add(5*time.Hour)) || !m.WarnedFor.IsZero() {
					t.Errorf("expires %s, warned %s: want 17:00 and re-armed", d.Plan.Header.Expires, m.WarnedFor)
				}
			}},
		{name: "extend of a lapsed expiry counts from now", verb: clusterops.VerbExtend, in: intent(func(in *clusterops.Intent) { in.ExtendBy = time.Hour }),
			facts: doc(lifecycle.PhaseReady, func(h *statestore.Header) { h.Expires = t0.Add(-3 * time.Hour) }),
			check: func(t *testing.T, d clusterops.Decision) {
				if !d.Plan.Header.Expires.Equal(t0.Add(time.Hour)) {
					t.Errorf("expires %s, want an hour from now", d.Plan.Header.Expires)
				}
			}},

		// Keep (the schedule's marks).
		{name: "keep marks the warning of the listed expiry", verb: clusterops.VerbKeep, in: intent(func(in *clusterops.Intent) { in.Warn = t0.Add(4 * time.Hour) }),
			facts: doc(lifecycle.PhaseReady),
			check: func(t *testing.T, d clusterops.Decision) {
				if !d.Plan.Warned || !d.Plan.Write {
					t.Errorf("plan %+v, want the warning marked", d.Plan)
				}
			}},
		{name: "keep warns no expiry an extend moved", verb: clusterops.VerbKeep, in: intent(func(in *clusterops.Intent) { in.Warn = t0.Add(3 * time.Hour) }),
			facts: doc(lifecycle.PhaseReady),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Warned || d.Plan.Write {
					t.Errorf("plan %+v, want nothing written", d.Plan)
				}
			}},
		{name: "keep of no cluster", verb: clusterops.VerbKeep, in: intent(), refuse: lifecycle.RefuseNoCluster},

		// Reads.
		{name: "status of no cluster answers", verb: clusterops.VerbStatus, in: intent()},
		{name: "status of another repository's cluster", verb: clusterops.VerbStatus,
			in: intent(func(in *clusterops.Intent) { in.Repository = "acme/web" }), facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseCollision},
		{name: "cost of a rolled-back state", verb: clusterops.VerbCost, in: intent(func(in *clusterops.Intent) { in.Witness = 8 }),
			facts: doc(lifecycle.PhaseReady), refuse: lifecycle.RefuseRollback},
		{name: "kubeconfig of no cluster", verb: clusterops.VerbKubeconfig, in: intent(), refuse: lifecycle.RefuseNoCluster},
		{name: "status of a paused cluster checks no node", verb: clusterops.VerbStatus, in: intent(func(in *clusterops.Intent) { in.Health = true }),
			facts: doc(lifecycle.PhasePaused),
			check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Health {
					t.Error("a paused cluster's status checks its APIs")
				}
			}},
	}
}

// decidedElsewhere are the refusal kinds Decide does not decide, and the tests that hold them.
var decidedElsewhere = map[lifecycle.Kind]string{
	lifecycle.RefuseLocked:     "the lock's wait (TestBusyLockIsRefusedNamingItsHolder)",
	lifecycle.RefusePermission: "commands.Allowed (internal/commands, TestPolicy)",
	lifecycle.RefuseParse:      "commands.Parse (internal/commands, the parser's tests and fuzz)",
}

func TestDecide(t *testing.T) {
	covered := map[lifecycle.Kind]bool{}
	for _, tc := range decisionCases() {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			d := clusterops.Decide(tc.verb, tc.in, tc.facts, now)
			var got lifecycle.Kind
			if d.Refusal != nil {
				got = d.Refusal.Kind
			}
			if got != tc.refuse {
				t.Fatalf("refusal %q (%v), want %q", got, d.Refusal, tc.refuse)
			}
			covered[got] = true
			switch {
			case tc.err == "" && d.Err != nil:
				t.Fatalf("failed: %v", d.Err)
			case tc.err != "" && (d.Err == nil || !strings.Contains(d.Err.Error(), tc.err)):
				t.Fatalf("failure %v, want one naming %q", d.Err, tc.err)
			}
			if tc.refuse == "" && d.Need != tc.need {
				t.Fatalf("needs %b, want %b", d.Need, tc.need)
			}
			if want := cmpVerb(tc.does, tc.verb); d.Verb != want {
				t.Errorf("does %s, want %s", d.Verb, want)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
	for _, k := range lifecycle.Kinds() {
		if !covered[k] && decidedElsewhere[k] == "" {
			t.Errorf("no case of the decision's table refuses %q", k)
		}
	}
}

func cmpVerb(v, or clusterops.Verb) clusterops.Verb {
	if v == "" {
		return or
	}
	return v
}

// Decide is the same decision for the same facts: it reads no clock of its own and changes none
// of its inputs.
func TestDecideIsPure(t *testing.T) {
	for _, tc := range decisionCases() {
		f := tc.facts
		var labels map[string]string
		if f.Doc != nil {
			clusterops.Meta{WarnedFor: t0}.Into(&f.Doc.Header)
			labels = map[string]string{}
			for k, v := range f.Doc.Header.Labels {
				labels[k] = v
			}
		}
		a := clusterops.Decide(tc.verb, tc.in, f, t0.Add(9*time.Hour))
		b := clusterops.Decide(tc.verb, tc.in, f, t0.Add(9*time.Hour))
		if a.Verb != b.Verb || a.Need != b.Need || (a.Refusal == nil) != (b.Refusal == nil) || a.Plan.Header.Expires != b.Plan.Header.Expires {
			t.Errorf("%s: two decisions on the same facts differ: %+v / %+v", tc.name, a, b)
		}
		if f.Doc != nil {
			for k, v := range labels {
				if f.Doc.Header.Labels[k] != v {
					t.Errorf("%s: the decision changed the document's label %s", tc.name, k)
				}
			}
		}
	}
}
