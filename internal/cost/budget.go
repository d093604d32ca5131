package cost

import (
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/repoconfig"
)

// ClusterCost is what a running cluster costs, as far as the budget guard
// is concerned.
type ClusterCost struct {
	Name  string
	Daily Money
	// Unknown marks a cluster some of whose prices are unknown: its Daily
	// is then a lower bound.
	Unknown bool
	// Parked marks a parked worker (billed, in the daily sum; not a cluster for max_clusters).
	Parked bool
}

// BudgetError says which limit of `.github/poc.yml` a new cluster would
// exceed, with the figures.
type BudgetError struct {
	// Limit is the configuration key: max_clusters, max_daily_eur or
	// allow_unknown_prices.
	Limit string
	// Running is the number of clusters already running.
	Running int
	// Max is the limit's value as written ("3", "€ 15.00").
	Max string
	// Current and Candidate are the daily costs of the running clusters and
	// of the new one (max_daily_eur only); Total = Current + Candidate.
	Current, Candidate, Total Money
	// Detail is the explanation a reply can print as is.
	Detail string
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("budget limit %s of %s: %s", e.Limit, repoconfig.Path, e.Detail)
}

// CheckBudget refuses a new cluster that would exceed the repository's
// limits: more than max_clusters at once, more than max_daily_eur per day
// across the running clusters plus this one, or a compute price unknown
// while allow_unknown_prices is false. It returns nil or a *BudgetError.
// Running clusters with unknown prices count with their known part, and the
// refusal says so.
func CheckBudget(cfg repoconfig.RepoConfig, running []ClusterCost, candidate Quote) error {
	var clusters []ClusterCost
	for _, c := range running {
		if !c.Parked {
			clusters = append(clusters, c)
		}
	}
	if n := len(clusters); n+1 > cfg.MaxClusters {
		names := make([]string, 0, n)
		for _, c := range clusters {
			names = append(names, c.Name)
		}
		return &BudgetError{
			Limit: "max_clusters", Running: n, Max: fmt.Sprint(cfg.MaxClusters),
			Detail: fmt.Sprintf("%d cluster(s) already running (%s), the limit is %d at once — run /poc down on one of them first",
				n, strings.Join(names, ", "), cfg.MaxClusters),
		}
	}
	if !cfg.AllowUnknownPrices {
		var labels []string
		for _, l := range candidate.Unknown() {
			if l.Item.Kind.Compute() {
				labels = append(labels, l.Item.Label())
			}
		}
		if len(labels) > 0 {
			return &BudgetError{
				Limit: "allow_unknown_prices", Running: len(running), Max: "false",
				Detail: fmt.Sprintf("no known price for %s; set allow_unknown_prices: true to create it anyway", strings.Join(labels, ", ")),
			}
		}
	}
	limit := Money{Currency: CurrencyEUR, Nanos: cfg.MaxDailyNanoEUR}
	current := EUR(0, 0)
	partial := false
	for _, c := range running {
		current = current.Add(c.Daily)
		partial = partial || c.Unknown
	}
	total := current.Add(candidate.Daily)
	if total.Cmp(limit) > 0 {
		note := ""
		if partial || candidate.HasUnknown() {
			note = " (some prices unknown: the real figure is higher)"
		}
		return &BudgetError{
			Limit: "max_daily_eur", Running: len(running), Max: limit.Format(2),
			Current: current, Candidate: candidate.Daily, Total: total,
			Detail: fmt.Sprintf("%d running cluster(s) cost %s per day, this one %s per day: %s per day is above the %s limit%s",
				len(running), current.Format(2), candidate.Daily.Format(2), total.Format(2), limit.Format(2), note),
		}
	}
	return nil
}
