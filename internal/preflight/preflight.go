// Package preflight decides, before anything is created, whether an up fits the organization's
// Scaleway quotas and which Elastic Metal offer it takes: a pure function of what the API said
// (quotas, usage, stock) and of what the cluster needs. It knows nothing of the API or of GitHub;
// the Scaleway driver gathers its Input (provision/scaleway.Headroom); chatops (through
// internal/commands) and the CLI's dry run show its Result.
package preflight

import (
	"fmt"
	"strconv"
	"strings"
)

// QuotasPage is where Scaleway lists the default quotas and how to raise them.
const QuotasPage = "https://www.scaleway.com/en/docs/organizations-and-projects/additional-content/organization-quotas/"

// Stock values of an Elastic Metal offer (the offers API's stock).
const (
	StockAvailable = "available"
	StockLow       = "low"
	StockEmpty     = "empty"
)

// Quota is one organization quota as the IAM API lists it.
type Quota struct {
	Limit     int64
	Unlimited bool
}

// Need is what the cluster would add against one quota.
type Need struct {
	Quota string // the API's quota name
	What  string // what it counts, for people ("PLAY2-NANO Instances")
	Count int
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

// Input is what the API said and what the cluster needs.
type Input struct {
	Needs  []Need  // the cluster's needs, the worker excepted
	Offers []Offer // candidates for the worker, in order; empty when the worker exists already
	Quotas map[string]Quota
	Usage  map[string]int // current usage per quota name (parked workers included)
}

// Check is one quota weighed against a need.
type Check struct {
	Quota, What string
	Listed      bool // the API lists this quota (false: not checked)
	Limit       int64
	Unlimited   bool
	Used, Need  int
}

// Fits tells whether the need fits (a quota the API does not list is not checked).
func (c Check) Fits() bool {
	return !c.Listed || c.Unlimited || int64(c.Used+c.Need) <= c.Limit
}

// Headroom is what is left after the need ("unlimited", "not listed", or a number, possibly
// negative).
func (c Check) Headroom() string {
	switch {
	case !c.Listed:
		return "not listed"
	case c.Unlimited:
		return "unlimited"
	}
	return strconv.FormatInt(c.Limit-int64(c.Used+c.Need), 10)
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
	// Offer is the offer taken ("" when the worker exists already or the up is refused).
	Offer string
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
	if r.Check.Quota != "" {
		c := r.Check
		return fmt.Sprintf("Scaleway quota %s (%s) would be exceeded: limit %d, in use %d, this cluster needs %d: "+
			"free some, or ask Scaleway to raise it (%s)", c.Quota, c.What, c.Limit, c.Used, c.Need, QuotasPage)
	}
	var names []string
	for _, c := range r.Candidates {
		names = append(names, c.Offer.Name+" ("+c.Skipped+")")
	}
	return "no Elastic Metal offer can be ordered: " + strings.Join(names, ", ") +
		": list another offer in worker_offers, or retry later"
}

// Decide weighs every need against its quota, then takes the first offer that is in stock and
// within its quota (a parked worker to adopt always fits: it is counted already). The first
// need that does not fit refuses the up, before any offer is considered.
func Decide(in Input) Result {
	var res Result
	for _, n := range in.Needs {
		c := check(in, n)
		res.Checks = append(res.Checks, c)
		if !c.Fits() && res.Refusal == nil {
			res.Refusal = &Refusal{Check: c}
		}
	}
	if res.Refusal != nil || len(in.Offers) == 0 {
		return res
	}
	var quotaMiss *Check
	for _, o := range in.Offers {
		need := 1
		if o.Adopt {
			need = 0
		}
		c := check(in, Need{Quota: o.QuotaName, What: o.Name + " Elastic Metal servers", Count: need})
		cand := Candidate{Offer: o, Check: c}
		switch {
		case res.Offer != "":
		case o.Adopt:
			cand.Taken = true
		case o.Stock == StockEmpty:
			cand.Skipped = "out of stock"
		case !c.Fits():
			cand.Skipped = fmt.Sprintf("quota %s: %d of %d in use", c.Quota, c.Used, c.Limit)
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
		}
		res.Candidates = append(res.Candidates, cand)
	}
	if res.Offer == "" {
		res.Refusal = &Refusal{Candidates: res.Candidates}
		if quotaMiss != nil {
			res.Refusal.Check = *quotaMiss
		}
	}
	return res
}

func check(in Input, n Need) Check {
	q, ok := in.Quotas[n.Quota]
	return Check{Quota: n.Quota, What: n.What, Listed: ok, Limit: q.Limit, Unlimited: q.Unlimited, Used: in.Usage[n.Quota], Need: n.Count}
}

// PoolRefusal is a warm pool (pool.size spares, each a whole cluster) that cannot fit the
// organization's quotas even in an empty project: refused when the pool is configured, naming the
// quota.
type PoolRefusal struct {
	Size  int
	Check Check // Need is the pool's whole need; Used is not counted
}

func (r *PoolRefusal) Error() string {
	c := r.Check
	return fmt.Sprintf("pool.size %d cannot fit: its %d spares need %d %s, and Scaleway quota %s allows %d in the whole organization: "+
		"lower pool.size, list more offers in worker_offers, or ask Scaleway to raise the quota (%s)", r.Size, r.Size, c.Need, c.What, c.Quota, c.Limit, QuotasPage)
}

// FitPool weighs a pool of size spares, each needing what in says a new cluster needs, against
// the quotas alone (a pool must fit before any other cluster runs): every need times size, and
// size workers across the offers' quotas. Nil: it fits (a quota the API does not list is not
// checked).
func FitPool(in Input, size int) *PoolRefusal {
	for _, n := range in.Needs {
		c := check(in, Need{Quota: n.Quota, What: n.What, Count: n.Count * size})
		c.Used = 0
		if !c.Fits() {
			return &PoolRefusal{Size: size, Check: c}
		}
	}
	if len(in.Offers) == 0 {
		return nil
	}
	workers := Check{What: "Elastic Metal servers of the offers " + offerNames(in.Offers), Need: size, Listed: true}
	var quotas []string
	for _, o := range in.Offers {
		q, ok := in.Quotas[o.QuotaName]
		if !ok || q.Unlimited {
			return nil // not listed or unlimited: not checked
		}
		workers.Limit += q.Limit
		quotas = append(quotas, o.QuotaName)
	}
	workers.Quota = strings.Join(quotas, " + ")
	if !workers.Fits() {
		return &PoolRefusal{Size: size, Check: workers}
	}
	return nil
}

// Room is how many more clusters, each needing what in says, fit the quotas beside what is in
// use now (the offers' quotas together for the workers), at most limit; negative is never
// returned. A quota the API does not list bounds nothing.
func Room(in Input, limit int) int {
	room := limit
	for _, n := range in.Needs {
		q, ok := in.Quotas[n.Quota]
		if !ok || q.Unlimited || n.Count == 0 {
			continue
		}
		room = min(room, int(q.Limit-int64(in.Usage[n.Quota]))/n.Count)
	}
	if len(in.Offers) > 0 {
		workers, bounded := 0, true
		for _, o := range in.Offers {
			q, ok := in.Quotas[o.QuotaName]
			if !ok || q.Unlimited {
				bounded = false
				break
			}
			workers += int(q.Limit) - in.Usage[o.QuotaName]
		}
		if bounded {
			room = min(room, workers)
		}
	}
	return max0(room)
}

func max0(n int) int {
	if n < 0 {
		return 0
	}
	return n
}

func offerNames(offers []Offer) string {
	names := make([]string, 0, len(offers))
	for _, o := range offers {
		names = append(names, o.Name)
	}
	return strings.Join(names, ", ")
}
