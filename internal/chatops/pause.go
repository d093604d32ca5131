package chatops

import (
	"context"
	"errors"
	"fmt"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/statestore"
)

// pause runs `/poc pause`: the etcd snapshot into the state bucket, verified, then the machines
// deleted (the worker parked when park_for allows); the status comment says what was kept, what
// the cluster costs per day now, and how to resume.
func (r *run) pause(ctx context.Context) error {
	b := r.backend
	if r.header == nil {
		return r.noCluster(ctx)
	}
	_, st, err := b.Ops.Load(ctx, r.cluster)
	if err != nil {
		return r.lockedOrFail(ctx, err)
	}
	running, rerr := clusterops.Quote(ctx, b.Quoter, st.Spec, 0, true)
	paused, perr := clusterops.QuotePaused(ctx, b.Quoter, st.Spec, 0, 0)
	req := r.request(commands.VerbPause)
	req.ParkFor = r.cfg.ParkFor
	if perr == nil {
		req.DailyCostNanos = paused.Daily.Nanos
	}
	done := r.group("pause " + r.cluster)
	started := r.h.now()
	var res *clusterops.Result
	tr, pauseErr := r.track(ctx, commands.VerbPause, clusterops.PhasePausing, started, func(p provision.Progress) error {
		req.Progress = p
		var err error
		res, err = b.Ops.Pause(ctx, req)
		return err
	})
	done()
	var le *statestore.LockedError
	if errors.As(pauseErr, &le) {
		return tr.locked(ctx, le)
	}
	if res != nil && res.Header.Serial > 0 {
		tr.view.StateSerial = res.Header.Serial
	}
	view := &tr.view
	if pauseErr != nil {
		view.Phase = clusterops.PhasePausing
		if errors.Is(pauseErr, clusterops.ErrNotPausable) {
			view.Phase = r.header.Phase
		}
		view.Error = pauseErr.Error() + "\n\nNothing is lost: the machines are deleted only once the snapshot is verified in the bucket. " +
			"`/poc pause` again finishes the pause; `/poc resume` brings the cluster back from wherever it stopped."
		tr.finish(ctx, false, "see the status comment for what failed")
		r.react(ctx, github.ReactionConfused)
		return fmt.Errorf("%w: pause %s: %w", ErrCommandFailed, r.cluster, pauseErr)
	}
	pv := commands.PausedView{Cluster: r.cluster, Kept: keptByPause(st.Spec), Expires: res.Header.Expires, Parked: r.cfg.ParkFor > 0}
	if snap, err := cluster.ParseSnapshot(res.State.Outputs[cluster.OutEtcdSnapshot]); err == nil {
		pv.Snapshot = fmt.Sprintf("%s, verified", byteSize(snap.Size))
		if q, err := clusterops.QuotePaused(ctx, b.Quoter, st.Spec, snap.Size, 0); err == nil {
			paused, perr = q, nil
		}
	}
	if perr == nil {
		pv.DailyCost = paused.Daily.Format(2)
	}
	if rerr == nil {
		pv.RunningDailyCost = running.Daily.Format(2)
	}
	view.Phase, view.Paused = clusterops.PhasePaused, &pv
	tr.finish(ctx, true, fmt.Sprintf("paused, %s per day until `/poc resume`", pv.DailyCost))
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

// resume runs `/poc resume`: an up of the paused cluster (its spec unchanged), which creates the
// machines again on the kept IPs and recovers etcd from the snapshot.
func (r *run) resume(ctx context.Context) error {
	if r.header == nil {
		return r.noCluster(ctx)
	}
	if !clusterops.Paused(*r.header) {
		return r.refuse(ctx, "not paused", fmt.Sprintf("😕 **Not run:** cluster `%s` is not paused (it is %s): nothing to resume. "+
			"`/poc pause` pauses it, `/poc up` converges it.\n", r.cluster, commands.Escape(r.header.Phase)))
	}
	return r.up(ctx, commands.UpOptions{})
}

// keptByPause lists what a pause keeps, for the status comment.
func keptByPause(spec provision.Spec) []string {
	kept := []string{fmt.Sprintf("%d reserved IPv4 (the endpoints, the certificates' names and the kubeconfig stay valid)", spec.CPCount),
		"the security group and its rules", "the secrets bundle and CA (in the encrypted state)", "the shared Talos image"}
	if spec.DNSZone != "" {
		kept = append(kept, "the DNS records in "+spec.DNSZone)
	}
	return kept
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
