package preflight

import (
	"fmt"
	"strings"
)

// Room is how many more clusters like the one a Result weighed the quotas leave room for, beside
// what runs (the usage): the smallest, over the checks, of what is left of the quota divided by
// one cluster's need; for the worker, the sum over its candidate offers in stock of what is left of
// each one's quota (a cluster takes one of them), a parked worker to adopt counting for one more.
// A check with no known number, or unlimited, bounds nothing. It returns -1 when nothing bounds
// it, and the checks that bound it (the worker's offers, or the one need).
func Room(res Result) (int, []Check) {
	room, bound := -1, []Check(nil)
	take := func(n int, by []Check) {
		n = max(n, 0)
		if room < 0 || n < room {
			room, bound = n, by
		}
	}
	for _, c := range res.Checks {
		if c.Known() && !c.Unlimited && c.Need > 0 {
			take(int(c.Limit-int64(c.Used))/c.Need, []Check{c})
		}
	}
	if len(res.Candidates) == 0 {
		return room, bound
	}
	worker, unbounded := 0, false
	var offers []Check
	for _, cand := range res.Candidates {
		c := cand.Check
		switch {
		case cand.Offer.Adopt:
			worker++
		case cand.Offer.Stock == StockEmpty:
			continue
		case !c.Known() || c.Unlimited:
			unbounded = true
		default:
			worker += max(int(c.Limit-int64(c.Used)), 0)
		}
		offers = append(offers, c)
	}
	if !unbounded {
		take(worker, offers)
	}
	return room, bound
}

// PoolFit is whether a warm pool fits the quotas: its spares and one cluster for a requester
// (an up that claims no spare: another spec, --cold, an empty pool), beyond what runs.
type PoolFit struct {
	// Size is pool.size; Spares the repository's spares that run now (counted in the usage).
	Size, Spares int
	// Room is how many more clusters the quotas leave room for (Room; -1: not bounded); Bound
	// the quotas that bound it.
	Room  int
	Bound []Check
}

// FitPool weighs pool.size against the room res leaves (res: the pre-flight of one spare, whose
// usage counts the spares that run).
func FitPool(res Result, size, spares int) PoolFit {
	room, bound := Room(res)
	return PoolFit{Size: size, Spares: spares, Room: room, Bound: bound}
}

// Need is how many more clusters the pool needs: the spares it lacks and one for a requester.
func (f PoolFit) Need() int { return max(f.Size-f.Spares, 0) + 1 }

// Fits tells whether the pool and a requester's cluster fit (a pool of size 0 always does).
func (f PoolFit) Fits() bool { return f.Size == 0 || f.Room < 0 || f.Room >= f.Need() }

// SpareRoom is how many more spares may be built now: the room less the requester's cluster
// (-1: not bounded).
func (f PoolFit) SpareRoom() int {
	if f.Room < 0 {
		return -1
	}
	return max(f.Room-1, 0)
}

// MaxSize is the largest pool.size that fits.
func (f PoolFit) MaxSize() int { return max(f.Spares+f.Room-1, 0) }

// Error says why the pool does not fit, naming the quota and its numbers, and what to do ("" when
// it fits).
func (f PoolFit) Error() string {
	if f.Fits() {
		return ""
	}
	var quotas []string
	for _, c := range f.Bound {
		quotas = append(quotas, fmt.Sprintf("%s: limit %s (%s), in use %d, a cluster needs %d", c.What, c.LimitText(), c.From(), c.Used, max(c.Need, 1)))
	}
	return fmt.Sprintf("pool.size %d does not fit the Scaleway quotas: the pool needs %d more clusters (%d spares missing of %d, and one for a requester who claims none), "+
		"the quota of %s leaves room for %d; set pool.size to %d at most, free some, or ask Scaleway to raise it (%s)",
		f.Size, f.Need(), max(f.Size-f.Spares, 0), f.Size, strings.Join(quotas, "; "), f.Room, f.MaxSize(), QuotasPage)
}
