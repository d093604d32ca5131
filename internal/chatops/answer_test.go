package chatops_test

import (
	"fmt"
	"strings"
	"testing"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// Found by the soak (seed 2324274951990750381): an up whose status comment and notification were
// both answered 503 by GitHub finished without any answer, because a comment creation was never
// sent twice (a 5xx may hide one that took effect). Each command here meets a 5xx on its reply:
// refused before it took effect, or after; it gets exactly one reply, never none, never two.
func TestEveryCommandIsAnsweredDespiteA5xx(t *testing.T) {
	const repo = "acme/answers"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, light: true}.open(t)
	for i, f := range []ghsim.Fault{
		{Method: "POST", Status: 503},
		{Method: "POST", Status: 502, AfterEffect: true},
	} {
		number := h.gh.AddIssue(repo, ghsim.Issue{Author: "alice"})
		ev := h.comment(repo, number, false, "alice", "/poc help")
		f.PathContains = fmt.Sprintf("/issues/%d/comments", number) // the reply, not a reaction
		h.gh.Inject(f)
		if _, err := h.handle(ctx, ev); err != nil {
			t.Fatalf("fault %d: %v", i, err)
		}
		replies := h.botComments(repo, number)
		if len(replies) != 1 || !strings.Contains(replies[0].Body, "/poc up") {
			t.Errorf("fault %d (%+v): %d bot comments, want exactly the one help reply: %+v", i, f, len(replies), replies)
		}
	}
}
