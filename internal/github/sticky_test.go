package github

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	simgh "github.com/pocbot/pocbot/internal/sim/github"
)

const marker = "<!-- pocbot:status:acme-web-1 -->"

func TestStickyThrottlesAndLastBodyWins(t *testing.T) {
	t.Parallel()
	w, c, ctx, n := onNewIssue(t)
	s := NewSticky(c, n, marker, 150*time.Millisecond)

	start := time.Now()
	var wg sync.WaitGroup
	for g := range 4 { // progress callbacks from parallel steps
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := s.Update(ctx, fmt.Sprintf("step %d of worker %d", i, g)); err != nil {
					t.Error(err)
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if err := s.Update(ctx, "final"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	cs := w.sim.Comments(testRepo, n)
	if len(cs) != 1 {
		t.Fatalf("%d comments, want one sticky comment", len(cs))
	}
	if cs[0].Body != marker+"\nfinal" {
		t.Fatalf("body %q, want the last one", cs[0].Body)
	}
	// At most one write per interval, plus the first one and the flush.
	maxWrites := int(elapsed/(150*time.Millisecond)) + 2
	if got := s.Writes(); got > maxWrites || got < 2 {
		t.Fatalf("%d writes in %v for 101 updates, want 2..%d", got, elapsed, maxWrites)
	}
	if s.ID() != cs[0].ID || !strings.Contains(s.URL(), fmt.Sprint(cs[0].ID)) {
		t.Fatalf("ID %d URL %q", s.ID(), s.URL())
	}
}

func TestStickyDeferredWriteHappensWithoutFlush(t *testing.T) {
	t.Parallel()
	w, c, ctx, n := onNewIssue(t)
	s := NewSticky(c, n, marker, 50*time.Millisecond)
	if err := s.Update(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, "two"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deferred edit arrives", func() bool {
		cs := w.sim.Comments(testRepo, n)
		return len(cs) == 1 && strings.HasSuffix(cs[0].Body, "two")
	})
}

func TestStickyFindsExistingAndRespectsNewerRun(t *testing.T) {
	t.Parallel()
	w, c, ctx, n := onNewIssue(t)
	w.sim.AddComment(testRepo, n, "alice", "/poc up")

	older := NewSticky(c, n, marker, 0).WithGeneration(100)
	if err := older.Update(ctx, "older run: provisioning"); err != nil {
		t.Fatal(err)
	}
	// A newer run starts in a new process: finds the comment by its marker and takes it over.
	newer := NewSticky(c, n, marker, 0).WithGeneration(200)
	if err := newer.Update(ctx, "newer run: ready"); err != nil {
		t.Fatal(err)
	}
	if newer.ID() != older.ID() {
		t.Fatalf("newer run created comment %d instead of editing %d", newer.ID(), older.ID())
	}
	// The older run wakes up late: it must not overwrite the newer body.
	if err := older.Update(ctx, "older run: failed"); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older run: err = %v, want ErrSuperseded", err)
	}
	if err := older.Update(ctx, "again"); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("older run stays superseded: %v", err)
	}
	cs := w.sim.Comments(testRepo, n)
	if len(cs) != 2 || !strings.Contains(cs[1].Body, "newer run: ready") || !strings.Contains(cs[1].Body, "pocbot-generation: 200") {
		t.Fatalf("comments %+v", cs)
	}
	// A custom rule (commands.ShouldOverwrite) works the same way; an id from the state skips the search.
	before := len(w.sim.Requests())
	custom := NewSticky(c, n, marker, 0).WithCommentID(cs[1].ID).WithOverwriteCheck(func(existing string) bool {
		return !strings.Contains(existing, "ready")
	})
	if err := custom.Update(ctx, "x"); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("custom check: %v", err)
	}
	for _, r := range w.sim.Requests()[before:] {
		if r.Method == "GET" && strings.HasSuffix(r.Path, "/comments") {
			t.Fatalf("listed comments although the id was known: %+v", r)
		}
	}
}

