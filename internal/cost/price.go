package cost

import (
	"context"
	"fmt"
)

// SourceName says where a price comes from.
type SourceName string

// The price sources, most authoritative first.
const (
	SourceCatalog   SourceName = "catalog"       // product_catalog/v2alpha1 public catalog
	SourceInstance  SourceName = "instance-api"  // instance/v1 products/servers hourly_price
	SourceBaremetal SourceName = "baremetal-api" // baremetal/v1 offers price_per_hour
	SourceTable     SourceName = "table"         // the dated table in this package
)

// Unit is what a price is per.
type Unit string

// Price units.
const (
	PerHour    Unit = "hour"     // per resource and hour
	PerGBHour  Unit = "gb_hour"  // per GB (10⁹ bytes) and hour
	PerGBMonth Unit = "gb_month" // per GB and 730-hour month
	PerMonth   Unit = "month"    // per resource and month (subscriptions)
)

// Availability says whether a source knows a price.
type Availability int

// A price is Known, Missing (this source has none: try the next) or
// Withdrawn (this source says the product is no longer sold: do not fall back
// to an older table figure, report it unknown).
const (
	Missing Availability = iota
	Known
	Withdrawn
)

// Price is one unit price and its provenance.
type Price struct {
	Availability Availability
	Amount       Money
	Unit         Unit
	Source       SourceName
	// Date is when the figure was read (API sources: the quote time) or
	// noted (the table: 2026-10-17), as YYYY-MM-DD.
	Date string
	// Estimate marks a figure no recording or API gave: a labelled guess.
	Estimate bool
	// Ref is the catalog SKU, offer id or table key the price was read from.
	Ref string
	// Note explains an estimate, a withdrawal or a fallback.
	Note string
	// Fee is a one-time setup fee (Elastic Metal offers), zero when none.
	Fee Money
	// Subscription is the monthly-subscription alternative of an hourly
	// Elastic Metal offer, when the source knows it.
	Subscription *Price
}

// IsKnown reports whether the price can be used.
func (p Price) IsKnown() bool { return p.Availability == Known }

// Provenance is the short label a reply prints next to the price, e.g.
// "catalog 2026-10-18" or "table 2026-10-17, estimate".
func (p Price) Provenance() string {
	s := string(p.Source)
	if p.Date != "" {
		s += " " + p.Date
	}
	if p.Estimate {
		s += ", estimate"
	}
	return s
}

// hourly is the per-resource hourly amount of a known price for an item.
func (p Price) hourlyFor(it Item) (Money, error) {
	switch p.Unit {
	case PerHour:
		return p.Amount, nil
	case PerGBHour:
		return p.Amount.MulRat(it.Quantity, GB), nil
	case PerGBMonth:
		// A GB-month is 730 hours here as everywhere in this package; the
		// division rounds half to even to the nano-euro.
		return p.Amount.MulRat(it.Quantity, GB*hoursPerMonth), nil
	case PerMonth:
		return p.Amount.MulRat(1, hoursPerMonth), nil
	}
	return Money{}, fmt.Errorf("price %s for %s has unit %q that cannot be turned into an hourly amount", p.Ref, it.Label(), p.Unit)
}

// Source gives prices for items. Prices returns exactly one Price per item,
// in order, with Availability Missing for items it has no price for. An
// error means the source as a whole failed (unreachable, bad answer): the
// quoter then falls back to the next source and says so.
type Source interface {
	Name() SourceName
	Prices(ctx context.Context, items []Item) ([]Price, error)
}
