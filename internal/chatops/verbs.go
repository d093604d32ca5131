package chatops

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/provision"
)

// downAnswer answers `/poc down` (and the pull-request close): the engine tore down in
// dependency order (a down while an up holds the lock asked the up to stop and took over). A
// cluster with a document has its status comment; one without (what carries its tag was still
// swept) one reply.
func (r *run) downAnswer(ctx context.Context, res *clusterops.Outcome, downErr error, w *watcher) error {
	tr := w.tr
	if tr == nil {
		if downErr != nil {
			return r.fail(ctx, downErr)
		}
		dv := downView(r.cluster, res, r.h.now().Sub(w.started), "")
		if _, err := r.reply(ctx, commands.RenderDown(dv)); err != nil {
			return err
		}
		r.out.OK = true
		r.react(ctx, github.ReactionHooray)
		return nil
	}
	tr.stop()
	accrued := ""
	if q, err := clusterops.Quote(ctx, r.backend.Ops.Quoter, res.Spec, 0, true); err == nil {
		accrued = q.Accrued(res.Header.Created, r.h.now()).Format(2)
	}
	dv := downView(r.cluster, res, r.h.now().Sub(w.started), accrued)
	view := &tr.view
	view.Down, view.Phase = &dv, res.Phase
	view.StateSerial = 0 // the state is deleted: nothing left to witness
	summary := fmt.Sprintf("%d resources deleted", len(dv.Deleted))
	if accrued != "" {
		summary += ", " + accrued + " over its life"
	}
	if downErr != nil {
		view.StateSerial = res.Header.Serial
		view.Error = downErr.Error() + "\n\n`/poc down` again retries; the reaper retries on its next run."
		summary = "some resources remain, see the status comment"
	}
	tr.finish(ctx, downErr == nil, summary)
	r.summary(commands.RenderDown(dv))
	if downErr != nil {
		r.react(ctx, github.ReactionConfused)
		return fmt.Errorf("%w: down %s: %w", ErrCommandFailed, r.cluster, downErr)
	}
	r.retireDeployments(ctx, "torn down")
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

func downView(name string, res *clusterops.Outcome, took time.Duration, accrued string) commands.DownView {
	dv := commands.DownView{Cluster: name, Duration: took, Accrued: accrued}
	if res != nil && res.Report != nil {
		dv.Duration = res.Report.Elapsed
		for _, d := range res.Report.Deleted {
			dv.Deleted = append(dv.Deleted, commands.DeletedResource{Kind: d.Kind, Name: d.Name, ID: d.ID})
		}
	}
	return dv
}

// costView lays a quote out for commands.RenderCost; zero times leave their figures out.
func costView(name string, q cost.Quote, created, now, expires time.Time) commands.CostView {
	v := commands.CostView{Cluster: name, TotalHourly: q.Hourly.Format(5), TotalDaily: q.Daily.Format(2),
		TotalMonthly: q.Monthly.Format(2), Created: created, Expires: expires, Now: now}
	for _, row := range q.Rows() {
		v.Lines = append(v.Lines, commands.CostLine{Resource: row.Resource, Hourly: row.Hourly, Daily: row.Daily, Monthly: row.Monthly, Source: row.Source})
		if row.OneTime != "" {
			v.Fees = append(v.Fees, commands.Fee{Name: row.Resource, Amount: row.OneTime, Source: row.Source})
		}
	}
	if !created.IsZero() {
		v.Accrued = q.Accrued(created, now).Format(2)
	}
	if !expires.IsZero() && expires.After(now) {
		v.UntilExpiry = q.UntilExpiry(now, expires).Format(2)
	}
	for _, a := range q.Alternatives {
		v.Notes = append(v.Notes, fmt.Sprintf("%s: a %d-month subscription would cost %s in total (saves %s)",
			a.Item.Label(), a.Months, a.Total.Format(2), a.Saving.Format(2)))
	}
	v.Notes = append(v.Notes, q.Warnings...)
	if q.HasUnknown() {
		v.Notes = append(v.Notes, "Some prices are unknown: the totals are lower bounds.")
	}
	return v
}

// costAnswer answers `/poc cost`: the cluster's prices, accrued and until expiry; without a
// cluster, what the default one would cost.
func (r *run) costAnswer(ctx context.Context, res *clusterops.Outcome) error {
	b := r.backend
	now := r.h.now()
	spec := res.Spec
	st := &provision.State{Spec: spec}
	var created, expires time.Time
	h := res.Header
	if res.Exists {
		st = res.State
		created, expires = h.Created, h.Expires
	}
	paused := clusterops.Paused(h)
	life := r.cfg.DefaultTTL
	if !expires.IsZero() {
		life = expires.Sub(now)
	}
	q, err := clusterops.QuoteState(ctx, b.Ops.Quoter, h, st, life, true)
	if err != nil {
		return r.fail(ctx, fmt.Errorf("price cluster %q: %w", r.cluster, err))
	}
	v := costView(r.cluster, q, created, now, expires)
	if !res.Exists {
		v.Notes = append(v.Notes, "No cluster exists for this issue yet: these are the prices of `/poc up` with the defaults.")
	}
	if paused {
		v.Notes = append(v.Notes, "The cluster is paused ("+h.Phase+"): these are its prices until `/poc resume`; the accrued figure counts them over its whole life.")
	}
	v.Notes = append(v.Notes, r.parkingNotes(ctx, spec)...)
	if n := r.poolNote(ctx); n != "" {
		v.Notes = append(v.Notes, n)
	}
	if n := r.scheduleNote(ctx, spec); n != "" {
		v.Notes = append(v.Notes, n)
	}
	if _, err := r.reply(ctx, commands.RenderCost(v)); err != nil {
		return err
	}
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

// statusAnswer answers `/poc status`: phase, resources, age, expiry, lock holder, health, cost.
func (r *run) statusAnswer(ctx context.Context, res *clusterops.Outcome) error {
	b := r.backend
	if !res.Exists {
		if _, err := r.reply(ctx, commands.RenderStatus(commands.StatusView{Cluster: r.cluster})); err != nil {
			return err
		}
		r.out.OK = true
		return nil
	}
	s := res.Status
	v := clusterops.StatusView(ctx, s, b.Ops.Quoter, r.h.now())
	if v.MetaNote != "" {
		r.h.log().Warn("status: header metadata", "err", v.MetaNote)
	}
	// The label counts only when a user with write permission added it; the reaper's recorded
	// "keep" (v.Keep) stands in when this event does not carry the labels.
	keep, keepIgnored := r.keepState(ctx)
	v.Keep, v.KeepIgnored, v.KeepLabel = keep || (v.Keep && !r.hasLabel(r.cfg.KeepLabel)), keepIgnored, r.cfg.KeepLabel
	v.Parked = r.parkedSummary(ctx)
	v.StickyURL = r.status.URL // read before the operation: no GitHub call under its lock
	if _, err := r.reply(ctx, commands.RenderStatus(v)); err != nil {
		return err
	}
	r.out.OK = true
	return nil
}

// extendAnswer answers `/poc extend DURATION` (clusterops decided the new expiry and max_ttl).
func (r *run) extendAnswer(ctx context.Context, res *clusterops.Outcome) error {
	now := r.h.now()
	h := res.Header
	body := fmt.Sprintf("⏰ Cluster `%s` now expires at **%s** (in %s). The `%s` label pauses expiry altogether.\n",
		r.cluster, h.Expires.UTC().Format("2006-01-02 15:04 UTC"), commands.FormatDuration(h.Expires.Sub(now)), r.cfg.KeepLabel)
	if _, err := r.reply(ctx, body); err != nil {
		return err
	}
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

// poolNote is `/poc cost`'s line for the repository's warm pool: its spares, per day and accrued
// ("" without spares; a pool that cannot be read is said, not fatal).
func (r *run) poolNote(ctx context.Context) string {
	c, err := r.backend.Ops.CostOfPool(ctx, r.ev.FullName())
	switch {
	case err != nil && c.Spares == 0:
		r.h.log().Warn("the warm pool's cost", "err", err)
		return "The warm pool's cost could not be read: " + commands.Redact(err.Error())
	case c.Spares == 0:
		return ""
	}
	return fmt.Sprintf("Warm pool of this repository: %d spare(s), %s per day, %s accrued (whole clusters, billed while they wait; counted by the budget; pool.size %d).",
		c.Spares, c.Daily.Format(2), c.Accrued.Format(2), r.cfg.Pool.Size)
}
