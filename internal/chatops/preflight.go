package chatops

import (
	"errors"
	"fmt"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/preflight"
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
