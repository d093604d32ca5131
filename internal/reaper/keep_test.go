package reaper_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/reaper"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestKeepLabelNeedsWrite replays issue 11 hole 8: anyone with triage can label, so the keep
// label counts only when the user who added it (the issue's "labeled" event) has write
// permission; otherwise the cluster expires as usual and the warning says why the label did
// not count.
func TestKeepLabelNeedsWrite(t *testing.T) {
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
