package reaper_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/reaper"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestDecisions runs one reaper pass over clusters in every situation of the policy and checks
// each decision, what is left in the store, and what was said on each issue.
func TestDecisions(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Truncate(time.Second).Add(48 * time.Hour)
	type tc struct {
		name      string
		issue     *ghsim.Issue
		pr        *ghsim.PR
		otherRepo bool
		expiresIn time.Duration // relative to now; 0: no expiry
		meta      clusterops.Meta
		want      reaper.Action
		reason    commands.ReapReason
		comments  int    // bot comments on the issue afterwards
		comment   string // a substring of the last one
		docLeft   bool
	}
	cases := []tc{
		{name: "expired", issue: &ghsim.Issue{Title: "poc"}, expiresIn: -time.Minute,
			want: reaper.ActionDestroyed, reason: commands.ReapExpired, comments: 1, comment: "it expired at"},
		{name: "closed-issue", issue: &ghsim.Issue{Title: "poc", Closed: true}, expiresIn: 5 * time.Hour,
			want: reaper.ActionDestroyed, reason: commands.ReapClosed, comments: 1, comment: "was closed"},
		{name: "merged-pr", pr: &ghsim.PR{Title: "feature", Merged: true}, expiresIn: 5 * time.Hour,
			want: reaper.ActionDestroyed, reason: commands.ReapMerged, comments: 1, comment: "was merged"},
		{name: "closed-pr", pr: &ghsim.PR{Title: "feature", Closed: true}, expiresIn: 5 * time.Hour,
			want: reaper.ActionDestroyed, reason: commands.ReapClosed, comments: 1},
		{name: "kept-expired", issue: &ghsim.Issue{Title: "poc", Labels: []string{"poc/keep"}}, expiresIn: -time.Hour,
			want: reaper.ActionKept, docLeft: true},
		{name: "kept-but-closed", issue: &ghsim.Issue{Title: "poc", Closed: true, Labels: []string{"poc/keep"}}, expiresIn: 5 * time.Hour,
			want: reaper.ActionDestroyed, reason: commands.ReapClosed, comments: 1},
		{name: "warn-window", issue: &ghsim.Issue{Title: "poc"}, expiresIn: 30 * time.Minute,
			want: reaper.ActionWarned, comments: 1, comment: "tearing down at", docLeft: true},
		{name: "not-yet", issue: &ghsim.Issue{Title: "poc"}, expiresIn: 3 * time.Hour,
			want: reaper.ActionNone, docLeft: true},
		{name: "no-expiry", issue: &ghsim.Issue{Title: "poc"},
			want: reaper.ActionNone, docLeft: true},
		{name: "already-warned", issue: &ghsim.Issue{Title: "poc"}, expiresIn: 20 * time.Minute,
			meta: clusterops.Meta{WarnedFor: now.Add(20 * time.Minute).Truncate(time.Second)},
			want: reaper.ActionNone, docLeft: true},
		{name: "other-repo-expired", otherRepo: true, expiresIn: -time.Hour, docLeft: true},
		{name: "down-failed", issue: &ghsim.Issue{Title: "poc"}, expiresIn: 3 * time.Hour,
			meta: clusterops.Meta{DownFailed: time.Date(2026, 10, 17, 10, 0, 0, 0, time.UTC)},
			want: reaper.ActionDownFailed, docLeft: true},
	}
	numbers := map[string]int{}
	for _, c := range cases {
		h := statestore.Header{Cluster: "c-" + c.name, Repository: repo, Kind: "issue", RequestedBy: "alice"}
		c.meta.Into(&h)
		switch {
		case c.otherRepo:
			h.Repository, h.Number = "acme/other", 1
		case c.issue != nil:
			h.Number = e.w.GitHub.AddIssue(repo, *c.issue)
		case c.pr != nil:
			h.Number, h.Kind = e.w.GitHub.AddPR(repo, *c.pr), "pull"
		}
		if c.expiresIn != 0 {
			h.Expires = now.Add(c.expiresIn)
		}
		if c.name == "down-failed" {
			h.Phase = string(lifecycle.PhaseFailed)
		}
		numbers[c.name] = h.Number
		e.putDoc(t, h)
	}
	rep, err := reaper.Run(ctx, e.config(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table(t, rep))
	if rep.Listed != len(cases) {
		t.Errorf("listed %d headers, want %d", rep.Listed, len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := decisionOf(rep, "c-"+c.name)
			if c.otherRepo {
				if ok {
					t.Errorf("another repository's cluster was handled: %+v", d)
				}
			} else {
				if !ok {
					t.Fatalf("no decision")
				}
				if d.Action != c.want || d.Reason != c.reason {
					t.Errorf("action %s reason %q, want %s %q (detail %q, err %v)", d.Action, d.Reason, c.want, c.reason, d.Detail, d.Err)
				}
				if d.Err != nil {
					t.Errorf("error: %v", d.Err)
				}
			}
			if _, left := e.header(t, "c-"+c.name); left != c.docLeft {
				t.Errorf("state document left = %v, want %v", left, c.docLeft)
			}
			if c.otherRepo {
				return
			}
			got := e.botComments(numbers[c.name])
			if len(got) != c.comments {
				t.Fatalf("%d bot comments, want %d", len(got), c.comments)
			}
			if c.comment != "" && !strings.Contains(got[len(got)-1].Body, c.comment) {
				t.Errorf("comment %q does not say %q", got[len(got)-1].Body, c.comment)
			}
		})
	}
	// The keep label is recorded in the header for status to show.
	if h, _ := e.header(t, "c-kept-expired"); !metaOf(t, h).Keep {
		t.Errorf("keep label not recorded in the header: %v", h.Labels)
	}
	if h, _ := e.header(t, "c-warn-window"); !metaOf(t, h).WarnedFor.Equal(h.Expires.Truncate(time.Second)) {
		t.Errorf("warned for %s, want the expiry %s", metaOf(t, h).WarnedFor, h.Expires)
	}
}

