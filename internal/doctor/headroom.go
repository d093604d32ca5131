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
