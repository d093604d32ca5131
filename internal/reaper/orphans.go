package reaper

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

// orphans finds the tagged clusters that no state document knows and sweeps those older than
// the grace period.
func (r *run) orphans(known map[string]bool) []Decision {
	if err := r.ctx.Err(); err != nil {
		r.report.Bounded = true
		return []Decision{{Orphan: true, Action: ActionDeferred, Detail: "orphan pass skipped: the run's time bound was reached"}}
	}
	groups, err := r.cfg.Inventory.ListTagged(r.ctx, r.cfg.Zones...)
	if err != nil {
		return []Decision{{Orphan: true, Action: ActionFailed, Reason: ReasonOrphan,
			Err: fmt.Errorf("list the bot's tagged resources to find orphans: %w", err)}}
	}
	var out []Decision
	for _, g := range groups {
		if known[g.ClusterID] {
			continue
		}
		out = append(out, r.orphan(g))
	}
	return out
}

func (r *run) orphan(g scaleway.TaggedCluster) Decision {
	d := Decision{Cluster: g.ClusterID, Orphan: true, Zone: string(g.Zone), Reason: ReasonOrphan}
	kinds := map[string]int{}
	for _, res := range g.Resources {
		kinds[res.Kind]++
	}
	var parts []string
	for _, res := range g.Resources {
		if n, ok := kinds[res.Kind]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, res.Kind))
			delete(kinds, res.Kind)
		}
	}
	what := strings.Join(parts, ", ")

	born, dated := g.Oldest()
	if !dated {
		// Reserved IPs carry no creation date: the first sighting, kept in the store, stands in.
		var err error
		born, err = r.firstSeen(g.ClusterID)
		if err != nil {
			d.Action, d.Err = ActionFailed, err
			return d
		}
	}
	age := r.now.Sub(born)
	if age < r.cfg.Grace {
		d.Action = ActionYoung
		d.Detail = fmt.Sprintf("%s without state, %s old (grace %s)", what, commands.FormatDuration(max(age, 0)), commands.FormatDuration(r.cfg.Grace))
		return d
	}
	d.Detail = fmt.Sprintf("%s without state, %s old", what, commands.FormatDuration(age))
	if !r.mayStart(&d, g.ClusterID, ActionSwept) {
		return d
	}
	rep, err := r.sweep(g)
	if rep != nil {
		d.Deleted = rep.Deleted
	}
	var locked *statestore.LockedError
	switch {
	case errors.As(err, &locked):
		d.Action, d.Detail = ActionBusy, d.Detail+"; "+busyDetail(&locked.Holder)
	case errors.Is(err, errHasState):
		d.Action, d.Detail = ActionNone, d.Detail+"; a state document appeared: not an orphan"
	case err != nil:
		d.Action, d.Err = ActionFailed, fmt.Errorf("sweep orphan %s (retried next run): %w", g.ClusterID, err)
	default:
		d.Action = ActionSwept
		d.Detail += fmt.Sprintf("; %d resources deleted", len(d.Deleted))
	}
	return d
}

// firstSeen returns when this cluster's undated orphans were first seen, recording now if never.
func (r *run) firstSeen(cluster string) (time.Time, error) {
	b, err := r.ops.Store.GetArtifact(r.ctx, cluster, artifactSeen)
	if err == nil {
		t, perr := time.Parse(time.RFC3339Nano, string(b))
		if perr == nil {
			return t, nil
		}
		r.log.Warn("unreadable first-seen mark of an orphan; starting its grace again", "cluster", cluster, "err", perr)
	} else if !errors.Is(err, statestore.ErrNotFound) {
		return time.Time{}, fmt.Errorf("read when orphan %s was first seen: %w", cluster, err)
	}
	if !r.cfg.DryRun {
		if _, err := r.ops.Store.PutArtifact(r.ctx, cluster, artifactSeen, []byte(r.now.Format(time.RFC3339Nano))); err != nil {
			return time.Time{}, fmt.Errorf("record when orphan %s was first seen: %w", cluster, err)
		}
	}
	return r.now, nil
}

var errHasState = errors.New("the cluster has a state document")

// sweep destroys what carries the cluster's exact tag, under the cluster's lock and only after
// checking, under that lock, that no document exists: between the listing and now an `up` may
// have started (it writes its document first, holding the lock), and its resources must not be
// taken for orphans. clusterops.Down is not used because it takes the lock itself, which would
// leave a window between this check and the sweep.
func (r *run) sweep(g scaleway.TaggedCluster) (*provision.Report, error) {
	store := r.ops.Store
	// The lease of every lock of the bot: a sweep that dies leaves a lock that lapses when the
	// operator's lock-lease setting says.
	// The sweep holds the cluster's own lock (it must exclude an up of that cluster), and stops
	// when it loses it: everything below runs under the held context.
	h, err := store.Hold(r.work, statestore.ClusterLock(g.ClusterID),
		statestore.LockInfo{Actor: r.cfg.Actor, RunID: r.cfg.RunID, Command: reapCommand + " orphan"}, r.ops.Lease())
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := h.Release(r.work); err != nil {
			r.log.Error("release the orphan's lock", "cluster", g.ClusterID, "err", err)
		}
	}()
	ctx := h.Context()
	if _, err := store.Get(ctx, g.ClusterID); err == nil {
		return nil, errHasState
	} else if !errors.Is(err, statestore.ErrNotFound) {
		return nil, fmt.Errorf("check that %s has no state document: %w", g.ClusterID, err)
	}
	spec := r.cfg.Spec
	spec.Zone = string(g.Zone)
	st, err := provision.NewState(g.ClusterID, spec)
	if err != nil {
		return nil, err
	}
	gr := provision.NewGraph()
	if err := r.ops.Build(gr, spec); err != nil {
		return nil, fmt.Errorf("build the graph to sweep %s: %w", g.ClusterID, err)
	}
	eopts := r.ops.Engine
	if eopts.Logger == nil {
		eopts.Logger = r.log
	}
	rep, err := provision.New(eopts).Down(ctx, gr, st, provision.NewMemorySaver())
	if lost := h.Lost(); lost != nil {
		return rep, fmt.Errorf("sweep orphan %s stopped: %w", g.ClusterID, lost)
	}
	if err != nil {
		return rep, err
	}
	// The first-seen mark and any stale cancel request go with the resources.
	if err := store.DeleteArtifacts(ctx, g.ClusterID); err != nil {
		return rep, fmt.Errorf("orphan %s swept, but its artifacts remain: %w", g.ClusterID, err)
	}
	return rep, nil
}
