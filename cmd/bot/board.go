package main

import (
	"context"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/opsboard"
	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// updateBoard rewrites the repository's "POC clusters" issue from the state headers (this
// repository's clusters only) and the orphans the reaper's pass saw.
func updateBoard(ctx context.Context, store *statestore.Store, gh *github.Client, repository string, rep reaper.Report, now time.Time) (int, error) {
	hs, err := store.List(ctx)
	if err != nil {
		return 0, err
	}
	var live []opsboard.Entry
	for _, h := range hs {
		if repository != "" && h.Repository != repository {
			continue
		}
		// A label that does not decode shows as unknown (0, not kept): the board decides nothing.
		m, _ := clusterops.MetaOf(h)
		e := opsboard.Entry{Cluster: h.Cluster, Repository: h.Repository, Number: h.Number, RequestedBy: h.RequestedBy,
			Created: h.Created, Expires: h.Expires, DailyNanoEUR: m.DailyCostNanos, Phase: h.Phase, Kept: m.Keep}
		if spare.Is(h) {
			e.Spare = true
			e.Ready, e.Health = spareHealth(h, now)
		}
		live = append(live, e)
	}
	var orphans []opsboard.Orphan
	for _, d := range rep.Decisions {
		if d.Orphan && d.Action != reaper.ActionSwept {
			orphans = append(orphans, opsboard.Orphan{Cluster: d.Cluster, Zone: d.Zone, Detail: string(d.Action)})
		}
	}
	return opsboard.Update(ctx, gh, boardMemory(store, repository), live, orphans, now)
}

// spareHealth is a spare's row on the board: when it was ready, and its health in words (why a
// claim would not take it, or its last check).
func spareHealth(h statestore.Header, now time.Time) (time.Time, string) {
	rec, err := spare.Of(h)
	if err != nil {
		return time.Time{}, "unreadable record: " + err.Error()
	}
	if why := rec.Claimable(now, ""); why != "" {
		return rec.Ready, why
	}
	return rec.Ready, "healthy, checked " + commands.FormatDuration(now.Sub(rec.Checked)) + " ago"
}

// boardMemory keeps the repository's board number in the state bucket.
func boardMemory(store *statestore.Store, repository string) opsboard.Memory {
	return opsboard.StoreMemory(store, repository, statestore.LockInfo{Command: "operator board", Actor: "pocbot"})
}

// clock is the bot's decision clock (a.now, moved only by `bot demo`), time.Now otherwise.
func (a *app) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}
