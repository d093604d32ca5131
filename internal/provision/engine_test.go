package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeCloud is an in-memory world of tagged resources, enough to exercise the engine's
// find-by-tag / record / resume / destroy / sweep logic without any API.
type fakeCloud struct {
	mu       sync.Mutex
	next     int
	live     map[string][]string // id -> tags
	creates  map[string]int      // node -> creates
	order    []string            // destroy order
	failOnce map[string]error    // node -> error returned once by Apply
}

func newFakeCloud() *fakeCloud {
	return &fakeCloud{live: map[string][]string{}, creates: map[string]int{}, failOnce: map[string]error{}}
}

func (c *fakeCloud) node(name string, needs ...string) Node {
	return Node{
		Name: name, Kind: "fake", Needs: needs,
		Apply: func(ctx context.Context, r *Run) error {
			c.mu.Lock()
			if err, ok := c.failOnce[name]; ok {
				delete(c.failOnce, name)
				c.mu.Unlock()
				return err
			}
			// find: record first, then the exact tags.
			if rec, ok := r.Resource(name); ok {
				if _, live := c.live[rec.ID]; live {
					c.mu.Unlock()
					return nil
				}
			}
			for id, tags := range c.live {
				if HasTag(tags, ClusterTag(r.ClusterID())) && HasTag(tags, ResTag(name)) {
					c.mu.Unlock()
					return r.Record(ctx, name, Record{Kind: "fake", ID: id, Status: "ready"})
				}
			}
			c.next++
			id := fmt.Sprintf("id-%d", c.next)
			c.live[id] = r.Tags(name)
			c.creates[name]++
			c.mu.Unlock()
			return r.Record(ctx, name, Record{Kind: "fake", ID: id, Status: "ready"})
		},
		Destroy: func(ctx context.Context, r *Run) error {
			rec, ok := r.Resource(name)
			c.mu.Lock()
			defer c.mu.Unlock()
			c.order = append(c.order, name)
			if ok {
				if _, live := c.live[rec.ID]; live {
					delete(c.live, rec.ID)
					r.Deleted("fake", rec.ID, name)
				}
			}
			return nil
		},
	}
}

func (c *fakeCloud) sweeper() Sweeper {
	return Sweeper{Name: "fake", Sweep: func(ctx context.Context, r *Run) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		for id, tags := range c.live {
			if OwnedBy(tags, r.ClusterID()) {
				delete(c.live, id)
				r.Deleted("fake", id, "")
			}
		}
		return nil
	}}
}

