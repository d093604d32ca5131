package clusterops_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The operations on a counted store with do-nothing graphs (fake_test.go): what they read, lock
// and write, who hears what and when. No world: these questions are clusterops' own.

// opCase is one operation the counting store holds to one read of its document and at most one
// cluster lock.
type opCase struct {
	name  string
	verb  clusterops.Verb
	in    func(*clusterops.Intent)
	phase clusterops.Phase // the document before it; "" none
	now   time.Time        // the Ops' clock; zero: time.Now
	lock  int              // cluster locks it takes
	does  clusterops.Verb  // what it did ("" the verb)
	// refuse: the refusal it ends with ("" none); a refused operation writes nothing.
	refuse lifecycle.Kind
}

// inWindow is 21:00 UTC today: inside the nightly pause window; noon is outside.
func inWindow() time.Time { return today(21) }

func noon() time.Time { return today(12) }

func today(hour int) time.Time {
	n := time.Now().UTC()
	return time.Date(n.Year(), n.Month(), n.Day(), hour, 0, 0, 0, time.UTC)
}

func TestEveryOperationReadsOnceAndLocksOnce(t *testing.T) {
	ready, paused := lifecycle.PhaseReady, lifecycle.PhasePaused
	extend := func(in *clusterops.Intent) { in.ExtendBy = time.Hour }
	for _, tc := range []opCase{
		{name: "up of a new cluster", verb: clusterops.VerbUp, lock: 1},
		{name: "up of a ready cluster", verb: clusterops.VerbUp, phase: ready, lock: 1},
		{name: "dry up", verb: clusterops.VerbUp, in: func(in *clusterops.Intent) { in.DryRun = true }, phase: ready},
		{name: "up on a closed issue", verb: clusterops.VerbUp, in: func(in *clusterops.Intent) { in.Closed = true }, phase: ready, lock: 1,
			refuse: lifecycle.RefuseClosed},
		{name: "resume", verb: clusterops.VerbResume, phase: paused, lock: 1},
		{name: "resume inside the pause window", verb: clusterops.VerbResume, in: nightly, phase: paused, now: inWindow(), lock: 1},
		{name: "resume of a ready cluster", verb: clusterops.VerbResume, phase: ready, lock: 1, refuse: lifecycle.RefuseNotPaused},
		{name: "up inside the pause window wakes it", verb: clusterops.VerbUp, in: nightly, phase: paused, now: inWindow(), lock: 1,
			does: clusterops.VerbResume},
		{name: "extend inside the pause window wakes it", verb: clusterops.VerbExtend, in: func(in *clusterops.Intent) { nightly(in); extend(in) },
			phase: paused, now: inWindow(), lock: 1, does: clusterops.VerbResume},
		{name: "kubeconfig inside the pause window wakes it", verb: clusterops.VerbKubeconfig, in: nightly, phase: paused, now: inWindow(), lock: 1,
			does: clusterops.VerbResume},
		{name: "down", verb: clusterops.VerbDown, phase: ready, lock: 1},
		{name: "down of no cluster", verb: clusterops.VerbDown, lock: 1},
		{name: "the schedule's teardown", verb: clusterops.VerbDown, phase: ready, lock: 1,
			in: func(in *clusterops.Intent) {
				in.NoCancel, in.Precondition.ExpiredAt = true, time.Now().Add(24*time.Hour)
			}},
		{name: "pause", verb: clusterops.VerbPause, phase: ready, lock: 1},
		{name: "pause of a paused cluster", verb: clusterops.VerbPause, phase: paused, lock: 1},
		{name: "pause of a provisioning cluster", verb: clusterops.VerbPause, phase: lifecycle.PhaseProvisioning, lock: 1,
			refuse: lifecycle.RefuseNotReady},
		{name: "the schedule's pause", verb: clusterops.VerbPause, phase: ready, lock: 1,
			in: func(in *clusterops.Intent) {
				in.Precondition = clusterops.Precondition{Phase: ready, AsleepAt: time.Now()}
			}},
		{name: "extend", verb: clusterops.VerbExtend, in: extend, phase: ready, lock: 1},
		{name: "extend beyond max_ttl", verb: clusterops.VerbExtend, in: func(in *clusterops.Intent) { in.ExtendBy = 30 * 24 * time.Hour },
			phase: ready, lock: 1, refuse: lifecycle.RefuseMaxTTL},
		{name: "keep", verb: clusterops.VerbKeep, in: func(in *clusterops.Intent) { keep := true; in.Keep = &keep }, phase: ready, lock: 1},
		{name: "status", verb: clusterops.VerbStatus, phase: ready},
		{name: "status of another issue's cluster", verb: clusterops.VerbStatus, in: func(in *clusterops.Intent) { in.Number = 1 }, phase: ready,
			refuse: lifecycle.RefuseCollision},
		{name: "cost", verb: clusterops.VerbCost, phase: paused},
		{name: "kubeconfig", verb: clusterops.VerbKubeconfig, phase: ready},
		{name: "kubeconfig outside the window of a paused cluster", verb: clusterops.VerbKubeconfig, in: nightly, phase: paused, now: noon()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			if !tc.now.IsZero() {
				f.ops.Now = func() time.Time { return tc.now }
			}
			in := intent()
			if tc.in != nil {
				tc.in(&in)
			}
			var before int64
			if tc.phase != "" {
				f.put(t, intent(), tc.phase)
				if _, err := f.ops.Store.PutArtifact(t.Context(), in.Cluster, "kubeconfig", []byte("kind: Config")); err != nil {
					t.Fatal(err)
				}
				doc, err := f.store.Get(t.Context(), in.Cluster)
				if err != nil {
					t.Fatal(err)
				}
				before = doc.Header.Serial
			}
			f.count.Reset()
			out, err := f.ops.Run(t.Context(), tc.verb, in, nil)
			var got lifecycle.Kind
			if out != nil && out.Refusal != nil {
				got = out.Refusal.Kind
			}
			if got != tc.refuse || (tc.refuse == "" && err != nil) {
				t.Fatalf("%s: refusal %q, err %v; want refusal %q", tc.verb, got, err, tc.refuse)
			}
			if want := cmpVerb(tc.does, tc.verb); out.Verb != want {
				t.Errorf("did %s, want %s", out.Verb, want)
			}
			if n := f.count.Reads(in.Cluster); n != 1 {
				t.Errorf("read the document %d times, want once", n)
			}
			if n := f.count.Locks(statestore.ClusterLock(in.Cluster)); n != tc.lock {
				t.Errorf("took the cluster's lock %d times, want %d", n, tc.lock)
			}
			if held := f.count.AnyHeld(); held != "" {
				t.Errorf("%s still held after the operation", held)
			}
			if tc.refuse != "" && tc.phase != "" {
				doc, err := f.store.Get(t.Context(), in.Cluster)
				if err != nil || doc.Header.Serial != before {
					t.Errorf("a refused %s wrote the document (serial %d → %v, %v)", tc.verb, before, doc, err)
				}
			}
		})
	}
}

