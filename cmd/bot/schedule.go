package main

import (
	"context"
	"errors"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/opsboard"
	"github.com/pocbot/pocbot/internal/schedule"
	"github.com/pocbot/pocbot/internal/statestore"
)

// scheduleBeat records the scheduled run in the state bucket; a failure is logged only.
func (a *app) scheduleBeat(ctx context.Context, store *statestore.Store, cron, runID string) {
	doc, err := store.GetShared(ctx, schedule.DocName)
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		doc = &statestore.Shared{Name: schedule.DocName}
	case err != nil:
		a.log.Warn("could not read the schedule's heartbeat", "err", err)
		return
	}
	doc.Body = schedule.Heartbeat{At: a.clock().UTC(), Cron: cron, RunID: runID}.Encode()
	if err := store.PutShared(ctx, doc); err != nil && !errors.Is(err, statestore.ErrConflict) {
		a.log.Warn("could not write the schedule's heartbeat", "err", err)
	}
}

// scheduleCheck tells, from the heartbeat, whether the schedule stopped. When it did, the notice is
// returned (the command's replies end with it, chatops.Handler.ScheduleNotice) and put at the top
// of the "POC clusters" issue.
func (a *app) scheduleCheck(ctx context.Context, store *statestore.Store, gh *github.Client, repo string) string {
	doc, err := store.GetShared(ctx, schedule.DocName)
	if err != nil {
		if !errors.Is(err, statestore.ErrNotFound) {
			a.log.Warn("could not read the schedule's heartbeat", "err", err)
		}
		return ""
	}
	hb, err := schedule.Decode(doc.Body)
	now := a.clock()
	if err != nil || !schedule.Stale(hb, now) {
		return ""
	}
	every, _ := schedule.Interval(hb.Cron)
	notice := commands.RenderScheduleStopped(commands.ScheduleStoppedView{LastRun: hb.At, Now: now, Every: every, Repo: repo})
	a.log.Warn("the reaper's schedule has stopped", "last_run", hb.At, "cron", hb.Cron)
	if _, err := opsboard.SetNotice(ctx, gh, boardMemory(store, repo), notice); err != nil {
		a.log.Warn("could not put the schedule notice on the POC clusters issue", "err", err)
	}
	return notice
}