func (c *fakeCloud) graph(t *testing.T) *Graph {
	t.Helper()
	g := NewGraph()
	for _, n := range []Node{
		c.node("key"), c.node("ip-0"), c.node("ip-1"), c.node("sg", "ip-0", "ip-1"),
		c.node("vol-0"), c.node("srv-0", "vol-0", "sg", "ip-0"), c.node("srv-1", "sg", "ip-1"),
		c.node("em", "key"),
	} {
		if err := g.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	g.AddSweeper(c.sweeper())
	return g
}

func testEngine(p Progress) *Engine {
	return New(Options{PollInterval: time.Millisecond, StepTimeout: 5 * time.Second, Progress: p})
}

func newTestState(t *testing.T, id string) *State {
	t.Helper()
	spec := DefaultSpec()
	spec.ImageBucket = "images"
	st, err := NewState(id, spec)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestUpTwiceNoChangeAndDownEmpties(t *testing.T) {
	ctx := t.Context()
	c := newFakeCloud()
	g := c.graph(t)
	saver := NewMemorySaver()
	st := newTestState(t, "acme-1")
	e := testEngine(nil)
	if err := e.Up(ctx, g, st, saver); err != nil {
		t.Fatal(err)
	}
	if err := e.Up(ctx, g, st, saver); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Names() {
		if c.creates[n] != 1 {
			t.Errorf("node %s created %d times, want 1", n, c.creates[n])
		}
	}
	saved, _ := saver.Last()
	if len(saved.Resources) != len(g.Names()) {
		t.Errorf("saved %d records, want %d", len(saved.Resources), len(g.Names()))
	}
	rep, err := e.Down(ctx, g, st, saver)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Deleted) != len(g.Names()) || len(c.live) != 0 {
		t.Errorf("deleted %d, live %d", len(rep.Deleted), len(c.live))
	}
	// reverse order: every dependent destroyed before what it needs.
	pos := map[string]int{}
	for i, n := range c.order {
		pos[n] = i
	}
	for _, name := range g.Names() {
		n, _ := g.Node(name)
		for _, need := range n.Needs {
			if pos[name] > pos[need] {
				t.Errorf("destroyed %s (needed by %s) before %s", need, name, name)
			}
		}
	}
	if saved, _ := saver.Last(); len(saved.Resources) != 0 {
		t.Errorf("records left after down: %v", saved.Resources)
	}
}

// failingSaver fails every save after the first n, simulating a crash at that step.
type failingSaver struct {
	*MemorySaver
	n     int
	count atomic.Int32
}

func (f *failingSaver) Save(ctx context.Context, st *State) error {
	if int(f.count.Add(1)) > f.n {
		return errors.New("injected crash")
	}
	return f.MemorySaver.Save(ctx, st)
}

func TestCrashAtEveryStepThenResume(t *testing.T) {
	ctx := t.Context()
	// count the saves of a clean run.
	c0 := newFakeCloud()
	ms := NewMemorySaver()
	if err := testEngine(nil).Up(ctx, c0.graph(t), newTestState(t, "x"), ms); err != nil {
		t.Fatal(err)
	}
	_, total := ms.Last()
	for k := 0; k < total; k++ {
		t.Run(fmt.Sprintf("crash-after-save-%d", k), func(t *testing.T) {
			c := newFakeCloud()
			g := c.graph(t)
			fs := &failingSaver{MemorySaver: NewMemorySaver(), n: k}
			if err := testEngine(nil).Up(ctx, g, newTestState(t, "x"), fs); err == nil {
				t.Fatal("up with a crashing saver succeeded")
			}
			// resume from the last persisted state (or a fresh one when nothing was saved).
			st, _ := fs.Last()
			if st == nil {
				st = newTestState(t, "x")
			}
			ms := NewMemorySaver()
			if err := testEngine(nil).Up(ctx, g, st, ms); err != nil {
				t.Fatal(err)
			}
			for _, n := range g.Names() {
				if c.creates[n] != 1 {
					t.Errorf("node %s created %d times after resume", n, c.creates[n])
				}
			}
			if _, err := testEngine(nil).Down(ctx, g, st, ms); err != nil || len(c.live) != 0 {
				t.Errorf("down: err=%v live=%d", err, len(c.live))
			}
		})
	}
}

func TestTransientRetriedPermanentStops(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name    string
		err     error
		wantErr string
	}{
		{"transient then ok", Transient(errors.New("503"), 0), ""},
		{"transient retry-after", Transient(errors.New("429"), 5*time.Millisecond), ""},
		{"permanent", errors.New(`create security group "poc-x-sg": quota exceeded`), "quota exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeCloud()
			c.failOnce["sg"] = tt.err
			var events []Event
			var mu sync.Mutex
			e := testEngine(ProgressFunc(func(ev Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }))
			err := e.Up(ctx, c.graph(t), newTestState(t, "x"), NewMemorySaver())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "sg") {
				t.Fatalf("err = %v, want it to name sg and %q", err, tt.wantErr)
			}
			if c.creates["sg"] != 0 || c.creates["srv-0"] != 0 {
				t.Errorf("created after a permanent failure: %v", c.creates)
			}
			var skipped, failed int
			for _, ev := range events {
				switch ev.Phase {
				case PhaseSkipped:
					skipped++
				case PhaseFailed:
					failed++
				}
			}
			if failed != 1 || skipped < 2 {
				t.Errorf("failed=%d skipped=%d events, want 1 and >=2", failed, skipped)
			}
		})
	}
}

func TestCancelBetweenSteps(t *testing.T) {
	ctx := t.Context()
	c := newFakeCloud()
	g := c.graph(t)
	ms := NewMemorySaver()
	// the "sg" step asks for a cancel as a concurrent down would: nothing after it starts.
	n, _ := g.Node("sg")
	g2 := NewGraph()
	for _, name := range g.Names() {
		m, _ := g.Node(name)
		if name == "sg" {
			inner := n.Apply
			m.Apply = func(ctx context.Context, r *Run) error { ms.RequestCancel(); return inner(ctx, r) }
		}
		if err := g2.Add(m); err != nil {
			t.Fatal(err)
		}
	}
	err := testEngine(nil).Up(ctx, g2, newTestState(t, "x"), ms)
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	if c.creates["srv-0"] != 0 || c.creates["srv-1"] != 0 {
		t.Errorf("servers created after cancel: %v", c.creates)
	}
}

