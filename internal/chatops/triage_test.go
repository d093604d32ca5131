package chatops_test

import (
	"testing"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/github"
)

// What the bot answers before authenticating: the App's own events are ignored (its replies must
// not run again), except the refill it dispatches after a claim (a workflow_dispatch, command
// pool), which is the point of the dispatch. Failed on the old code: the refill's run, sent by
// the App, was ignored.
func TestTriage(t *testing.T) {
	app := "pocbot[bot]"
	for _, tc := range []struct {
		name   string
		ev     github.Event
		ignore bool
	}{
		{name: "the App's comment", ev: github.Event{Kind: github.KindComment, Sender: app, Body: "/poc up"}, ignore: true},
		{name: "the App's refill", ev: github.Event{Kind: github.KindDispatch, Sender: app, Inputs: map[string]string{"command": chatops.RefillCommand}}},
		{name: "the App's dispatch of anything else", ev: github.Event{Kind: github.KindDispatch, Sender: app, Inputs: map[string]string{"command": "reap"}}, ignore: true},
		{name: "an operator's dispatch", ev: github.Event{Kind: github.KindDispatch, Sender: "alice", Inputs: map[string]string{"command": "reap"}}},
		{name: "a comment without a command", ev: github.Event{Kind: github.KindComment, Sender: "alice", Body: "thanks"}, ignore: true},
		{name: "a command", ev: github.Event{Kind: github.KindComment, Sender: "alice", Body: "/poc up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := chatops.Triage(tc.ev, "pocbot"); (why != "") != tc.ignore {
				t.Errorf("Triage = %q, want ignored %v", why, tc.ignore)
			}
		})
	}
}
