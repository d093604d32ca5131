package doctor

import (
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/preflight"
)

// HeadroomName is the checklist's name of the quota and stock item.
const HeadroomName = "quota, stock headroom"

// Headroom turns the pre-flight of one default cluster (what `/poc up` with no options would
// order) into the checklist's item: a failure when the organization's quotas or the offers' stock
// would refuse it, naming the quota or the offers.
func Headroom(pf *preflight.Result) []Item {
	if pf == nil {
		return one(HeadroomName, Skip, "this driver has no pre-flight", "")
	}
	if pf.Refusal != nil {
		return one(HeadroomName, Fail, "one default cluster would be refused: "+pf.Refusal.Error(),
			"free what is in use, raise the quota ("+preflight.QuotasPage+"), or list another offer in worker_offers (.github/poc.yml)")
	}
	var parts []string
	for _, c := range pf.Checks {
		parts = append(parts, fmt.Sprintf("%s: %s left (limit %s, %s)", c.What, c.Headroom(), c.LimitText(), c.From()))
	}
	detail := "one default cluster fits"
	if len(parts) > 0 {
		detail += " (" + strings.Join(parts, "; ") + ")"
	}
	if pf.Offer != "" {
		detail += "; worker offer " + pf.Offer
	}
	items := one(HeadroomName, OK, detail, "")
	if pf.Unread != "" {
		items = one(HeadroomName, Warn, detail+"; the organization's quotas could not be read ("+pf.Unread+"): the limits are quotas: of .github/poc.yml, else Scaleway's documented defaults",
			"rerun `bot init --iam` (it adds OrganizationReadOnly on the organization), or set the organization's real numbers under quotas: in .github/poc.yml")
	}
	for _, r := range pf.Risks {
		items = append(items, one("worker stock", Warn, r, "list another offer under worker_offers in .github/poc.yml")...)
	}
	return items
}

// PoolFitName is the checklist's name of the warm pool's fit in the quotas.
const PoolFitName = "warm pool fit"

// PoolFit is the checklist's item for the repository's warm pool (pool.size of from, its
// .github/poc.yml): whether its spares and one requester's cluster fit the quotas beside what
// runs, from the pre-flight of one default cluster (a spare's quotas are a default cluster's).
func PoolFit(pf *preflight.Result, size, spares int, from string) []Item {
	switch {
	case size == 0:
		return one(PoolFitName, Skip, "no warm pool (pool.size 0 in "+from+")", "")
	case pf == nil:
		return one(PoolFitName, Skip, "this driver has no pre-flight", "")
	}
	f := preflight.FitPool(*pf, size, spares)
	if !f.Fits() {
		return one(PoolFitName, Fail, f.Error()+" (pool.size of "+from+")",
			fmt.Sprintf("set pool.size to %d at most in %s, or raise the quota (%s)", f.MaxSize(), from, preflight.QuotasPage))
	}
	room := "not bounded by a known quota"
	if f.Room >= 0 {
		room = fmt.Sprintf("room for %d more clusters", f.Room)
	}
	return one(PoolFitName, OK, fmt.Sprintf("pool.size %d of %s: %d spares running, %d more and one requester's cluster fit (%s)",
		size, from, spares, max(size-spares, 0), room), "")
}
