package chatops

import (
	"context"
	"fmt"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// pause runs `/poc pause`: the etcd snapshot into the state bucket, verified, then the machines
// deleted (the worker parked when park_for allows); the status comment says what was kept, what
// the cluster costs per day now, and how to resume.
func (r *run) pause(ctx context.Context) error {
	if r.header == nil {
		return r.noCluster(ctx)
	}
	in := r.intent(commands.VerbPause)
	in.ParkFor = r.cfg.ParkFor
	sp := newSteps()
	in.Progress = sp
	var tr *tracked
	in.Started = func(_ context.Context, out *clusterops.Outcome) int64 {
		tr = r.track(ctx, commands.VerbPause, out, sp)
		return tr.sticky.ID()
	}
	done := r.group("pause " + r.cluster)
	res, pauseErr := r.backend.Ops.Pause(ctx, in)
	done()
	switch {
	case res.Refusal != nil:
		return r.refusal(ctx, res)
	case tr == nil:
		return r.fail(ctx, pauseErr) // not pausable (provisioning, failed…), or nothing could be read
	}
	tr.stop()
	tr.view.StateSerial = res.Header.Serial
	view := &tr.view
	view.Phase = res.Phase
	if pauseErr != nil {
		view.Error = pauseErr.Error() + "\n\nNothing is lost: the machines are deleted only once the snapshot is verified in the bucket. " +
			"`/poc pause` again finishes the pause; `/poc resume` brings the cluster back from wherever it stopped."
		tr.finish(ctx, false, "see the status comment for what failed")
		r.react(ctx, github.ReactionConfused)
		return fmt.Errorf("%w: pause %s: %w", ErrCommandFailed, r.cluster, pauseErr)
	}
	pv := commands.PausedView{Cluster: r.cluster, Kept: keptByPause(res.Spec), Expires: res.Header.Expires, Parked: r.cfg.ParkFor > 0}
	if snap, err := cluster.ParseSnapshot(res.State.Outputs[cluster.OutEtcdSnapshot]); err == nil {
		pv.Snapshot = fmt.Sprintf("%s, verified", byteSize(snap.Size))
	}
	if !res.Quote.Daily.IsZero() {
		pv.DailyCost = res.Quote.Daily.Format(2)
	}
	if running, err := clusterops.Quote(ctx, r.backend.Ops.Quoter, res.Spec, 0, true); err == nil {
		pv.RunningDailyCost = running.Daily.Format(2)
	}
	view.Paused = &pv
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
		return r.refuse(ctx, string(lifecycle.RefuseNotPaused), fmt.Sprintf("😕 **Not run:** cluster `%s` is not paused (it is %s): nothing to resume. "+
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
