package chatops

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/statestore"
)

// noCluster answers a verb that needs an existing cluster.
func (r *run) noCluster(ctx context.Context) error {
	return r.refuse(ctx, "no cluster", commands.RenderStatus(commands.StatusView{Cluster: r.cluster}))
}

// down runs `/poc down` (and the pull-request close): the engine tears down in dependency
// order; a down while an up holds the lock asks the up to stop and takes over. A cluster with a
// document gets its status comment; one without (what carries its tag is still swept) one reply.
func (r *run) down(ctx context.Context) error {
	in := r.intent(commands.VerbDown)
	in.ParkFor = r.cfg.ParkFor
	sp := newSteps()
	in.Progress = sp
	var tr *tracked
	in.Started = func(_ context.Context, out *clusterops.Outcome) int64 {
		if !out.Exists {
			return 0
		}
		tr = r.track(ctx, commands.VerbDown, out, sp)
		return tr.sticky.ID()
	}
	done := r.group("down " + r.cluster)
	started := r.h.now()
	res, downErr := r.backend.Ops.Down(ctx, in)
	done()
	if res.Refusal != nil {
		return r.refusal(ctx, res)
	}
	if tr == nil {
		if downErr != nil {
			return r.fail(ctx, downErr)
		}
		dv := downView(r.cluster, res, r.h.now().Sub(started), "")
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
	dv := downView(r.cluster, res, r.h.now().Sub(started), accrued)
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

// cost answers `/poc cost`: the running cluster's prices, accrued and until expiry; without a
// cluster, what the default one would cost.
func (r *run) cost(ctx context.Context) error {
	b := r.backend
	now := r.h.now()
	spec := b.Spec
	var created, expires time.Time
	st := &provision.State{Spec: spec}
	var h statestore.Header
	if r.header != nil {
		_, loaded, err := b.Ops.Load(ctx, r.cluster)
		if err != nil {
			return r.lockedOrFail(ctx, err)
		}
		st, h = loaded, *r.header
		spec, created, expires = st.Spec, r.header.Created, r.header.Expires
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
	if r.header == nil {
		v.Notes = append(v.Notes, "No cluster exists for this issue yet: these are the prices of `/poc up` with the defaults.")
	}
	if paused {
		v.Notes = append(v.Notes, "The cluster is paused ("+r.header.Phase+"): these are its prices until `/poc resume`; the accrued figure counts them over its whole life.")
	}
	v.Notes = append(v.Notes, r.parkingNotes(ctx, spec)...)
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

// status answers `/poc status`: phase, resources, age, expiry, lock holder, health, cost.
func (r *run) status(ctx context.Context) error {
	b := r.backend
	if r.header == nil {
		if _, err := r.reply(ctx, commands.RenderStatus(commands.StatusView{Cluster: r.cluster})); err != nil {
			return err
		}
		r.out.OK = true
		return nil
	}
	s, err := b.Ops.Status(ctx, r.cluster, !clusterops.Paused(*r.header)) // a paused cluster has no node to check
	if err != nil {
		return r.lockedOrFail(ctx, err)
	}
	now := r.h.now()
	// The label counts only when a user with write permission added it; the reaper's recorded
	// "keep" stands in when this event does not carry the labels.
	keep, keepIgnored := r.keepState(ctx)
	meta, merr := clusterops.MetaOf(s.Header)
	if merr != nil {
		r.h.log().Warn("status: header metadata", "err", merr)
	}
	if !r.hasLabel(r.cfg.KeepLabel) && meta.Keep {
		keep = true
	}
	v := commands.StatusView{Cluster: r.cluster, Exists: true, Phase: lifecycle.Phase(s.Header.Phase), Created: s.Header.Created,
		Expires: s.Header.Expires, Now: now, KeepLabel: r.cfg.KeepLabel, Keep: keep, KeepIgnored: keepIgnored}
	v.Parked = r.parkedSummary(ctx)
	if s.Lock != nil {
		v.LockHolder = fmt.Sprintf("run %s (%s by %s)", orDash(s.Lock.RunID), orDash(s.Lock.Command), orDash(s.Lock.Actor))
		v.LockSince = s.Lock.Since
	}
	for _, h := range s.Health {
		detail := h.Detail
		if h.Target != "" {
			detail = h.Target + ": " + detail
		}
		v.Health = append(v.Health, commands.HealthCheck{Name: h.Name, OK: h.OK, Detail: detail})
	}
	v.HealthNote = s.Unreachable
	names := make([]string, 0, len(s.State.Resources))
	for n := range s.State.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rec := s.State.Resources[n]
		v.Resources = append(v.Resources, commands.ResourceLine{Kind: rec.Kind, Name: n, ID: rec.ID, Address: rec.Attrs["address"], State: rec.Status})
	}
	v.APIEndpoints, _ = clusterops.Endpoints(s.State)
	q, qerr := clusterops.QuoteState(ctx, b.Ops.Quoter, s.Header, s.State, 0, true)
	if qerr == nil {
		v.DailyCost, v.Accrued = q.Daily.Format(2), q.Accrued(s.Header.Created, now).Format(2)
	}
	if id := meta.StickyID; id > 0 {
		if c, err := r.h.GitHub.GetComment(ctx, id); err == nil {
			v.StickyURL = c.URL
		}
	}
	if _, err := r.reply(ctx, commands.RenderStatus(v)); err != nil {
		return err
	}
	r.out.OK = true
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// extend answers `/poc extend DURATION` (clusterops.Extend decides the new expiry and max_ttl).
func (r *run) extend(ctx context.Context, d time.Duration) error {
	if r.header == nil {
		return r.noCluster(ctx)
	}
	now := r.h.now()
	res, err := r.backend.Ops.Extend(ctx, r.intent(commands.VerbExtend), d)
	if res.Refusal != nil {
		return r.refusal(ctx, res)
	}
	if err != nil {
		return r.fail(ctx, err)
	}
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