// observer is a clusterops.Observer that holds the test to the observer's contract: it is never
// called on a goroutine that holds a lock, and nothing under a lock waits for it (every call
// blocks until no lock is held: work that waited for it would never release its lock).
type observer struct {
	t        *testing.T
	f        *fake
	mu       sync.Mutex
	admitted []clusterops.Outcome
	steps    []string
}

func (o *observer) check(what string) {
	if held := o.f.count.HeldHere(); len(held) > 0 {
		o.t.Errorf("the observer's %s was called on the goroutine that holds %v", what, held)
	}
	deadline := time.Now().Add(30 * time.Second)
	for o.f.count.AnyHeld() != "" {
		if time.Now().After(deadline) {
			o.t.Errorf("the observer's %s waited 30 s for %s to be released: the work under it waits for the observer", what, o.f.count.AnyHeld())
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (o *observer) Admitted(out clusterops.Outcome) {
	o.check("Admitted")
	o.mu.Lock()
	defer o.mu.Unlock()
	o.admitted = append(o.admitted, out)
}

func (o *observer) Step(e provision.Event) {
	o.check("Step")
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, e.Step+" "+string(e.Phase))
}

// TestObserverIsNeverCalledUnderALock: an up of a new cluster under a budget (the admission lock,
// then the cluster's), a pause and a down, each heard by an observer that fails when it is called
// on a goroutine holding a lock and blocks while any lock is held. Every operation still ends, and
// the observer hears, in order, the admission and every step. Before, Started (the status
// comment's creation, two or three GitHub calls) ran under the admission lock.
func TestObserverIsNeverCalledUnderALock(t *testing.T) {
	f := newFake(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	in := intent()
	for _, verb := range []clusterops.Verb{clusterops.VerbUp, clusterops.VerbPause, clusterops.VerbDown} {
		obs := &observer{t: t, f: f}
		out, err := f.ops.Run(ctx, verb, in, obs)
		if err != nil || out.Refusal != nil {
			t.Fatalf("%s: %+v %v", verb, out, err)
		}
		if len(obs.admitted) != 1 || obs.admitted[0].Verb != verb {
			t.Errorf("%s: the observer heard %d admissions (%+v), want one of %s", verb, len(obs.admitted), obs.admitted, verb)
		}
		if !slices.ContainsFunc(obs.steps, func(s string) bool { return strings.HasSuffix(s, "machines done") }) {
			t.Errorf("%s: the observer heard the steps %v, without the machines' end", verb, obs.steps)
		}
	}
}

// The admission the observer hears is the header's first write: with the status comment's id and
// the daily cost, as the next admission of the repository reads them.
func TestAdmittedHeaderIsTheFirstWrite(t *testing.T) {
	f := newFake(t)
	obs := &observer{t: t, f: f}
	in := intent(func(in *clusterops.Intent) { in.StatusComment = 4242 })
	if _, err := f.ops.Run(t.Context(), clusterops.VerbUp, in, obs); err != nil {
		t.Fatal(err)
	}
	if len(obs.admitted) != 1 {
		t.Fatalf("admissions %d", len(obs.admitted))
	}
	a := obs.admitted[0]
	m, _ := clusterops.MetaOf(a.Header)
	if a.Header.Serial != 1 || a.Header.Phase != string(lifecycle.PhaseProvisioning) || m.StickyID != 4242 || m.DailyCostNanos == 0 || !a.Created {
		t.Errorf("admitted header %+v meta %+v: want serial 1, provisioning, status comment 4242, a daily cost, created", a.Header, m)
	}
}

// TestBusyLockIsRefusedNamingItsHolder: a lock held past the wait is the refusal "locked", naming
// its holder and the wait, and nothing is read or written.
func TestBusyLockIsRefusedNamingItsHolder(t *testing.T) {
	f := newFake(t)
	in := intent()
	f.put(t, in, lifecycle.PhaseReady)
	l, err := f.store.Lock(t.Context(), in.Cluster, statestore.LockInfo{Actor: "bob", Command: "/poc up", RunID: "77"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(t.Context())
	f.count.Reset()
	for _, verb := range []clusterops.Verb{clusterops.VerbUp, clusterops.VerbExtend, clusterops.VerbPause} {
		out, err := f.ops.Run(t.Context(), verb, in, nil)
		if out.Refusal == nil || out.Refusal.Kind != lifecycle.RefuseLocked || !errors.Is(err, statestore.ErrLocked) {
			t.Fatalf("%s on a held lock: %+v %v, want refused locked", verb, out.Refusal, err)
		}
		if r := out.Refusal; r.Holder.Actor != "bob" || r.Holder.RunID != "77" || r.Waited != f.ops.LockWaitBound() {
			t.Errorf("%s: refusal names %+v after %s", verb, r.Holder, r.Waited)
		}
	}
	if n := f.count.Reads(in.Cluster); n != 0 {
		t.Errorf("refused operations read the document %d times", n)
	}
}

// Two resumes at once in a repository whose budget has room for one running cluster beside a
// paused one: the second, started once the first is admitted (its observer hears it), is refused
// by the budget. The resume passes the budget under the repository's admission lock and records
// its running cost in that lock's write. (Before, the check ran outside the lock and the resuming
// cluster kept its paused price until ready.)
func TestConcurrentResumesPassTheBudgetOneAtATime(t *testing.T) {
	f := newFake(t)
	f.Gate = make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	budget := func(in *clusterops.Intent) { in.Bounds.MaxClusters, in.Bounds.MaxDailyNanoEUR = 5, 5_000_000_000 }
	first := intent(budget, func(in *clusterops.Intent) { in.Cluster, in.Number = "acme-shop-1", 1 })
	second := intent(budget, func(in *clusterops.Intent) { in.Cluster, in.Number = "acme-shop-2", 2 })
	for _, in := range []clusterops.Intent{first, second} {
		f.put(t, in, lifecycle.PhasePaused)
	}
	secondDone := make(chan *clusterops.Outcome, 1)
	obs := admittedFunc(func(clusterops.Outcome) {
		go func() {
			out, _ := f.ops.Run(ctx, clusterops.VerbResume, second, nil)
			secondDone <- out
			close(f.Gate)
		}()
	})
	out, err := f.ops.Run(ctx, clusterops.VerbResume, first, obs)
	if err != nil || out.Phase != lifecycle.PhaseReady {
		t.Fatalf("first resume: %+v %v", out, err)
	}
	if r := (<-secondDone).Refusal; r == nil || r.Kind != lifecycle.RefuseBudget {
		t.Fatalf("the second resume, with the first one running: %+v, want refused by the budget", r)
	}
	if doc, err := f.store.Get(ctx, second.Cluster); err != nil || doc.Header.Phase != string(lifecycle.PhasePaused) {
		t.Fatalf("after its refused resume, %s: %+v %v", second.Cluster, doc, err)
	}
}

// admittedFunc is an observer that hears the admission only.
type admittedFunc func(clusterops.Outcome)

func (a admittedFunc) Admitted(o clusterops.Outcome) { a(o) }
func (admittedFunc) Step(provision.Event)            {}

// Eight ups of new clusters at once under max_clusters 2: two are admitted, the others refused by
// the budget, whatever the interleaving.
func TestConcurrentUpsPassTheBudgetOneAtATime(t *testing.T) {
	f := newFake(t)
	f.ops.LockWait = 30 * time.Second
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		in := intent(func(in *clusterops.Intent) {
			in.Cluster, in.Number, in.Bounds.MaxClusters = "acme-shop-"+string(rune('a'+i)), 100+i, 2
		})
		wg.Go(func() {
			out, err := f.ops.Run(t.Context(), clusterops.VerbUp, in, nil)
			switch {
			case out.Refusal != nil && out.Refusal.Kind == lifecycle.RefuseBudget:
				refused.Add(1)
			case err == nil:
				admitted.Add(1)
			default:
				t.Errorf("up %s: %v", in.Cluster, err)
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 2 || refused.Load() != 6 {
		t.Errorf("%d admitted, %d refused by the budget; want 2 and 6", admitted.Load(), refused.Load())
	}
}

// Extend writes the header once (the new expiry and the re-armed warning in one write), and a
// refused extend writes nothing; a warning mark of the old expiry is cleared.
func TestExtendWritesTheHeaderOnce(t *testing.T) {
	f := newFake(t)
	in := intent()
	f.put(t, in, lifecycle.PhaseReady)
	doc, err := f.store.Get(t.Context(), in.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	clusterops.Meta{WarnedFor: doc.Header.Expires}.Into(&doc.Header)
	if err := f.store.Put(t.Context(), doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		by      time.Duration
		refusal lifecycle.Kind
		writes  int64
	}{{4 * time.Hour, "", 1}, {30 * 24 * time.Hour, lifecycle.RefuseMaxTTL, 0}} {
		before, _ := f.store.Get(t.Context(), in.Cluster)
		in.ExtendBy = tc.by
		out, err := f.ops.Run(t.Context(), clusterops.VerbExtend, in, nil)
		if got := kindOf(out); got != tc.refusal || (got == "" && err != nil) {
			t.Fatalf("extend by %s: refusal %q, err %v; want %q", tc.by, got, err, tc.refusal)
		}
		after, _ := f.store.Get(t.Context(), in.Cluster)
		if writes := after.Header.Serial - before.Header.Serial; writes != tc.writes {
			t.Errorf("extend by %s wrote the header %d times, want %d", tc.by, writes, tc.writes)
		}
		if tc.refusal != "" {
			continue
		}
		if want := before.Header.Expires.Add(tc.by); !after.Header.Expires.Equal(want) {
			t.Errorf("expires %s, want %s", after.Header.Expires, want)
		}
		if m, err := clusterops.MetaOf(after.Header); err != nil || !m.WarnedFor.IsZero() {
			t.Errorf("meta after extend %+v (%v): want the warning re-armed", m, err)
		}
	}
}

func kindOf(out *clusterops.Outcome) lifecycle.Kind {
	if out == nil || out.Refusal == nil {
		return ""
	}
	return out.Refusal.Kind
}

// TestDownThatCannotTakeOverTakesBackItsCancel: a down that asked the lock holder to stop but
// never got the lock leaves no cancel request behind (the up would stop for nothing), and a down
// with NoCancel (the reaper's) asks nothing at all.
func TestDownThatCannotTakeOverTakesBackItsCancel(t *testing.T) {
	f := newFake(t)
	f.ops.LockWait, f.ops.CancelWait = 300*time.Millisecond, 300*time.Millisecond
	in := intent()
	l, err := f.store.Lock(t.Context(), in.Cluster, statestore.LockInfo{Actor: "alice", Command: "up"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(t.Context())
	for _, noCancel := range []bool{false, true} {
		in.NoCancel = noCancel
		_, err := f.ops.Run(t.Context(), clusterops.VerbDown, in, nil)
		if !errors.Is(err, statestore.ErrLocked) {
			t.Fatalf("down (NoCancel=%v) on a held lock: %v, want ErrLocked", noCancel, err)
		}
		if _, err := f.store.GetArtifact(t.Context(), in.Cluster, "cancel"); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("down (NoCancel=%v) left a cancel request: %v", noCancel, err)
		}
	}
}

// TestUpStopsWhenItsLockIsTakenOver: a run whose lease lapsed and was taken over stops instead of
// going on without the lock, and says which lock it lost.
func TestUpStopsWhenItsLockIsTakenOver(t *testing.T) {
	f := newFake(t)
	f.Gate = make(chan struct{}) // never opened: the up waits in its machines step
	f.ops.LockLease = 900 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	in := intent()
	errs := make(chan error, 1)
	go func() {
		_, err := f.ops.Run(ctx, clusterops.VerbUp, in, nil)
		errs <- err
	}()
	select {
	case <-f.Started:
	case <-ctx.Done():
		t.Fatal("the up never reached its machines")
	}
	holder, err := f.store.ReadLock(ctx, in.Cluster)
	if err != nil || holder == nil {
		t.Fatalf("the up's lock: %+v %v", holder, err)
	}
	if err := f.store.ForceUnlock(ctx, in.Cluster, holder.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Lock(ctx, in.Cluster, statestore.LockInfo{Actor: "intruder", Command: "down"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("up after losing its lock: %v, want an error naming the lost lock", err)
		}
	case <-ctx.Done():
		t.Fatal("up went on after losing its lock")
	}
}

// A dry up decides without the lock and writes nothing; a new cluster's plan lists its graph.
func TestDryUpWritesNothing(t *testing.T) {
	f := newFake(t)
	in := intent(func(in *clusterops.Intent) { in.DryRun = true })
	out, err := f.ops.Run(t.Context(), clusterops.VerbUp, in, nil)
	if err != nil || out.Phase != lifecycle.PhasePlanned || len(out.Plan) != 2 || out.Plan[0].Name != "machines" || out.Quote.Daily.IsZero() {
		t.Fatalf("dry up: %+v %v; want planned, two nodes, priced", out, err)
	}
	if _, err := f.store.Get(t.Context(), in.Cluster); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a dry up wrote a document: %v", err)
	}
	if n := f.count.Locks(statestore.ClusterLock(in.Cluster)); n != 0 {
		t.Errorf("a dry up took the lock %d times", n)
	}
}

// TestUpDownOnScalewayBuckets: up, down and an up again of the same cluster, on a state bucket
// that ignores the conditions of a DeleteObject and on one that rejects them (Scaleway documents
// none; the store relies on none): every lock, document, artifact and deletion an operation makes
// goes through S3 (versitygw in Scaleway's dialect); the graph does nothing. On the old store the
// rejecting bucket failed every release (501) and the backend check refused both.
func TestUpDownOnScalewayBuckets(t *testing.T) {
	for _, mode := range objstore.ScalewayReadings {
		t.Run("delete conditions "+mode.String(), func(t *testing.T) {
			srv := objstoretest.VersityWith(t, objstore.Options{DeleteConditions: mode})
			objstoretest.Bucket(t, srv, "state")
			b, err := srv.OpenBucket(t.Context(), "state")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			f := newFake(t)
			f.store, err = statestore.Open(t.Context(), statestore.Config{StateURL: "s3://state", KeyURL: testKey()}, statestore.WithBucket(b))
			if err != nil {
				t.Fatal(err)
			}
			f.ops.Store = f.store
			ctx := t.Context()
			if err := f.store.CheckBackend(ctx); err != nil {
				t.Fatalf("CheckBackend: %v", err)
			}
			in := intent()
			for round := range 2 {
				if _, err := f.ops.Run(ctx, clusterops.VerbUp, in, nil); err != nil {
					t.Fatalf("up %d: %v", round, err)
				}
				if li, err := f.store.ReadLock(ctx, in.Cluster); li != nil || err != nil {
					t.Fatalf("lock after up: %+v %v, want free", li, err)
				}
				if kc, err := f.ops.Kubeconfig(ctx, in.Cluster); err != nil || len(kc) == 0 {
					t.Fatalf("kubeconfig after up: %v", err)
				}
				if _, err := f.ops.Run(ctx, clusterops.VerbDown, in, nil); err != nil {
					t.Fatalf("down %d: %v", round, err)
				}
				if _, err := f.store.Get(ctx, in.Cluster); !errors.Is(err, statestore.ErrNotFound) {
					t.Fatalf("state after down: %v, want ErrNotFound", err)
				}
				if hs, err := f.store.List(ctx); err != nil || len(hs) != 0 {
					t.Fatalf("List after down: %v %v", hs, err)
				}
			}
		})
	}
}
