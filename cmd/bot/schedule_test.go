package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	w.GitHub.SetPermission(repo, "alice", "maintain")
	number := w.GitHub.AddIssue(repo, ghsim.Issue{Number: 5, Title: "t", Author: "alice"})
	dir := t.TempDir()
	clock := time.Now()
	run := func(name, event string, payload []byte) string {
		t.Helper()
		path := filepath.Join(dir, name+".json")
		if err := os.WriteFile(path, payload, 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"GITHUB_EVENT_NAME": event, "GITHUB_EVENT_PATH": path, "GITHUB_REPOSITORY": repo, "GITHUB_RUN_ID": name}
		for _, kv := range w.Env() {
			env[kv[0]] = kv[1]
		}
		var so, se bytes.Buffer
		a := newApp(&so, &se, func(k string) string { return env[k] })
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
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: b.TempDir(), TimeFactor: 0.05, S3: "file"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	const repo = "acme/shop"
	w.GitHub.AddRepo(repo, "main")
	path := filepath.Join(b.TempDir(), "schedule.json")
	if err := os.WriteFile(path, []byte(`{"schedule":"7 * * * *"}`), 0o600); err != nil {
		b.Fatal(err)
	}
	env := map[string]string{"GITHUB_EVENT_NAME": "schedule", "GITHUB_EVENT_PATH": path, "GITHUB_REPOSITORY": repo, "GITHUB_RUN_ID": "1"}
	for _, kv := range w.Env() {
		env[kv[0]] = kv[1]
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var so, se bytes.Buffer
		a := newApp(&so, &se, func(k string) string { return env[k] })
		t0 := time.Now()
		if err := a.dispatch(ctx, []string{"handle"}); err != nil {
			b.Fatalf("scheduled run: %v\n%s", err, se.String())
		}
		total += time.Since(t0)
	}
	b.ReportMetric(float64((total / time.Duration(b.N)).Milliseconds()), "ms-idle-scheduled-run")
	b.ReportMetric(24*30, "billed-min-per-month-at-1h")
}
