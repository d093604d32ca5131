// Package preflight decides, before anything is created, whether an up fits the organization's
// Scaleway quotas and which Elastic Metal offer it takes: a pure function of what the API said
// (the quotas it lists, the usage, the stock), of the repository's `quotas:` and of what the
// cluster needs. It knows nothing of the API or of GitHub; the Scaleway driver gathers its Input
// (provision/scaleway.Headroom); chatops (through internal/commands) and the CLI's dry run show
// its Result.
//
// Quotas are found by what they count, not by a guessed name (no source gives the IAM names of
// the Instance quotas: register row quota-names): an Instance type, an offer (whose quota_name
// the offers API documents) or a product, in a quota's name or pretty name (Match). A quota the
// API does not list, or every quota when the key may not read them (register row quota-read),
// is weighed at the repository's `quotas:`, else at Scaleway's documented default; each check
// says which number it used and where it came from.
package preflight

import (
	"fmt"
	"strconv"
	"strings"
)

// Stock values of an Elastic Metal offer (the offers API's stock).
const (
	StockAvailable = "available"
	StockLow       = "low"
	StockEmpty     = "empty"
)

// Need is what the cluster would add against one quota.
type Need struct {
	Key   string // what the quota counts: an Instance type, an offer, or a product key (KeyIPs, …)
	What  string // what it counts, for people ("PLAY2-NANO Instances")
	Count int
	// QuotaName is the quota's documented name, when there is one (an offer's quota_name).
	QuotaName string
}

// Offer is one candidate Elastic Metal offer, in the repository's order (worker_offers).
type Offer struct {
	Name      string
	QuotaName string
	Stock     string
	// DailyNanos is the cluster's price per day with this offer (nano-euros); Priced false when
	// it could not be priced.
	DailyNanos int64
	Priced     bool
	// Adopt is true when a parked worker of this offer will be adopted: nothing is ordered.
	Adopt bool
}

// Input is what the API said, what the repository set and what the cluster needs.
type Input struct {
	Needs  []Need  // the cluster's needs, the worker excepted
	Offers []Offer // candidates for the worker, in order; empty when the worker exists already
	// Listed are the organization's quotas as IAM lists them; Unread says why they could not be
	// read ("" when they were).
	Listed []Listed
	Unread string
	// Overrides are the repository's `quotas:` (.github/poc.yml), by key: the numbers used for a
	// quota the API does not give.
	Overrides map[string]int
	Usage     map[string]int // current usage per key (parked workers included)
}

// Check is one quota weighed against a need.
type Check struct {
	Key, What string
	// Source says where Limit comes from; Names are the API's quota names it was read under
	// (FromAPI), ByPretty that they were recognised by their pretty name.
	Source    Source
	Names     []string
	ByPretty  bool
	Limit     int64
	Unlimited bool
	Used      int
	Need      int
	// Note says more of the source (the documented default's caveat).
	Note string
}

// Known tells whether the check has a number to weigh (else it is not checked).
func (c Check) Known() bool { return c.Source != FromNowhere }

// Fits tells whether the need fits (a quota with no known number is not checked).
func (c Check) Fits() bool {
	return !c.Known() || c.Unlimited || int64(c.Used+c.Need) <= c.Limit
}

// Headroom is what is left after the need ("unlimited", "unknown", or a number, possibly
// negative).
func (c Check) Headroom() string {
	switch {
	case !c.Known():
		return "unknown"
	case c.Unlimited:
		return "unlimited"
	}
	return strconv.FormatInt(c.Limit-int64(c.Used+c.Need), 10)
}

// LimitText is the limit as shown: a number, "unlimited" or "unknown".
func (c Check) LimitText() string {
	switch {
	case !c.Known():
		return "unknown"
	case c.Unlimited:
		return "unlimited"
	}
	return strconv.FormatInt(c.Limit, 10)
}

// From says where the limit comes from, for people.
func (c Check) From() string {
	switch c.Source {
	case FromAPI:
		s := "the organization's quota " + strings.Join(c.Names, ", ")
		if c.ByPretty {
			s += " (recognised by its pretty name)"
		}
		if len(c.Names) > 1 {
			s += " (the smallest of those)"
		}
		return s
	case FromRepo:
		return "quotas: in .github/poc.yml"
	case FromDocs:
		return c.Note
	}
	return "no source: not checked (Scaleway still refuses what exceeds it, mid-run)"
}

// Candidate is one offer and what the decision made of it.
type Candidate struct {
	Offer Offer
	Check Check
	// Skipped says why the offer was not taken ("" for the one taken, or one not reached).
	Skipped string
	Taken   bool
}