// Four independent nodes run at once: each waits, within its step's deadline, until all four have
// started, so an engine that ran them one by one would leave the first waiting alone. No wall-clock
// bound (it failed at 170 ms for 150 under load): speed is for the benchmarks.
func TestParallelism(t *testing.T) {
	g := NewGraph()
	var started atomic.Int32
	all := make(chan struct{})
	for i := range 4 {
		g.Add(Node{Name: fmt.Sprint("n", i), Apply: func(ctx context.Context, r *Run) error {
			if started.Add(1) == 4 {
				close(all)
			}
			select {
			case <-all:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("n%d waited for the other nodes until its step deadline with %d of 4 started: independent nodes did not run at once: %w", i, started.Load(), ctx.Err())
			}
		}})
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := testEngine(nil).Up(ctx, g, newTestState(t, "p"), nil); err != nil {
		t.Fatal(err)
	}
	if n := started.Load(); n != 4 {
		t.Errorf("%d of 4 nodes started", n)
	}
}

func TestGraphValidate(t *testing.T) {
	ok := func(ctx context.Context, r *Run) error { return nil }
	tests := []struct {
		name  string
		nodes []Node
		want  string
	}{
		{"unknown need", []Node{{Name: "a", Needs: []string{"b"}, Apply: ok}}, "not in the graph"},
		{"cycle", []Node{{Name: "a", Needs: []string{"b"}, Apply: ok}, {Name: "b", Needs: []string{"a"}, Apply: ok}}, "cycle"},
		{"fine", []Node{{Name: "a", Apply: ok}, {Name: "b", Needs: []string{"a"}, Apply: ok}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGraph()
			for _, n := range tt.nodes {
				if err := g.Add(n); err != nil {
					t.Fatal(err)
				}
			}
			err := g.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
	g := NewGraph()
	if err := g.Add(Node{Name: "a", Apply: ok}); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(Node{Name: "a", Apply: ok}); err == nil {
		t.Error("duplicate node accepted")
	}
}

func TestCriticalPath(t *testing.T) {
	ok := func(ctx context.Context, r *Run) error { return nil }
	g := NewGraph()
	g.Add(Node{Name: "img", Apply: ok})
	g.Add(Node{Name: "vol", Needs: []string{"img"}, Apply: ok})
	g.Add(Node{Name: "em", Apply: ok})
	g.Add(Node{Name: "boot", Needs: []string{"vol", "em"}, Apply: ok})
	d := map[string]time.Duration{"img": 200, "vol": 5, "em": 100, "boot": 10}
	if got := g.CriticalPath(func(n string) time.Duration { return d[n] }); got != 215 {
		t.Errorf("CriticalPath = %v, want 215", got)
	}
	var chain []string
	for _, s := range g.CriticalChain(func(n string) time.Duration { return d[n] }) {
		chain = append(chain, fmt.Sprintf("%s %v@%v", s.Node, int64(s.Wait), int64(s.Finish)))
	}
	if got, want := strings.Join(chain, " → "), "img 200@200 → vol 5@205 → boot 10@215"; got != want {
		t.Errorf("CriticalChain = %s, want %s", got, want)
	}
	d["em"] = 300 // the worker's delivery now leads
	if got := g.CriticalChain(func(n string) time.Duration { return d[n] }); len(got) != 2 || got[0].Node != "em" || got[1].Finish != 310 {
		t.Errorf("CriticalChain with em 300 = %+v, want em then boot at 310", got)
	}
	if got := NewGraph().CriticalChain(func(string) time.Duration { return 1 }); got != nil {
		t.Errorf("CriticalChain of an empty graph = %+v, want none", got)
	}
}

// A cancel request stops the launches; a step already running that waits for the work of a step
// that will now never start (the worker's trust waits for the bootstrap) must not wait out its
// whole timeout holding the cluster's lock while the down that asked for the cancel waits for
// that lock. Found by the soak (seed 2413725338745003662 replayed 16 at once): an up's
// worker-config waited for a bootstrap never launched until the run was killed, 2 minutes later.
func TestCancelCutsStepsWaitingForUnlaunchedSteps(t *testing.T) {
	ms := NewMemorySaver()
	bootstrapped := make(chan struct{})
	waiterErr := make(chan error, 1)
	g := NewGraph()
	for _, n := range []Node{
		// Long enough that only the cancel can end it within the test's guard below.
		{Name: "worker-config", Timeout: 10 * time.Minute, Apply: func(ctx context.Context, r *Run) error {
			select {
			case <-bootstrapped:
				return nil
			case <-ctx.Done():
				err := context.Cause(ctx)
				waiterErr <- err
				return err
			}
		}},
		{Name: "poweron", Apply: func(ctx context.Context, r *Run) error { ms.RequestCancel(); return nil }},
		{Name: "bootstrap", Needs: []string{"poweron"}, Apply: func(ctx context.Context, r *Run) error {
			close(bootstrapped)
			return nil
		}},
	} {
		if err := g.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- testEngine(nil).Up(t.Context(), g, newTestState(t, "x"), ms) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("err = %v, want ErrCancelled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Up still running 30 s after the cancel: the step in flight waits for a step the cancel keeps from starting")
	}
	select {
	case err := <-waiterErr:
		if !errors.Is(err, ErrCancelled) {
			t.Errorf("the waiting step ended with %v, want its context cut with ErrCancelled", err)
		}
	default:
		t.Error("the waiting step returned without its context ending: the bootstrap ran after the cancel")
	}
}

// countingSaver counts the saves and fails those it is told to.
type countingSaver struct {
	saves int
	fail  bool
}

func (c *countingSaver) Save(context.Context, *State) error {
	c.saves++
	if c.fail {
		return errors.New("bucket unavailable")
	}
	return nil
}

// A value already saved is not saved again (a resume sets the talosconfig, the endpoint, the
// image's figures as they were: each save is a state write on the critical path), several
// values set together are one save, and after a failed save the same value is saved again.
func TestSettersSaveOnlyWhatChanged(t *testing.T) {
	st, err := NewState("c", Spec{})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingSaver{}
	r := New(Options{}).newRun(st, cs)
	ctx := t.Context()
	steps := []struct {
		what  string
		do    func() error
		saves int
	}{
		{"a new output", func() error { return r.SetOutput(ctx, "endpoint", "https://a") }, 1},
		{"the same output", func() error { return r.SetOutput(ctx, "endpoint", "https://a") }, 1},
		{"a new secret", func() error { return r.SetSecret(ctx, "k", []byte("v")) }, 2},
		{"the same secret", func() error { return r.SetSecret(ctx, "k", []byte("v")) }, 2},
		{"a nil secret where none was (present, empty)", func() error { return r.SetSecret(ctx, "ud", nil) }, 3},
		{"the same trigger twice", func() error {
			_ = r.SetTrigger(ctx, "n", "h")
			return r.SetTrigger(ctx, "n", "h")
		}, 4},
		{"three values together", func() error {
			return r.Set(ctx, map[string][]byte{"k": []byte("w"), "k2": []byte("x")}, map[string]string{"endpoint": "https://b"})
		}, 5},
		{"the same three again", func() error {
			return r.Set(ctx, map[string][]byte{"k": []byte("w"), "k2": []byte("x")}, map[string]string{"endpoint": "https://b"})
		}, 5},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if cs.saves != s.saves {
			t.Fatalf("after %s: %d saves, want %d", s.what, cs.saves, s.saves)
		}
	}
	if v, ok := r.Secret("ud"); !ok || v != nil {
		t.Errorf("nil secret: %q %v, want present and empty", v, ok)
	}
	cs.fail = true
	if err := r.SetOutput(ctx, "endpoint", "https://c"); err == nil {
		t.Fatal("a failed save was not reported")
	}
	cs.fail = false
	if err := r.SetOutput(ctx, "endpoint", "https://c"); err != nil || cs.saves != 7 {
		t.Fatalf("the same value after a failed save: %v, %d saves, want it saved (7)", err, cs.saves)
	}
}
