package cost_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
)

// countingSource prices every item at 1 €/h and records what it was asked; down makes it fail.
type countingSource struct {
	mu    sync.Mutex
	asked [][]string
	down  bool
}

func (*countingSource) Name() cost.SourceName { return cost.SourceCatalog }

func (s *countingSource) Prices(_ context.Context, items []cost.Item) ([]cost.Price, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, it := range items {
		names = append(names, it.Name)
	}
	s.asked = append(s.asked, names)
	if s.down {
		return nil, errors.New("catalog unreachable")
	}
	out := make([]cost.Price, len(items))
	for i := range items {
		out[i] = cost.Price{Source: cost.SourceCatalog, Availability: cost.Known, Amount: cost.EUR(1, 0), Unit: cost.PerHour}
	}
	return out, nil
}

func (s *countingSource) calls() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.asked)
}

// A run quotes the same cluster several times (the budget, the reply, the paused figure, the
// parked worker), and each quote asked every API source again: the catalog's listing per zone,
// the Instance products, the Elastic Metal offers and their monthly offers. A Quoter now reuses
// an API source's price of an item for cost.PriceReuse after reading it, asks only for the items
// it has no fresh price of, and never keeps a failure.
func TestQuoterReusesFreshPrices(t *testing.T) {
	nano := cost.Item{Name: "control planes", Kind: cost.KindInstance, SKU: "PLAY2-NANO", Zone: "fr-par-1", Count: 3}
	em := cost.Item{Name: "worker", Kind: cost.KindBaremetal, SKU: "EM-A116X-SSD", Zone: "fr-par-1"}
	ip := cost.Item{Name: "IPs", Kind: cost.KindIP, Zone: "fr-par-1", Count: 3}
	at := quoteTime
	quote := func(t *testing.T, q *cost.Quoter, now time.Time, items ...cost.Item) cost.Quote {
		t.Helper()
		out, err := q.Quote(ctxT(t), items, cost.QuoteOptions{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	t.Run("the same items again", func(t *testing.T) {
		src := &countingSource{}
		q := cost.NewQuoter(src)
		first := quote(t, q, at, nano, em)
		second := quote(t, q, at.Add(time.Minute), nano, em)
		if got := src.calls(); len(got) != 1 {
			t.Fatalf("asked %v, want once", got)
		}
		if first.Hourly != second.Hourly || second.Hourly != cost.EUR(4, 0) {
			t.Errorf("hourly %s then %s, want € 4 both times", first.Hourly, second.Hourly)
		}
		if d := second.Lines[0].Price.Date; d != at.Format(time.DateOnly) {
			t.Errorf("a reused price is dated %q, want the day it was read, %s", d, at.Format(time.DateOnly))
		}
	})
	t.Run("only what is missing", func(t *testing.T) {
		src := &countingSource{}
		q := cost.NewQuoter(src)
		quote(t, q, at, nano, em)
		quote(t, q, at, em, ip, nano)
		if got, want := src.calls(), [][]string{{"control planes", "worker"}, {"IPs"}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("asked %v, want %v", got, want)
		}
	})
	t.Run("stale after the reuse window", func(t *testing.T) {
		src := &countingSource{}
		q := cost.NewQuoter(src)
		quote(t, q, at, nano)
		quote(t, q, at.Add(cost.PriceReuse), nano)
		if got := src.calls(); len(got) != 2 {
			t.Errorf("asked %v, want again once the price is %s old", got, cost.PriceReuse)
		}
	})
	t.Run("a failure is not kept", func(t *testing.T) {
		src := &countingSource{down: true}
		q := cost.NewQuoter(src, cost.TableSource{})
		if out := quote(t, q, at, nano); len(out.Warnings) == 0 {
			t.Fatalf("no warning for the failed source: %+v", out)
		}
		src.mu.Lock()
		src.down = false
		src.mu.Unlock()
		out := quote(t, q, at, nano)
		if got := src.calls(); len(got) != 2 {
			t.Errorf("asked %v, want again after a failure", got)
		}
		if out.Lines[0].Price.Source != cost.SourceCatalog {
			t.Errorf("priced by %s after the source came back, want the catalog", out.Lines[0].Price.Source)
		}
	})
}