// Result is the decision.
type Result struct {
	Checks     []Check
	Candidates []Candidate
	// Offer is the offer taken ("" when the worker exists already or no offer fits).
	Offer string
	// Unread says why the organization's quotas could not be read ("" when they were): the
	// checks then weigh the repository's or the documented numbers.
	Unread string
	// Risks are what may still fail the up although it fits (an offer whose stock is low).
	Risks []string
	// Refusal is set when the up must not start.
	Refusal *Refusal
}

// Refusal is an up that does not fit: nothing may be created. It is an error, so that it travels
// through the operation's error path to the reply.
type Refusal struct {
	// Check is the first quota that does not fit; zero when every offer was out of stock.
	Check      Check
	Candidates []Candidate
}

func (r *Refusal) Error() string {
	if r.Check.Key != "" {
		c := r.Check
		return fmt.Sprintf("Scaleway quota of %s would be exceeded: limit %d (%s), in use %d, this cluster needs %d: "+
			"free some, or ask Scaleway to raise it (%s)", c.What, c.Limit, c.From(), c.Used, c.Need, QuotasPage)
	}
	var names []string
	for _, c := range r.Candidates {
		names = append(names, c.Offer.Name+" ("+c.Skipped+")")
	}
	return "no Elastic Metal offer can be ordered: " + strings.Join(names, ", ") +
		": list another offer in worker_offers, or retry later"
}

// Decide weighs every need against its quota, then takes the first offer that is in stock and
// within its quota (a parked worker to adopt always fits: it is counted already). Every section
// is decided even when one refuses, so that a dry run shows them all; the first need that does
// not fit is the refusal.
func Decide(in Input) Result {
	res := Result{Unread: in.Unread}
	for _, n := range in.Needs {
		c := check(in, n)
		res.Checks = append(res.Checks, c)
		if !c.Fits() && res.Refusal == nil {
			res.Refusal = &Refusal{Check: c}
		}
	}
	if len(in.Offers) == 0 {
		return res
	}
	var quotaMiss *Check
	for _, o := range in.Offers {
		need := 1
		if o.Adopt {
			need = 0
		}
		c := check(in, Need{Key: o.Name, QuotaName: o.QuotaName, What: o.Name + " Elastic Metal servers", Count: need})
		cand := Candidate{Offer: o, Check: c}
		switch {
		case res.Offer != "":
		case o.Adopt:
			cand.Taken = true
		case o.Stock == StockEmpty:
			cand.Skipped = "out of stock"
		case !c.Fits():
			cand.Skipped = fmt.Sprintf("quota: %d of %d in use (%s)", c.Used, c.Limit, c.From())
			if quotaMiss == nil {
				cc := c
				quotaMiss = &cc
			}
		case !o.Priced:
			cand.Skipped = "no price"
		default:
			cand.Taken = true
		}
		if cand.Taken {
			res.Offer = o.Name
			if !o.Adopt && o.Stock == StockLow {
				res.Risks = append(res.Risks, fmt.Sprintf("Elastic Metal offer %s is low on stock: the order may not be delivered "+
					"(the up then fails and the down cleans up); list another offer under worker_offers to have a fallback", o.Name))
			}
		}
		res.Candidates = append(res.Candidates, cand)
	}
	if res.Offer == "" && res.Refusal == nil {
		res.Refusal = &Refusal{Candidates: res.Candidates}
		if quotaMiss != nil {
			res.Refusal.Check = *quotaMiss
		}
	}
	return res
}

// check weighs need n: the organization's quota the API lists for it, else the repository's
// `quotas:`, else the documented default, else no number.
func check(in Input, n Need) Check {
	c := Check{Key: n.Key, What: n.What, Used: in.Usage[n.Key], Need: n.Count, Source: FromNowhere}
	if q, names, pretty, ok := Match(n.Key, n.QuotaName, in.Listed); ok {
		c.Source, c.Names, c.ByPretty, c.Limit, c.Unlimited = FromAPI, names, pretty, q.Limit, q.Unlimited
		return c
	}
	if v, ok := in.Overrides[n.Key]; ok {
		c.Source, c.Limit = FromRepo, int64(v)
		return c
	}
	if v, note, ok := documented(n.Key); ok {
		c.Source, c.Limit, c.Note = FromDocs, v, note
	}
	return c
}

// Ask is what an up asks of the pre-flight beside its spec: the worker's candidate offers, in
// order, and the repository's `quotas:`.
type Ask struct {
	Offers []string
	Quotas map[string]int
}
