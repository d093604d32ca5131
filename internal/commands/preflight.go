package commands

import (
	"fmt"
	"strings"
	"time"
)

// QuotasPage is where Scaleway lists the default quotas and how to raise them (preflight's).
const QuotasPage = "https://www.scaleway.com/en/docs/organizations-and-projects/additional-content/organization-quotas/"

// QuotaRow is one organization quota weighed against what the cluster needs.
type QuotaRow struct {
	What       string // what it counts: "PLAY2-NANO Instances"
	Limit      string // "5", "unlimited", or "unknown" (not checked)
	From       string // where the limit comes from: the API's quota, quotas: of .github/poc.yml, the docs
	Used, Need int
	Headroom   string // what is left after the cluster
	OK         bool
}

// OfferRow is one candidate worker offer and what the pre-flight made of it.
type OfferRow struct {
	Offer   string
	Stock   string
	PerDay  string // the cluster's price per day with this offer
	Outcome string // "taken", "adopts a parked worker", "skipped: out of stock", …
}

// PreflightView is the pre-flight as shown by a dry run, a refusal and the up's status comment.
type PreflightView struct {
	Quotas []QuotaRow
	// Unread says why the organization's quotas could not be read ("" when they were).
	Unread string
	Offers []OfferRow
	// Risks are what may still fail the up although it fits (an offer low on stock).
	Risks []string
	// ETA is the time the up would take on the path shown (0: unknown); ETAFrom says where the
	// figure comes from ("this project's last 5 ups", "the latency profile").
	ETA     time.Duration
	ETAFrom string
	Path    string // "cold", "parked worker", "shared image", …
}

// ETAText is "about 11 min (cold, from …)", or "" when the ETA is unknown.
func (v PreflightView) ETAText() string {
	if v.ETA <= 0 {
		return ""
	}
	min := int((v.ETA + 30*time.Second) / time.Minute)
	var what []string
	if v.Path != "" {
		what = append(what, v.Path)
	}
	if v.ETAFrom != "" {
		what = append(what, "from "+v.ETAFrom)
	}
	s := fmt.Sprintf("about %d min", max(min, 1))
	if len(what) > 0 {
		s += " (" + strings.Join(what, ", ") + ")"
	}
	return s
}

func renderPreflight(v PreflightView) string {
	var b strings.Builder
	if len(v.Quotas) > 0 {
		b.WriteString("**Scaleway quotas** (the organization's; usage counted in this project)\n\n")
		if v.Unread != "" {
			fmt.Fprintf(&b, "The organization's quotas could not be read (%s): the limits below are `quotas:` of `.github/poc.yml` where set, else Scaleway's documented defaults.\n\n",
				cellText(v.Unread, 4*maxCellBytes))
		}
		b.WriteString("| counts | limit | from | in use | this cluster | left |\n|---|---:|---|---:|---:|---:|\n")
		quotas, more := elide(v.Quotas, maxRows)
		for _, q := range quotas {
			mark := ""
			if !q.OK {
				mark = " ❌"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s%s |\n", cellText(q.What, maxCellBytes), cellText(q.Limit, maxCellBytes),
				cellText(q.From, maxCellBytes), q.Used, q.Need, cellText(q.Headroom, maxCellBytes), mark)
		}
		b.WriteString(moreRows(more, "quotas"))
		b.WriteString("\n")
	}
	if len(v.Offers) > 0 {
		b.WriteString("**Worker offers** (in the order of `worker_offers`)\n\n| offer | stock | per day | |\n|---|---|---:|---|\n")
		offers, more := elide(v.Offers, maxRows)
		for _, o := range offers {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", inlineCode(clip(o.Offer, maxCellBytes)), cellText(o.Stock, maxCellBytes),
				cellText(orDash(o.PerDay), maxCellBytes), cellText(o.Outcome, maxCellBytes))
		}
		b.WriteString(moreRows(more, "offers"))
		b.WriteString("\n")
	}
	risks, more := elide(v.Risks, maxRows)
	for _, r := range risks {
		fmt.Fprintf(&b, "> [!WARNING]\n> %s\n\n", cellText(r, maxCellBytes))
	}
	b.WriteString(moreRows(more, "risks"))
	if eta := v.ETAText(); eta != "" {
		fmt.Fprintf(&b, "**ETA:** %s\n\n", cellText(eta, maxCellBytes))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// RenderQuotaRefusal answers an up that the pre-flight refused: nothing was created.
func RenderQuotaRefusal(cluster, reason string, v PreflightView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "😕 **Not created:** cluster `%s` does not fit: %s.\n\n", cluster, cellText(reason, 4*maxCellBytes))
	b.WriteString(renderPreflight(v))
	fmt.Fprintf(&b, "Nothing was created. Free room with `/poc down` on a cluster you no longer need, list another offer under `worker_offers` in `.github/poc.yml`, "+
		"or ask Scaleway to raise the quota (validating the organization's identity raises most of them): %s\n", QuotasPage)
	return fit(b.String())
}