// TestWarningOnceThenReArmedByExtend: two runs in the window post one warning; an extend moves
// the expiry and the next window warns again; removing the keep label lets the expiry act.
func TestWarningOnceThenReArmedByExtendAndKeepReleased(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	t0 := time.Now().UTC().Truncate(time.Second)
	n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"})
	e.putDoc(t, statestore.Header{Cluster: "acme-shop-1", Repository: repo, Number: n, Kind: "issue", RequestedBy: "alice", Expires: t0.Add(8 * time.Hour)})
	at := func(d time.Duration) reaper.Report {
		t.Helper()
		rep, err := reaper.Run(ctx, e.config(t0.Add(d)))
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	at(6 * time.Hour) // outside the 1 h window
	if c := e.botComments(n); len(c) != 0 {
		t.Fatalf("warned %d times 2 h before expiry", len(c))
	}
	at(7*time.Hour + 10*time.Minute)
	at(7*time.Hour + 40*time.Minute)
	if c := e.botComments(n); len(c) != 1 {
		t.Fatalf("%d warnings after two runs in the window, want 1", len(c))
	}
	// Two reapers at once in the window of a new expiry: still one warning.
	if _, err := e.ops.Run(ctx, clusterops.VerbExtend, clusterops.Intent{Cluster: "acme-shop-1", RequestedBy: "alice", Command: "extend",
		ExtendBy: 4 * time.Hour}, nil); err != nil {
		t.Fatal(err)
	}
	at(7*time.Hour + 50*time.Minute) // the old window: the new expiry is 4 h away
	if c := e.botComments(n); len(c) != 1 {
		t.Fatalf("warned again for an expiry 4 h away: %d comments", len(c))
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { at(11*time.Hour + 30*time.Minute) })
	}
	wg.Wait()
	c := e.botComments(n)
	if len(c) != 2 {
		t.Fatalf("%d warnings after the extend and two concurrent runs, want 2", len(c))
	}
	if !strings.Contains(c[1].Body, "`/poc extend 4h`") || !strings.Contains(c[1].Body, "poc/keep") {
		t.Errorf("warning does not say how to keep the cluster: %q", c[1].Body)
	}
	// Keep label: expiry paused past the expiry, then released.
	e.w.GitHub.SetLabels(repo, n, "poc/keep")
	if d, _ := decisionOf(at(13*time.Hour), "acme-shop-1"); d.Action != reaper.ActionKept {
		t.Fatalf("with the keep label past expiry: %s (%s)", d.Action, d.Detail)
	}
	if h, _ := e.header(t, "acme-shop-1"); !metaOf(t, h).Keep {
		t.Errorf("keep not recorded: %v", h.Labels)
	}
	e.w.GitHub.SetLabels(repo, n)
	if d, _ := decisionOf(at(13*time.Hour), "acme-shop-1"); d.Action != reaper.ActionDestroyed || d.Reason != commands.ReapExpired {
		t.Fatalf("after removing the keep label: %s %s (%s, %v)", d.Action, d.Reason, d.Detail, d.Err)
	}
	if c := e.botComments(n); len(c) != 3 || !strings.Contains(c[2].Body, "torn down by the reaper") {
		t.Errorf("want the reaped notice as third comment, got %d comments", len(c))
	}
}

