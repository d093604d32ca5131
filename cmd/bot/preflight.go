package main

import (
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/preflight"
)

// printPreflight prints the quotas' headroom, the offers' stock and prices and the decision.
func printPreflight(a *app, pf *preflight.Result) {
	if pf == nil {
		return
	}
	a.printf("\nScaleway quotas (the organization's; usage counted in this project):\n")
	if pf.Unread != "" {
		a.printf("  the organization's quotas could not be read (%s): quotas: of .github/poc.yml where set, else Scaleway's documented defaults\n", pf.Unread)
	}
	for _, c := range pf.Checks {
		mark := ""
		if !c.Fits() {
			mark = "  EXCEEDED"
		}
		a.printf("  %-26s limit %-9s in use %3d  needs %3d  left %-9s from %s%s\n", c.What, c.LimitText(), c.Used, c.Need, c.Headroom(), c.From(), mark)
	}
	if len(pf.Candidates) > 0 {
		a.printf("worker offers, in order:\n")
	}
	for _, c := range pf.Candidates {
		outcome := "not needed"
		switch {
		case c.Taken && c.Offer.Adopt:
			outcome = "taken (a parked worker adopted)"
		case c.Taken:
			outcome = "taken"
		case c.Skipped != "":
			outcome = "skipped: " + c.Skipped
		}
		price := "—"
		if c.Offer.Priced && c.Offer.DailyNanos > 0 {
			price = cost.EUR(0, c.Offer.DailyNanos).Format(2) + "/day"
		}
		a.printf("  %-16s stock %-10s %-12s %s\n", c.Offer.Name, c.Offer.Stock, price, outcome)
	}
	for _, r := range pf.Risks {
		a.printf("risk: %s\n", r)
	}
	if pf.Refusal != nil {
		a.printf("up would be refused: %s\n", pf.Refusal.Error())
	}
}
