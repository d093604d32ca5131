package reaper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// ActionPaused is a cluster the schedule paused (pause_schedule).
const ActionPaused Action = "paused"

// Pauser pauses one cluster (clusterops.Ops.Pause).
type Pauser interface {
	Pause(ctx context.Context, req clusterops.Intent) (*clusterops.Outcome, error)
}

// schedulePauses pauses the ready clusters of the run's repository that are in a window of
// Config.PauseSchedule: under the cluster's lock (a busy one is left for the next run), with the
// expiry bound Config.MaxPaused (clusterops.Pause prices the paused cluster).
func (r *run) schedulePauses(decided []Decision, headers map[string]statestore.Header) []Decision {
	s := r.cfg.PauseSchedule
	if s == nil || !s.Paused(r.now) {
		return decided
	}
	p := r.cfg.Pauser
	if p == nil {
		p = &r.ops
	}
	for i, d := range decided {
		h, ok := headers[d.Cluster]
		if !ok || d.Action != ActionNone || lifecycle.Phase(h.Phase) != lifecycle.PhaseReady || spare.Is(h) {
			continue // a warm spare is the pool's (pool.hours): paused, no claim could take it
		}
		if m, err := clusterops.MetaOf(h); err == nil && m.AwakeUntil.After(r.now) {
			d.Detail = "awake until " + m.AwakeUntil.Format(time.RFC3339) + " (resumed by a command inside the pause window); " + d.Detail
			decided[i] = d
			continue
		}
		d.Action, d.Detail = ActionPaused, "pause_schedule "+s.String()+"; "+d.Detail
		if r.cfg.DryRun {
			decided[i] = d
			continue
		}
		if r.ctx.Err() != nil {
			d.Action, d.Detail = ActionDeferred, "the run's bound was reached before the scheduled pause"
			decided[i] = d
			continue
		}
		// The schedule's reason must still hold under the lock: a command may have resumed or
		// woken the cluster since the listing.
		req := clusterops.Intent{Cluster: d.Cluster, RequestedBy: r.cfg.Actor, RunID: r.cfg.RunID, Command: "pause (schedule)",
			ParkFor: r.cfg.ParkFor, ShareParked: r.cfg.ShareParked, MaxPaused: r.cfg.MaxPaused, ParkWhileScarce: parkWhileScarce(s, r.now),
			Precondition: clusterops.Precondition{Phase: lifecycle.PhaseReady, AsleepAt: r.now}}
		res, err := p.Pause(r.work, req)
		if err == nil && req.ParkFor <= 0 && workerKept(res) {
			d.Detail += fmt.Sprintf("; the worker was kept parked: %s is not available (register row em-stock), the resume adopts it", res.Spec.BaremetalOffer)
		}
		var le *statestore.LockedError
		switch {
		case errors.As(err, &le):
			d.Action, d.Detail = ActionBusy, "scheduled pause: "+err.Error()
		case errors.Is(err, clusterops.ErrPrecondition):
			d.Action, d.Detail = ActionNone, "scheduled pause skipped: "+err.Error()
		case err != nil:
			d.Action, d.Err = ActionFailed, fmt.Errorf("scheduled pause of %s: %w", d.Cluster, err)
		case r.cfg.Paused != nil && d.Repository == r.cfg.Repository:
			r.cfg.Paused(r.work, d.Cluster, d.Number)
		}
		decided[i] = d
	}
	return decided
}

// parkWhileScarce is how long a scheduled pause keeps the worker parked when its offer is not in
// stock: until the window ends, and an hour for the resume to adopt it.
func parkWhileScarce(s *settings.PauseSchedule, now time.Time) time.Duration {
	return s.NextResume(now).Sub(now) + time.Hour
}

// workerKept tells whether a pause left its cluster's worker in place (parked): its report
// deleted no Elastic Metal server although the state recorded one before.
func workerKept(res *clusterops.Outcome) bool {
	if res == nil || res.Report == nil {
		return false
	}
	for _, d := range res.Report.Deleted {
		if d.Kind == scaleway.KindBaremetal {
			return false
		}
	}
	return res.Spec.BaremetalOffer != ""
}
