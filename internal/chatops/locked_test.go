package chatops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Found by the soak (seed 2924640723491165721): two `/poc up` on one issue at once and a third
// right behind them. The second waited for the first's lock and gave up; its only answer was to
// be its status comment — but the third, a newer run, owned that comment already, so the
// second's "busy" was never written anywhere: a command without any answer. An operation that
// never started because the cluster is busy now says so in a reply when the status comment is
// not its own to write.
func TestLockedUpUnderANewerRunsStatusIsAnswered(t *testing.T) {
	const repo = "acme/locked"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, light: true}.open(t)

	for _, tc := range []struct {
		name   string
		number int
		newer  bool // a newer run's status comment is on the issue
	}{
		// The ordinary case: the status comment is this run's, and says it.
		{"own status comment", 5, false},
		{"a newer run's status comment", 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.number
			h.gh.AddIssue(repo, ghsim.Issue{Number: n, Author: "alice"})
			name := commands.ClusterName("acme", "locked", n)
			var sticky int64
			if tc.newer {
				sticky = h.gh.AddComment(repo, n, h.gh.BotLogin(),
					commands.StickyMarker(name)+"\n<!-- pocbot:serial=999999999999 -->\n⏳ a newer run's up, in progress")
			}
			held, err := h.backend.Ops.Store.Lock(ctx, name, statestore.LockInfo{Actor: "carol", Command: "up", RunID: "4242"}, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Release(t.Context())
			hd := h.handlerWaiting(repo, 300*time.Millisecond)
			before := map[int64]string{}
			for _, c := range h.botComments(repo, n) {
				before[c.ID] = c.Body
			}

			out, err := hd.Handle(ctx, h.comment(repo, n, false, "alice", "/poc up"))
			if err != nil || out.Refused != "locked" {
				t.Fatalf("outcome %+v, err %v", out, err)
			}
			var answers []string
			for _, c := range h.botComments(repo, n) {
				if old, ok := before[c.ID]; !ok || old != c.Body {
					answers = append(answers, c.Body)
				}
			}
			if len(answers) != 1 || !strings.Contains(answers[0], "is busy") || !strings.Contains(answers[0], "run 4242") {
				t.Fatalf("the command's answers (new or edited bot comments): %d %q; want one saying the cluster is busy", len(answers), answers)
			}
			if tc.newer {
				if c := findComment(h, repo, n, sticky); c == nil || !strings.Contains(c.Body, "a newer run's up") {
					t.Errorf("the newer run's status comment was overwritten: %+v", c)
				}
			}
			if len(h.live(name)) > 0 {
				t.Errorf("a locked up created %v", h.live(name))
			}
		})
	}
}