// TestWithoutGitHub: an operator's reap destroys expired clusters only, comments nowhere, and
// honours a keep label recorded by an earlier run.
func TestWithoutGitHub(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Add(24 * time.Hour)
	closed := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc", Closed: true})
	e.putDoc(t, statestore.Header{Cluster: "expired", Repository: repo, Number: 1, Expires: now.Add(-time.Second)})
	e.putDoc(t, statestore.Header{Cluster: "other-repo-expired", Repository: "acme/other", Number: 1, Expires: now.Add(-time.Hour)})
	e.putDoc(t, statestore.Header{Cluster: "closed-not-expired", Repository: repo, Number: closed, Expires: now.Add(time.Hour)})
	kept := statestore.Header{Cluster: "kept", Repository: repo, Number: 2, Expires: now.Add(-time.Hour)}
	clusterops.Meta{Keep: true}.Into(&kept)
	e.putDoc(t, kept)
	rep, err := reaper.Run(ctx, reaper.Config{Ops: e.ops, Spec: e.spec, Now: func() time.Time { return now }, Log: e.log, WarnBefore: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table(t, rep))
	want := map[string]reaper.Action{"expired": reaper.ActionDestroyed, "other-repo-expired": reaper.ActionDestroyed,
		"closed-not-expired": reaper.ActionNone, "kept": reaper.ActionKept}
	for c, a := range want {
		if d, _ := decisionOf(rep, c); d.Action != a {
			t.Errorf("%s: %s, want %s", c, d.Action, a)
		}
	}
	if n := len(e.w.GitHub.AllComments()); n != 0 {
		t.Errorf("%d comments without GitHub settings", n)
	}
	if !strings.Contains(table(t, rep), "2 destroyed") {
		t.Errorf("summary line does not count the teardowns:\n%s", table(t, rep))
	}
}

// TestDryRunBoundsAndBusy: a dry run changes nothing and reports the plan; MaxTeardowns and a
// held lock leave clusters for the next run, reported as such.
func TestDryRunBoundsAndBusy(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Add(24 * time.Hour)
	for i, c := range []string{"a", "b", "c", "locked"} {
		n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"})
		e.putDoc(t, statestore.Header{Cluster: c, Repository: repo, Number: n, Expires: now.Add(-time.Duration(4-i) * time.Hour)})
	}
	e.putDoc(t, statestore.Header{Cluster: "soon", Repository: repo, Number: e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc"}), Expires: now.Add(time.Minute)})
	held, err := e.store.Lock(ctx, "locked", statestore.LockInfo{Actor: "bob", Command: "up"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(t.Context())

	cfg := e.config(now)
	cfg.DryRun = true
	rep, err := reaper.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := table(t, rep)
	t.Logf("\n%s", out)
	// A dry run reports the plan (reaper.Plan) without executing it: the held lock is for the
	// run that would act (issue 23).
	if rep.Count(reaper.ActionDestroyed) != 4 || rep.Count(reaper.ActionWarned) != 1 || rep.Count(reaper.ActionBusy) != 0 {
		t.Errorf("dry run decisions: %d destroy, %d warn, %d busy; want 4, 1, 0", rep.Count(reaper.ActionDestroyed), rep.Count(reaper.ActionWarned), rep.Count(reaper.ActionBusy))
	}
	if !strings.Contains(out, "would destroy") || !strings.Contains(out, "would warn") || !strings.Contains(out, "dry run") {
		t.Errorf("dry run table does not say 'would':\n%s", out)
	}
	if hs, _ := e.store.List(ctx); len(hs) != 5 {
		t.Errorf("dry run left %d of 5 documents", len(hs))
	}
	if h, _ := e.header(t, "soon"); !metaOf(t, h).WarnedFor.IsZero() {
		t.Errorf("dry run recorded a warning")
	}
	if n := len(e.w.GitHub.AllComments()); n != 0 {
		t.Errorf("dry run posted %d comments", n)
	}

	cfg.DryRun, cfg.MaxTeardowns = false, 1
	rep, err = reaper.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table(t, rep))
	// The longest overdue goes first.
	if d, _ := decisionOf(rep, "a"); d.Action != reaper.ActionDestroyed {
		t.Errorf("a (4 h overdue): %s, want destroyed", d.Action)
	}
	for _, c := range []string{"b", "c"} {
		if d, _ := decisionOf(rep, c); d.Action != reaper.ActionDeferred {
			t.Errorf("%s: %s, want deferred by MaxTeardowns", c, d.Action)
		}
	}
	if d, _ := decisionOf(rep, "locked"); d.Action != reaper.ActionBusy || !strings.Contains(d.Detail, "bob") {
		t.Errorf("locked: %s %q, want busy naming bob", d.Action, d.Detail)
	}
	if !rep.Bounded {
		t.Error("report not marked bounded")
	}
	// A spent budget starts nothing.
	cfg.MaxTeardowns, cfg.Budget = 0, time.Nanosecond
	rep, err = reaper.Run(ctx, cfg)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	if rep.Count(reaper.ActionDestroyed) != 0 {
		t.Errorf("a spent budget still destroyed %d clusters", rep.Count(reaper.ActionDestroyed))
	}
	// The next unbounded run finishes the job; the locked one waits for its lock.
	cfg.Budget = 0
	if rep, err = reaper.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if rep.Count(reaper.ActionDestroyed) != 2 {
		t.Errorf("unbounded run destroyed %d, want 2 (b, c)\n%s", rep.Count(reaper.ActionDestroyed), table(t, rep))
	}
	if _, ok := e.header(t, "locked"); !ok {
		t.Error("the locked cluster was destroyed")
	}
}

func TestOpportunisticBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in         reaper.Config
		max        int
		budget     time.Duration
		noDeadline bool
	}{
		{in: reaper.Config{}, max: 1, budget: 20 * time.Second, noDeadline: true},
		{in: reaper.Config{MaxTeardowns: 3, Budget: time.Minute}, max: 3, budget: time.Minute, noDeadline: true},
		{in: reaper.Config{Deadline: time.Unix(1, 0)}, max: 1, budget: 0},
	} {
		got := reaper.Opportunistic(c.in)
		if got.MaxTeardowns != c.max || got.Budget != c.budget || got.Deadline.IsZero() != c.noDeadline {
			t.Errorf("Opportunistic(%+v) = max %d budget %s deadline %s", c.in, got.MaxTeardowns, got.Budget, got.Deadline)
		}
	}
}

// extendFirst plays an extend landing between the reaper's listing and its teardown's lock.
type extendFirst struct {
	ops *clusterops.Ops
	to  time.Time
}

func (x extendFirst) Down(ctx context.Context, req clusterops.Intent) (*clusterops.Outcome, error) {
	doc, err := x.ops.Store.Get(ctx, req.Cluster)
	if err != nil {
		return nil, err
	}
	doc.Header.Expires = x.to
	if err := x.ops.Store.Put(ctx, doc); err != nil {
		return nil, err
	}
	return x.ops.Down(ctx, req)
}

// TestExtendBetweenListingAndTeardownWins: the reaper's reason is checked again under the lock.
func TestExtendBetweenListingAndTeardownWins(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Add(24 * time.Hour)
	e.putDoc(t, statestore.Header{Cluster: "extended", Repository: repo, Number: 1, Expires: now.Add(-time.Minute)})
	cfg := reaper.Config{Ops: e.ops, Spec: e.spec, Now: func() time.Time { return now }, Log: e.log,
		Teardown: extendFirst{ops: e.ops, to: now.Add(4 * time.Hour)}}
	rep, err := reaper.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := decisionOf(rep, "extended")
	if d.Action != reaper.ActionNone || !strings.Contains(d.Detail, "extend") {
		t.Errorf("decision = %s (%s), want none because of the extend", d.Action, d.Detail)
	}
	if _, ok := e.header(t, "extended"); !ok {
		t.Error("the extended cluster's state was destroyed")
	}
}

func metaOf(t testing.TB, h statestore.Header) clusterops.Meta {
	t.Helper()
	m, err := clusterops.MetaOf(h)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKeepLabelNeedsWrite replays issue 11 hole 8: anyone with triage can label, so the keep
// label counts only when the user who added it (the issue's "labeled" event) has write
// permission; otherwise the cluster expires as usual and the warning says why the label did
// not count.
func TestKeepLabelNeedsWrite(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Truncate(time.Second).Add(48 * time.Hour)
	gh := e.w.GitHub
	gh.SetPermission(repo, "trudy", "triage")
	gh.SetPermission(repo, "walt", "write")
	cases := []struct {
		name      string
		labeledBy string
		expiresIn time.Duration
		want      reaper.Action
		comment   string // in the bot's last comment on the issue
	}{
		{"triage-label-expired", "trudy", -time.Hour, reaper.ActionDestroyed, "torn down by the reaper"},
		{"triage-label-warned", "trudy", 30 * time.Minute, reaper.ActionWarned, "label is **ignored**"},
		{"write-label-expired", "walt", -time.Hour, reaper.ActionKept, ""},
	}
	numbers := map[string]int{}
	for _, c := range cases {
		n := gh.AddIssue(repo, ghsim.Issue{Title: c.name, Author: "alice"})
		gh.LabelIssue(repo, n, c.labeledBy, "poc/keep")
		numbers[c.name] = n
		e.putDoc(t, statestore.Header{Cluster: "k-" + c.name, Repository: repo, Number: n, Kind: "issue",
			RequestedBy: "alice", Expires: now.Add(c.expiresIn), Labels: map[string]string{}})
	}
	rep, err := reaper.Run(ctx, e.config(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table(t, rep))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, ok := decisionOf(rep, "k-"+c.name)
			if !ok || d.Action != c.want {
				t.Fatalf("decision %+v, want %s", d, c.want)
			}
			if c.want == reaper.ActionDestroyed && d.Reason != commands.ReapExpired {
				t.Errorf("reason %q, want %q", d.Reason, commands.ReapExpired)
			}
			got := e.botComments(numbers[c.name])
			if c.comment == "" {
				if len(got) != 0 {
					t.Errorf("a kept cluster got comments: %v", got)
				}
				if h, _ := e.header(t, "k-"+c.name); !metaOf(t, h).Keep {
					t.Errorf("keep not recorded for a write user's label")
				}
				return
			}
			if len(got) == 0 || !strings.Contains(got[len(got)-1].Body, c.comment) {
				t.Fatalf("bot comments %v, want the last to hold %q", got, c.comment)
			}
			if c.want == reaper.ActionWarned && !strings.Contains(got[len(got)-1].Body, "`trudy`") {
				t.Errorf("the warning does not name who added the ignored label:\n%s", got[len(got)-1].Body)
			}
		})
	}
	if d, _ := decisionOf(rep, "k-triage-label-warned"); !strings.Contains(d.Detail, "ignored") || d.Reason != "" {
		t.Errorf("warned decision detail %q reason %q: want the ignored label named", d.Detail, d.Reason)
	}
}

// A keep label taken off a cluster that expires within the warning window: the run records
// both (keep off, the one warning marked) in ONE write of the header, under one lock. It wrote
// the header once per change (twice) before issue 23.
func TestKeepOffAndWarningInOneHeaderWrite(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Truncate(time.Second).Add(48 * time.Hour)
	n := e.w.GitHub.AddIssue(repo, ghsim.Issue{Title: "poc", Author: "alice"})
	h := statestore.Header{Cluster: "k-unlabeled", Repository: repo, Number: n, Kind: "issue",
		RequestedBy: "alice", Expires: now.Add(30 * time.Minute), Labels: map[string]string{}}
	clusterops.Meta{Keep: true}.Into(&h)
	e.putDoc(t, h)
	before, _ := e.header(t, h.Cluster)

	rep, err := reaper.Run(ctx, e.config(now))
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := decisionOf(rep, h.Cluster); d.Action != reaper.ActionWarned || d.Err != nil {
		t.Fatalf("decision %+v, want warned", d)
	}
	after, _ := e.header(t, h.Cluster)
	if writes := after.Serial - before.Serial; writes != 1 {
		t.Errorf("the run wrote the header %d times (serial %d → %d), want once", writes, before.Serial, after.Serial)
	}
	if m := metaOf(t, after); m.Keep || !warnedForExpiry(m, h.Expires) {
		t.Errorf("header after the run: %+v, want keep off and the warning recorded for %s", m, h.Expires)
	}
	if got := e.botComments(n); len(got) != 1 || !strings.Contains(got[0].Body, "tearing down at") {
		t.Errorf("bot comments %v, want the one warning", got)
	}
}

func warnedForExpiry(m clusterops.Meta, exp time.Time) bool {
	return m.WarnedFor.Equal(exp.UTC().Truncate(time.Second))
}

// TestPlan is the schedule's whole policy as a table: headers and issue states in, steps out, no
// stand-in and no I/O (issue 23: the reaper plans, then acts).
func TestPlan(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const repo = "acme/shop"
	policy := reaper.Policy{KeepLabel: "poc/keep", WarnBefore: time.Hour, Repository: repo, Comment: true}
	hdr := func(name string, expires time.Time, meta clusterops.Meta, phase lifecycle.Phase) statestore.Header {
		h := statestore.Header{Cluster: name, Repository: repo, Number: 7, Expires: expires, Phase: string(phase)}
		meta.Into(&h)
		return h
	}
	open := &reaper.IssueState{Open: true}
	kept := &reaper.IssueState{Open: true, Labels: []string{"poc/keep"}}
	keptByTriage := &reaper.IssueState{Open: true, Labels: []string{"poc/keep"}, KeepRefused: &commands.KeepRefusal{Actor: "eve", Permission: "triage"}}
	lookupFailed := &reaper.IssueState{Err: errors.New("GitHub 502")}
	yes, no := true, false
	spareOf := func(name string, expires time.Time, phase lifecycle.Phase) statestore.Header {
		h := hdr(name, expires, clusterops.Meta{}, phase)
		h.Kind, h.Number = spare.Kind, 0
		return h
	}
	for _, tc := range []struct {
		name     string
		h        statestore.Header
		issue    *reaper.IssueState
		action   reaper.Action // for a step that is not a teardown
		reason   commands.ReapReason
		teardown bool
		warn     bool
		syncKeep *bool
	}{
		{name: "fresh", h: hdr("a", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: open, action: reaper.ActionNone},
		{name: "due within the warning lead", h: hdr("b", now.Add(30*time.Minute), clusterops.Meta{}, lifecycle.PhaseReady), issue: open,
			action: reaper.ActionNone, warn: true},
		{name: "already warned for this expiry", h: hdr("c", now.Add(30*time.Minute), clusterops.Meta{WarnedFor: now.Add(30 * time.Minute)}, lifecycle.PhaseReady),
			issue: open, action: reaper.ActionNone},
		{name: "no warning without the issue's state", h: hdr("d", now.Add(30*time.Minute), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: lookupFailed, action: reaper.ActionNone},
		{name: "expired", h: hdr("e", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhaseReady), issue: open,
			teardown: true, reason: commands.ReapExpired},
		{name: "expired, the issue unknown: expiry still applies", h: hdr("f", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: lookupFailed, teardown: true, reason: commands.ReapExpired},
		{name: "closed", h: hdr("g", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: &reaper.IssueState{},
			teardown: true, reason: commands.ReapClosed},
		{name: "merged", h: hdr("h", now.Add(5*time.Hour), clusterops.Meta{}, lifecycle.PhaseReady), issue: &reaper.IssueState{IsPR: true, Merged: true},
			teardown: true, reason: commands.ReapMerged},
		{name: "kept by a writer, expired: spared, the label recorded", h: hdr("i", now.Add(-time.Hour), clusterops.Meta{}, lifecycle.PhaseReady),
			issue: kept, action: reaper.ActionKept, syncKeep: &yes},
		{name: "kept as last seen when GitHub fails", h: hdr("j", now.Add(-time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: lookupFailed, action: reaper.ActionKept},
		{name: "a label added by triage does not count", h: hdr("k", now.Add(-time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: keptByTriage, teardown: true, reason: commands.ReapExpired, syncKeep: &no},
		{name: "kept, but closed: goes", h: hdr("l", now.Add(5*time.Hour), clusterops.Meta{Keep: true}, lifecycle.PhaseReady),
			issue: &reaper.IssueState{Labels: []string{"poc/keep"}}, teardown: true, reason: commands.ReapClosed},
		// A paused cluster expires at its own bound (max_paused), keep label or not.
		{name: "kept, but paused past max_paused: goes", h: hdr("n", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhasePaused),
			issue: kept, teardown: true, reason: commands.ReapExpired, syncKeep: &yes},
		{name: "kept and paused, due within the warning lead: warned", h: hdr("o", now.Add(30*time.Minute), clusterops.Meta{Keep: true}, lifecycle.PhasePaused),
			issue: kept, action: reaper.ActionNone, warn: true},
		{name: "a failed down is reported", h: hdr("m", now.Add(5*time.Hour), clusterops.Meta{DownFailed: now.Add(-time.Hour)}, lifecycle.PhaseFailed),
			issue: open, action: reaper.ActionDownFailed},
		// A stale spare is the pool pass's to replace (the new one built first) until the grace
		// ends; past it the reaper destroys it, so that a pool whose pass stopped stops paying.
		{name: "a spare just stale: left to the pool pass", h: spareOf("spare-a", now.Add(-time.Minute), lifecycle.PhaseReady), action: reaper.ActionNone},
		{name: "a spare stale within the grace: left", h: spareOf("spare-b", now.Add(1-spare.ReapGrace), lifecycle.PhaseReady), action: reaper.ActionNone},
		{name: "a spare stale past the grace: destroyed", h: spareOf("spare-c", now.Add(-spare.ReapGrace), lifecycle.PhaseReady),
			teardown: true, reason: commands.ReapExpired},
		{name: "a spare's build that died, past its expiry and the grace: destroyed", h: spareOf("spare-d", now.Add(-spare.ReapGrace-time.Hour), lifecycle.PhaseProvisioning),
			teardown: true, reason: commands.ReapExpired},
		{name: "a cluster is not given the spare's grace", h: hdr("p", now.Add(-time.Minute), clusterops.Meta{}, lifecycle.PhaseReady), issue: open,
			teardown: true, reason: commands.ReapExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := reaper.Plan([]statestore.Header{tc.h}, map[string]*reaper.IssueState{tc.h.Cluster: tc.issue}, now, policy)
			if len(steps) != 1 {
				t.Fatalf("%d steps, want 1", len(steps))
			}
			s := steps[0]
			if s.Teardown != tc.teardown || s.Warn != tc.warn {
				t.Errorf("teardown %v, warn %v; want %v, %v (%+v)", s.Teardown, s.Warn, tc.teardown, tc.warn, s.Decision)
			}
			if tc.teardown && s.Decision.Reason != tc.reason {
				t.Errorf("reason %q, want %q", s.Decision.Reason, tc.reason)
			}
			if !tc.teardown && s.Decision.Action != tc.action {
				t.Errorf("action %q, want %q (%s)", s.Decision.Action, tc.action, s.Decision.Detail)
			}
			if (s.SyncKeep == nil) != (tc.syncKeep == nil) || (s.SyncKeep != nil && *s.SyncKeep != *tc.syncKeep) {
				t.Errorf("sync keep %v, want %v", s.SyncKeep, tc.syncKeep)
			}
		})
	}
}

// TestPlanOrder: what is not due first, in the headers' order; then closed before expired, the
// longest overdue first.
func TestPlanOrder(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := func(name string, expires time.Time) statestore.Header {
		return statestore.Header{Cluster: name, Repository: "acme/shop", Number: 1, Expires: expires}
	}
	headers := []statestore.Header{h("late-1h", now.Add(-time.Hour)), h("fresh", now.Add(time.Hour)), h("late-3h", now.Add(-3*time.Hour)), h("closed", now.Add(time.Hour))}
	issues := map[string]*reaper.IssueState{"closed": {}}
	var got []string
	for _, s := range reaper.Plan(headers, issues, now, reaper.Policy{KeepLabel: "poc/keep"}) {
		got = append(got, s.Decision.Cluster)
	}
	want := []string{"fresh", "closed", "late-3h", "late-1h"}
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
