package reaper

import (
	"context"
	"fmt"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// ParkedServers lists and deletes the parked workers on Scaleway (scaleway.Driver).
type ParkedServers interface {
	ListParked(ctx context.Context, zones ...scw.Zone) ([]scaleway.ParkedServer, error)
	DeleteParked(ctx context.Context, zone, id string) (bool, error)
}

// Pool is the parked-worker pool (poolstore.Pool).
type Pool interface {
	List(ctx context.Context) (pool.Doc, error)
	Remove(ctx context.Context, serverID string) error
}

// Reasons of the parked pass.
const (
	ReasonParkExpired commands.ReapReason = "park-expired" // past its parked-until
	ReasonParkOrphan  commands.ReapReason = "park-orphan"  // tagged parked, in no pool entry
	ReasonParkStale   commands.ReapReason = "park-stale"   // claimed by an up that stopped before adopting it
)

// parkedName names a parked worker in the report (it belongs to no cluster).
func parkedName(id string) string { return "parked/" + id }

// parked deletes the parked workers past their parked-until, those whose claim is older than the
// grace (the up that claimed one retags it within minutes, or gives its claim up; a rerun takes
// its claim back and renews it), and the servers tagged parked that the pool does not list (a
// down records the entry before the tag; the pool is read again after the servers are listed,
// so a worker parked meanwhile is not taken for an orphan).
func (r *run) parked() []Decision {
	if err := r.ctx.Err(); err != nil {
		r.report.Bounded = true
		return []Decision{{Orphan: true, Action: ActionDeferred, Detail: "parked pass skipped: the run's time bound was reached"}}
	}
	doc, err := r.cfg.Pool.List(r.ctx)
	if err != nil {
		return []Decision{{Action: ActionFailed, Reason: ReasonParkExpired, Err: fmt.Errorf("read the parked-worker pool: %w", err)}}
	}
	var out []Decision
	for _, w := range doc.Expired(r.now) {
		d := Decision{Cluster: parkedName(w.ServerID), Zone: w.Zone, Expires: w.ParkedUntil, Reason: ReasonParkExpired,
			Detail: fmt.Sprintf("parked worker %s (from %s) past its parked-until %s", w.ServerID, w.ParkedFrom, w.ParkedUntil.Format(time.RFC3339))}
		if w.ClaimedBy != "" && r.now.Sub(w.ClaimedAt) < r.cfg.Grace {
			// An up is adopting it: it retags the server or gives the entry up.
			d.Action, d.Detail = ActionYoung, d.Detail+"; claimed by "+w.ClaimedBy
			out = append(out, d)
			continue
		}
		out = append(out, r.deleteParked(d, w.Zone, w.ServerID, true))
	}
	for _, w := range doc.StaleClaims(r.now, r.cfg.Grace) {
		d := Decision{Cluster: parkedName(w.ServerID), Zone: w.Zone, Expires: w.ParkedUntil, Reason: ReasonParkStale,
			Detail: fmt.Sprintf("parked worker %s (from %s) claimed by %s at %s, longer than the grace %s ago: that up stopped before adopting it",
				w.ServerID, w.ParkedFrom, w.ClaimedBy, w.ClaimedAt.Format(time.RFC3339), commands.FormatDuration(r.cfg.Grace))}
		// A server its claimer retagged already is that cluster's: DeleteParked leaves it, the
		// entry goes.
		out = append(out, r.deleteParked(d, w.Zone, w.ServerID, true))
	}
	servers, err := r.cfg.Parked.ListParked(r.ctx, r.cfg.Zones...)
	if err != nil {
		return append(out, Decision{Action: ActionFailed, Reason: ReasonParkOrphan, Err: fmt.Errorf("list the parked servers: %w", err)})
	}
	var again *pool.Doc
	for _, s := range servers {
		if _, ok := doc.Find(s.ID); ok {
			continue
		}
		if again == nil {
			d, err := r.cfg.Pool.List(r.ctx)
			if err != nil {
				return append(out, Decision{Action: ActionFailed, Reason: ReasonParkOrphan, Err: fmt.Errorf("read the parked-worker pool again: %w", err)})
			}
			again = &d
		}
		if _, ok := again.Find(s.ID); ok {
			continue // parked while this pass ran
		}
		d := Decision{Cluster: parkedName(s.ID), Zone: s.Zone, Orphan: true, Reason: ReasonParkOrphan}
		if age := r.now.Sub(s.Created); !s.Created.IsZero() && age < r.cfg.Grace {
			d.Action, d.Detail = ActionYoung, fmt.Sprintf("server tagged %s in no pool entry, %s old (grace %s)", scaleway.ParkedTag, commands.FormatDuration(max(age, 0)), commands.FormatDuration(r.cfg.Grace))
			out = append(out, d)
			continue
		}
		d.Detail = fmt.Sprintf("server %s tagged %s in no pool entry", s.ID, scaleway.ParkedTag)
		out = append(out, r.deleteParked(d, s.Zone, s.ID, false))
	}
	return out
}

func (r *run) deleteParked(d Decision, zone, id string, inPool bool) Decision {
	// No cluster lock guards a parked worker: an adoption retags it first, and DeleteParked
	// leaves alone a server no longer tagged parked.
	if !r.timeLeft(&d) || !r.countLeft(&d) {
		return d
	}
	if r.cfg.DryRun {
		d.Action = ActionSwept
		return d
	}
	deleted, err := r.cfg.Parked.DeleteParked(r.work, zone, id)
	if err != nil {
		d.Action, d.Err = ActionFailed, err
		return d
	}
	if !deleted {
		d.Detail += "; no longer tagged parked (adopted): left alone"
	}
	if inPool {
		if err := r.cfg.Pool.Remove(r.work, id); err != nil {
			d.Action, d.Err = ActionFailed, err
			return d
		}
	}
	d.Action = ActionSwept
	return d
}
