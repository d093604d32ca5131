package chatops_test

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/commands"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// Found by the soak (seed 3199412373323603324, events 38,44,46,47): `/poc up` on a merged pull
// request built a whole new cluster, which the next schedule tore down again — billed for
// nothing. A comment on a closed issue or pull request now gets a refusal and creates nothing.
func TestUpOnAClosedIssueIsRefused(t *testing.T) {
	const repo = "acme/closed"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, light: true}.open(t)
	h.gh.AddIssue(repo, ghsim.Issue{Number: 3, Author: "alice", Closed: true})
	h.gh.AddPR(repo, ghsim.PR{Number: 4, Author: "alice", Merged: true})
	for _, c := range []struct {
		number int
		isPR   bool
		what   string
	}{{3, false, "issue"}, {4, true, "pull request"}} {
		ev := h.comment(repo, c.number, c.isPR, "alice", "/poc up")
		ev.IssueState = "closed"
		calls := h.calls()
		out, err := h.handle(ctx, ev)
		if err != nil || out.Refused != "closed" {
			t.Fatalf("#%d: outcome %+v, err %v", c.number, out, err)
		}
		if last := lastBody(h, repo, c.number); !strings.Contains(last, "this "+c.what+" is closed") || !strings.Contains(last, "Reopen") {
			t.Errorf("#%d: refusal:\n%s", c.number, last)
		}
		if d := h.calls() - calls; d != 0 {
			t.Errorf("#%d: a refused up made %d Scaleway calls", c.number, d)
		}
		if left := h.live(commands.ClusterName("acme", "closed", c.number)); len(left) > 0 {
			t.Errorf("#%d: created %v", c.number, left)
		}
	}
}
