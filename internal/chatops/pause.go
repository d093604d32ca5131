package chatops

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// pauseAnswer answers `/poc pause`: the etcd snapshot into the state bucket, verified, then the
// machines deleted (the worker parked when park_for allows); the status comment says what was
// kept, what the cluster costs per day now, and how to resume.
func (r *run) pauseAnswer(ctx context.Context, in clusterops.Intent, res *clusterops.Outcome, pauseErr error, w *watcher) error {
	tr := w.tr
	if tr == nil {
		return r.fail(ctx, pauseErr) // nothing could be read or written
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
	pv := commands.PausedView{Cluster: r.cluster, Kept: keptByPause(res.Spec, in.ReleaseIPs), Expires: res.Header.Expires, Parked: r.cfg.ParkFor > 0,
		ReleasedIPs: in.ReleaseIPs}
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
	r.retireDeployments(ctx, "paused") // the environment URL no longer answers; the resume's up marks it again
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

// keptByPause lists what a pause keeps, for the status comment.
func keptByPause(spec provision.Spec, releasedIPs bool) []string {
	var kept []string
	if !releasedIPs {
		kept = append(kept, fmt.Sprintf("%d reserved IPv4 (the endpoints, the certificates' names and the kubeconfig stay valid)", spec.CPCount))
	}
	kept = append(kept, "the security group and its rules", "the secrets bundle and CA (in the encrypted state)", "the shared Talos image")
	if spec.DNSZone != "" && !releasedIPs {
		// The edge records named the worker's address, which the pause gave up: the resume
		// writes them again. With --release-ips every record went with its address.
		kept = append(kept, "the API's DNS records in "+spec.DNSZone+" (the edge's go with the worker, and come back with the resume)")
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

// upNote is the note of a ready up's reply: the resume's word on the pause window, if any, and
// with a pause_schedule, when the next scheduled pause is and what the schedule saves a week (the
// reply of the first up under a schedule is where its saving is first shown).
func (r *run) upNote(ctx context.Context, spec provision.Spec) string {
	s := r.cfg.PauseSchedule
	if s == nil {
		return r.note
	}
	note, now := r.note, r.h.now()
	switch {
	case note != "": // the resume's, inside a window
	case s.Paused(now):
		note = fmt.Sprintf("⏰ This is a pause window of `pause_schedule` (%s): the reaper's next scheduled run pauses the cluster (a `/poc resume` then keeps it up until the window ends, %s).",
			commands.Escape(s.String()), s.NextResume(now).UTC().Format("2006-01-02 15:04 UTC"))
	default:
		note = fmt.Sprintf("⏰ The next scheduled pause (`pause_schedule` %s) is %s.", commands.Escape(s.String()), s.NextPause(now).UTC().Format("Mon 2006-01-02 15:04 UTC"))
	}
	if n := r.scheduleNote(ctx, spec); n != "" {
		note += " " + n
	}
	return note
}

// scheduleNote is what the repository's pause_schedule saves on spec's cluster: the share of a
// week it is paused, and the week's cost with and without the schedule (for `/poc cost`).
func (r *run) scheduleNote(ctx context.Context, spec provision.Spec) string {
	s := r.cfg.PauseSchedule
	if s == nil {
		return ""
	}
	running, err1 := clusterops.Quote(ctx, r.backend.Ops.Quoter, spec, 0, true)
	paused, err2 := clusterops.QuotePaused(ctx, r.backend.Ops.Quoter, spec, 0, false, 0)
	if err1 != nil || err2 != nil {
		return ""
	}
	now := r.h.now().In(s.Loc)
	monday := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, s.Loc).AddDate(0, 0, -((int(now.Weekday()) + 6) % 7))
	f := s.WeeklyPausedFraction(monday)
	const perMille = 1000
	pm := int64(f*perMille + 0.5)
	week := running.Daily.Mul(7)
	withSchedule := running.Daily.Mul(7).MulRat(perMille-pm, perMille).Add(paused.Daily.Mul(7).MulRat(pm, perMille))
	saving := week.Sub(withSchedule)
	return fmt.Sprintf("pause_schedule `%s` pauses the cluster %.0f %% of the week: %s a week instead of %s, saving %s (%.1f %%). A /poc command inside a pause window resumes it.",
		commands.Escape(s.String()), 100*f, withSchedule.Format(2), week.Format(2), saving.Format(2), 100*float64(saving.Nanos)/float64(week.Nanos))
}
