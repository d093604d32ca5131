package chatops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// preflightView shows a pre-flight: every quota weighed, every candidate offer with its stock,
// price and outcome.
func preflightView(pf *preflight.Result) *commands.PreflightView {
	if pf == nil {
		return nil
	}
	v := &commands.PreflightView{Unread: pf.Unread, Risks: pf.Risks}
	for _, c := range pf.Checks {
		v.Quotas = append(v.Quotas, quotaRow(c))
	}
	for _, c := range pf.Candidates {
		row := commands.OfferRow{Offer: c.Offer.Name, Stock: c.Offer.Stock}
		if c.Offer.Priced && c.Offer.DailyNanos > 0 {
			row.PerDay = cost.EUR(0, c.Offer.DailyNanos).Format(2)
		}
		switch {
		case c.Taken && c.Offer.Adopt:
			row.Outcome = "taken: adopts a parked worker"
		case c.Taken:
			row.Outcome = "taken: in stock, within its quota"
		case c.Skipped != "":
			row.Outcome = "skipped: " + c.Skipped
		default:
			row.Outcome = "not needed"
		}
		v.Offers = append(v.Offers, row)
	}
	return v
}

func quotaRow(c preflight.Check) commands.QuotaRow {
	return commands.QuotaRow{What: c.What, Limit: c.LimitText(), From: c.From(), Used: c.Used, Need: c.Need, Headroom: c.Headroom(), OK: c.Fits()}
}

// offerChoice says which offer was taken and why the ones before it were not ("" when the first
// and only candidate was taken: nothing to tell).
func offerChoice(pf *preflight.Result) string {
	if pf == nil || pf.Offer == "" || (len(pf.Candidates) == 1 && !pf.Candidates[0].Offer.Adopt) {
		return ""
	}
	s := pf.Offer
	for _, c := range pf.Candidates {
		switch {
		case c.Taken && c.Offer.Adopt:
			s += " (a parked worker adopted)"
		case c.Taken:
			s += " (in stock, within its quota)"
		case c.Skipped != "":
			s += "; " + c.Offer.Name + " skipped: " + c.Skipped
		}
	}
	return s
}

// refusalReason is the refusal in one clause, without the link (the reply adds it).
func refusalReason(ref *preflight.Refusal) string {
	if c := ref.Check; c.Key != "" {
		return fmt.Sprintf("the Scaleway quota of %s would be exceeded: limit %d (%s), in use %d, this cluster needs %d", c.What, c.Limit, c.From(), c.Used, c.Need)
	}
	return ref.Error()
}

// estimate is the up's ETA (nil without an ETA book, or for an existing cluster: a converging up
// has no path to estimate). A parked worker the pre-flight would adopt makes the parked path.
func (r *run) estimate(ctx context.Context, spec provision.Spec, exists bool, pf *preflight.Result) *eta.Estimate {
	if r.backend.ETA == nil || exists {
		return nil
	}
	parked := false
	if pf != nil {
		for _, c := range pf.Candidates {
			parked = parked || (c.Taken && c.Offer.Adopt)
		}
	}
	e := r.backend.ETA.Estimate(ctx, spec, parked)
	return &e
}

// recordDuration adds a finished up's duration to the project's history (what the next ETA of
// its path reads) and, when it ordered its worker, how long the order of offer took to be
// delivered (the worker step: the profile's delivery is learned per offer); a failure to write it
// is only logged.
func (r *run) recordDuration(ctx context.Context, est *eta.Estimate, took time.Duration, offer string, sp *steps) {
	if est == nil || r.backend.ETA == nil {
		return
	}
	var delivery time.Duration
	if !est.Path.Parked {
		delivery = sp.done(scaleway.NodeWorker)
	}
	if err := r.backend.ETA.Record(ctx, est.Path, took, offer, delivery); err != nil {
		r.h.log().Warn("could not record the up's duration", "err", err)
	}
}

// withETA adds the ETA to a pre-flight view (a view of its own when there is no pre-flight).
func withETA(v *commands.PreflightView, est *eta.Estimate) *commands.PreflightView {
	if est == nil {
		return v
	}
	if v == nil {
		v = &commands.PreflightView{}
	}
	v.ETA, v.ETAFrom, v.Path = est.D, est.From, est.Path.String()
	return v
}

// quotaView is the reply's view of an up the pre-flight refused (nil when err is no such refusal).
func quotaView(err error, pf *preflight.Result) *commands.QuotaRefusalView {
	var ref *preflight.Refusal
	if !errors.As(err, &ref) {
		return nil
	}
	v := preflightView(pf)
	if v == nil {
		v = &commands.PreflightView{}
	}
	return &commands.QuotaRefusalView{Reason: refusalReason(ref), Preflight: *v}
}
