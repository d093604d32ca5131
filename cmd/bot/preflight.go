package main

import (
	"strconv"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/preflight"
)

// printPreflight prints the quotas' headroom, the offers' stock and prices and the decision.
func printPreflight(a *app, pf *preflight.Result) {
	if pf == nil {
		return
	}
	a.printf("\nScaleway quotas (the organization's; usage counted in this project):\n")
	for _, c := range pf.Checks {
		limit := "not listed"
		switch {
		case c.Listed && c.Unlimited:
			limit = "unlimited"
		case c.Listed:
			limit = strconv.FormatInt(c.Limit, 10)
		}
		mark := ""
		if !c.Fits() {
			mark = "  EXCEEDED"
		}
		a.printf("  %-32s %-24s limit %-10s in use %3d  needs %3d  left %s%s\n", c.Quota, c.What, limit, c.Used, c.Need, c.Headroom(), mark)
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
	if pf.Refusal != nil {
		a.printf("up would be refused: %s\n", pf.Refusal.Error())
	}
}