func TestStickyReportsErrors(t *testing.T) {
	t.Parallel()
	w := startWorld(t)
	c := w.mustApp(t, nil)
	ctx := testCtx(t)
	s := NewSticky(c, 4242, marker, 0) // no such issue
	if err := s.Update(ctx, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// commentWrites are the times the stand-in applied a create or an edit of a comment.
func commentWrites(w *world) []time.Time {
	var out []time.Time
	for _, r := range w.sim.Requests() {
		if (r.Method == "POST" || r.Method == "PATCH") && strings.Contains(r.Path, "/comments") && r.Status < 300 {
			out = append(out, r.At)
		}
	}
	return out
}

// TestStickyPace is the editor's guarantee: GitHub applies at most one write of the status
// comment per interval — a deferred edit, an Update that finds the interval over, and the final
// Flush alike — and the last body given is the one that stays.
func TestStickyPace(t *testing.T) {
	t.Parallel()
	const interval = 80 * time.Millisecond
	tests := []struct {
		name    string
		updates func(ctx context.Context, s *Sticky) error
	}{
		{"flush right after a write", func(ctx context.Context, s *Sticky) error {
			if err := s.Update(ctx, "first"); err != nil {
				return err
			}
			return s.Update(ctx, "final")
		}},
		{"a burst from parallel steps", func(ctx context.Context, s *Sticky) error {
			var wg sync.WaitGroup
			errs := make(chan error, 3*40)
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 40 {
						errs <- s.Update(ctx, fmt.Sprintf("worker %d step %d", g, i))
						time.Sleep(3 * time.Millisecond)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					return err
				}
			}
			return s.Update(ctx, "final")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := startWorld(t)
			c := w.mustApp(t, nil)
			ctx := testCtx(t)
			n := w.sim.AddIssue(testRepo, simgh.Issue{})
			s := NewSticky(c, n, marker, interval)
			if err := tc.updates(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if cs := w.sim.Comments(testRepo, n); len(cs) != 1 || cs[0].Body != marker+"\nfinal" {
				t.Fatalf("comments %+v, want one holding the last body", cs)
			}
			writes := commentWrites(w)
			if len(writes) < 2 {
				t.Fatalf("%d writes: the test exercises no pacing", len(writes))
			}
			for i := 1; i < len(writes); i++ {
				if gap := writes[i].Sub(writes[i-1]); gap < interval {
					t.Errorf("writes %d and %d only %v apart, want at least %v", i-1, i, gap, interval)
				}
			}
		})
	}
}

// TestStickyLastBodySurvivesAFailedWrite: a deferred edit that fails (GitHub down past the
// retries) keeps its body pending; Flush writes it, so the comment never stays behind.
func TestStickyLastBodySurvivesAFailedWrite(t *testing.T) {
	t.Parallel()
	w, c, ctx, n := onNewIssue(t)
	s := NewSticky(c, n, marker, 30*time.Millisecond)
	if err := s.Update(ctx, "provisioning"); err != nil {
		t.Fatal(err)
	}
	// Every try of the next edit fails (the client tries 4 times).
	w.sim.Inject(simgh.Fault{Method: "PATCH", PathContains: "/comments/", Status: 502, Times: 4})
	if err := s.Update(ctx, "ready"); err != nil { // deferred: the interval is not over
		t.Fatal(err)
	}
	eventually(t, "the deferred edit runs (and fails 4 times)", func() bool {
		failed := 0
		for _, r := range w.sim.Requests() {
			if r.Method == "PATCH" && r.Status == 502 {
				failed++
			}
		}
		return failed >= 4
	})
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("flush after a failed deferred edit: %v", err)
	}
	if cs := w.sim.Comments(testRepo, n); len(cs) != 1 || cs[0].Body != marker+"\nready" {
		t.Fatalf("comments %+v, want the last body written", cs)
	}
}

// onNewIssue starts a world with an App client and opens an issue there: what a sticky writes to.
func onNewIssue(t *testing.T) (*world, *Client, context.Context, int) {
	t.Helper()
	w := startWorld(t)
	return w, w.mustApp(t, nil), testCtx(t), w.sim.AddIssue(testRepo, simgh.Issue{})
}

// eventually waits up to 5 s for cond, polling; the test fails if it never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: not yet: %s", what)
		}
	}
}
