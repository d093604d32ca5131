package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/opsboard"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// A scheduled run leaves a heartbeat; a command's run hours later, the schedule silent since, says
// the schedule stopped — in its own reply (no comment of its own) and atop the "POC clusters" issue
// — and a command's run while the schedule runs says nothing.
func TestScheduleStoppedIsNoticed(t *testing.T) {
	ctx, w := startWorld(t, 3*time.Minute, world.Options{})
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "alice", "maintain")
	number := w.GitHub.AddIssue(repo, ghsim.Issue{Number: 5, Title: "t", Author: "alice"})
	dir := t.TempDir()
	clock := time.Now()
	run := func(name, event string, payload []byte) string {
		t.Helper()
		env := envMap(w)
		env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"] = event, writeEvent(t, dir, name, payload)
		env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = repo, name
		var so, se bytes.Buffer
		a := newApp(&so, &se, only(env))
		a.now = func() time.Time { return clock }
		if err := a.dispatch(ctx, []string{"handle"}); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, se.String())
		}
		return se.String()
	}
	// status reads the state, so its run asks whether the schedule stopped; it returns the bodies
	// of the comments the run posted.
	status := func(name string) []string {
		t.Helper()
		before := len(w.GitHub.Comments(repo, number))
		id := w.GitHub.AddComment(repo, number, "alice", "/poc status")
		run(name, "issue_comment", ghsim.CommentPayload(repo, number, id, "alice", w.GitHub.UserID("alice"), "/poc status", w.GitHub.InstallationID(repo)))
		var posted []string
		for _, c := range w.GitHub.Comments(repo, number)[before+1:] {
			posted = append(posted, c.Body)
		}
		return posted
	}
	const said = "schedule has not run since"
	board := func() string {
		for i := 1; i < 50; i++ {
			if title, body, ok := w.GitHub.IssueBody(repo, i); ok && title == opsboard.Title {
				return body
			}
		}
		return ""
	}

	run("schedule-1", "schedule", []byte(`{"schedule":"7 * * * *"}`))
	clock = clock.Add(90 * time.Minute)
	if posted := status("in-time"); len(posted) != 1 || strings.Contains(posted[0], said) {
		t.Fatalf("a run 90 min after an hourly schedule's last run: want one reply without the notice, got %q", posted)
	}
	clock = clock.Add(3 * time.Hour)
	for _, name := range []string{"late", "late-again"} {
		posted := status(name)
		if len(posted) != 1 || !strings.Contains(posted[0], "No cluster exists") || !strings.Contains(posted[0], said) {
			t.Fatalf("%s, 4h30 after the last hourly run: want one reply, the status with the notice in it; got %q", name, posted)
		}
	}
	if b := board(); !strings.Contains(b, said) || !strings.Contains(b, "gh workflow enable poc.yml --repo acme/shop") {
		t.Fatalf("the POC clusters issue does not say the schedule stopped:\n%s", b)
	}
	// The schedule runs again: the board and the replies lose the notice.
	run("schedule-2", "schedule", []byte(`{"schedule":"7 * * * *"}`))
	if b := board(); strings.Contains(b, said) {
		t.Errorf("the notice stayed on the POC clusters issue after the schedule ran:\n%s", b)
	}
	if posted := status("after"); len(posted) != 1 || strings.Contains(posted[0], said) {
		t.Errorf("once the schedule ran again: want one reply without the notice, got %q", posted)
	}
}

// BenchmarkIdleScheduledRun measures what a scheduled run costs when nothing is to be done: `bot
// handle` on a schedule event with no cluster (the reaper's pass, the orphan pass over the zones,
// the heartbeat, the POC clusters issue), in-process against the emulated world at its default
// latencies' scale. GitHub bills each job rounded up to a whole minute on private repositories
// (docs "About billing for GitHub Actions"), so the job's runner time, not this, sets the bill:
// the monthly figure is for the default interval (schedule_interval 1h).
func BenchmarkIdleScheduledRun(b *testing.B) {
	ctx, w := startWorld(b, 5*time.Minute, world.Options{TimeFactor: 0.05})
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	env := envMap(w)
	env["GITHUB_EVENT_NAME"], env["GITHUB_EVENT_PATH"] = "schedule", writeEvent(b, b.TempDir(), "schedule", []byte(`{"schedule":"7 * * * *"}`))
	env["GITHUB_REPOSITORY"], env["GITHUB_RUN_ID"] = repo, "1"
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, stderr, err := runBot(ctx, only(env), "handle"); err != nil {
			b.Fatalf("scheduled run: %v\n%s", err, stderr)
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64((total / time.Duration(b.N)).Milliseconds()), "ms-idle-scheduled-run")
	b.ReportMetric(24*30, "billed-min-per-month-at-1h")
}
