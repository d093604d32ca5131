package soak

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The accrual invariant: every accrued figure the bot writes (the up and status tables, the cost
// reply, the down and teardown notices, the expiry warning) is the cluster's daily cost ÷ 24
// times its billed hours — every started hour from the creation its state records to the moment
// it wrote — as Scaleway bills Instances and hourly Elastic Metal servers
// (https://www.scaleway.com/en/pricing/; cost.BilledHours). The soak's prices carry no one-time
// fee, so nothing is added.

// accruedRE finds the accrued figures in a bot comment, in both money forms the replies use
// ("1.43 €" in sentences, "€ 0.54" in the status table).
var accruedRE = regexp.MustCompile(`(?:over its life: |It has cost |\): \*\*|· )(?:€ ([0-9]+(?:\.[0-9]+)?)|([0-9]+(?:\.[0-9]+)?) €)(?:\*\*)?(?: so far| accrued|\.(?:\s|$))`)

// figure is one accrued amount in a comment: as written without the currency, and its phrase.
type figure struct{ amount, phrase string }

// accruedFigures returns body's accrued figures.
func accruedFigures(body string) []figure {
	var out []figure
	for _, m := range accruedRE.FindAllStringSubmatch(body, -1) {
		out = append(out, figure{m[1] + m[2], m[0]})
	}
	return out
}

// life is one incarnation of a cluster as the checker saw it in a state header.
type life struct {
	created time.Time
	daily   []int64 // nano-euros a day: the header's recorded figure and the checker's own quote
}

// perHour is what a cluster costing daily nano-euros a day has accrued after d, as the bot
// writes it (two decimals, without the currency). It is the oracle, so it is worked out here from
// the rule rather than by calling cost.AccruedAtDaily, which the reaper under test uses.
func perHour(daily int64, d time.Duration) string {
	s := cost.EUR(0, daily).MulRat(cost.BilledHours(d), 24).Format(2)
	return strings.TrimSpace(strings.TrimPrefix(s, "€"))
}

// noteLife records the incarnation of a cluster a header shows.
func (c *checker) noteLife(hd statestore.Header, tableDaily int64) {
	if hd.Created.IsZero() {
		return
	}
	var daily []int64
	if m, err := clusterops.MetaOf(hd); err == nil && m.DailyCostNanos > 0 {
		daily = append(daily, m.DailyCostNanos)
	}
	if tableDaily > 0 {
		daily = append(daily, tableDaily)
	}
	lives := c.lives[hd.Cluster]
	for i := range lives {
		if lives[i].created.Equal(hd.Created) {
			for _, d := range daily {
				if !slices.Contains(lives[i].daily, d) {
					lives[i].daily = append(lives[i].daily, d)
				}
			}
			return
		}
	}
	c.lives[hd.Cluster] = append(lives, life{created: hd.Created, daily: daily})
}

// checkAccrual checks the accrued figures of one bot comment against every incarnation of its
// cluster the checker saw, at the clock of a process running when the comment was written. A
// comment on a cluster never seen in a state is skipped.
func (c *checker) checkAccrual(cm ghsim.Comment) (string, bool) {
	figs := accruedFigures(cm.Body)
	if len(figs) == 0 || c.offsetsAt == nil {
		return "", true
	}
	owner, name, _ := strings.Cut(cm.Repo, "/")
	cl := commands.ClusterName(owner, name, cm.Number)
	lives := c.lives[cl]
	if len(lives) == 0 {
		return "", true
	}
	offs := c.offsetsAt(cm.Updated)
	for _, fig := range figs {
		var want []string
		found := false
		for _, l := range lives {
			for _, d := range l.daily {
				for _, off := range offs {
					w := perHour(d, cm.Updated.Add(off).Sub(l.created))
					want = append(want, w)
					found = found || w == fig.amount
				}
			}
		}
		if !found {
			return fmt.Sprintf("comment %d on %s#%d says %q of %s; per started hour since its creation it is one of %v €",
				cm.ID, cm.Repo, cm.Number, fig.phrase, cl, want), false
		}
	}
	return "", true
}
