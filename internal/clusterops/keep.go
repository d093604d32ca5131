package clusterops

import (
	"context"

	"github.com/pocbot/pocbot/internal/commands"
)

// Labelers is what deciding on a keep label needs: who last added it (the events) and
// their permission now; internal/github.Client implements it.
type Labelers interface {
	LabelActor(ctx context.Context, number int, label string) (string, bool, error)
	Permission(ctx context.Context, login string) (string, error)
}

// KeepVouched is the one keep rule, for /poc status and up (chatops) and the schedule (reaper):
// a keep label on issue number counts only when the user who last added it has write permission
// now (anyone with triage can label; commands.KeepVouched is the policy). It fails closed: no
// Labelers, or an API error, means the label does not count, with the reason. Nil: it counts.
func KeepVouched(ctx context.Context, gh Labelers, number int, label string) *commands.KeepRefusal {
	if gh == nil {
		return &commands.KeepRefusal{Unknown: "the bot was given no way to ask GitHub who added it"}
	}
	actor, _, err := gh.LabelActor(ctx, number, label)
	if err != nil {
		return &commands.KeepRefusal{Unknown: commands.Redact(err.Error())}
	}
	perm := ""
	if actor != "" {
		if perm, err = gh.Permission(ctx, actor); err != nil {
			return &commands.KeepRefusal{Actor: actor, Unknown: commands.Redact(err.Error())}
		}
	}
	return commands.KeepVouched(actor, perm)
}
