package cost

import (
	"context"
)

// TableDate is the date the table's figures were noted (docs/seed.md, Prices).
const TableDate = "2026-10-17"

// TableEntry is one row of the dated table.
type TableEntry struct {
	Kind Kind
	// SKU for compute items; for block volumes the IOPS class selects the row.
	SKU  string
	IOPS uint32
	Unit Unit
	// Amount is exact: no more digits than the figure it comes from.
	Amount   Money
	Estimate bool
	Note     string
	// Subscription is the monthly price of the same hardware, when noted.
	Subscription *TableEntry
}

// Table returns the dated table (prices noted 2026-10-17, excl. VAT, EUR).
//
// Compute figures are the recorded API values (fixtures/ cassettes):
// PLAY2-NANO hourly_price 0.02754 (products/servers, fr-par-1) and the
// EM-A116X-SSD hourly offer price_per_hour 0.077 with a zero setup fee.
//
// Minor items are ESTIMATES — no recording prices them — and are labelled so
// wherever they are shown:
//   - flexible IPv4: 0.004 €/h, the example rate in Scaleway's IP billing docs;
//   - block volume 5K IOPS: 0.000118 €/GB·h (≈ 0.086 €/GB per 730-h month);
//   - block volume 15K IOPS: 0.000151 €/GB·h (≈ 0.11 €/GB per month);
//   - block snapshot: 0.000044 €/GB·h (≈ 0.032 €/GB per month);
//   - Object Storage standard: 0.0146 €/GB per month.
//
// The EM-A116X-SSD monthly subscription (27.99 €/month) is the seed's figure:
// the recordings list only the hourly offer, so it is labelled an estimate.
func Table() []TableEntry {
	return []TableEntry{
		{Kind: KindInstance, SKU: "PLAY2-NANO", Unit: PerHour, Amount: EUR(0, 27_540_000),
			Note: "recorded products/servers hourly_price"},
		{Kind: KindBaremetal, SKU: "EM-A116X-SSD", Unit: PerHour, Amount: EUR(0, 77_000_000),
			Note: "recorded hourly offer price_per_hour",
			Subscription: &TableEntry{Kind: KindBaremetal, SKU: "EM-A116X-SSD", Unit: PerMonth, Amount: EUR(27, 990_000_000),
				Estimate: true, Note: "seed's monthly figure; no recording of the monthly offer"}},
		{Kind: KindIP, Unit: PerHour, Amount: EUR(0, 4_000_000), Estimate: true,
			Note: "example rate from Scaleway's IP billing docs"},
		{Kind: KindBlockVolume, IOPS: 5000, Unit: PerGBHour, Amount: EUR(0, 118_000), Estimate: true,
			Note: "estimate, no recording prices block volumes"},
		{Kind: KindBlockVolume, IOPS: 15000, Unit: PerGBHour, Amount: EUR(0, 151_000), Estimate: true,
			Note: "estimate, no recording prices block volumes"},
		{Kind: KindSnapshot, Unit: PerGBHour, Amount: EUR(0, 44_000), Estimate: true,
			Note: "estimate, no recording prices snapshots"},
		{Kind: KindObjectStorage, Unit: PerGBMonth, Amount: EUR(0, 14_600_000), Estimate: true,
			Note: "estimate, no recording prices Object Storage"},
	}
}

// TableSource prices items from the dated table. The zone does not matter:
// Scaleway's public prices are the same in every zone.
type TableSource struct {
	// Entries overrides Table() (tests); nil uses Table().
	Entries []TableEntry
}

// Name implements Source.
func (TableSource) Name() SourceName { return SourceTable }

// Prices implements Source; it never fails.
func (t TableSource) Prices(_ context.Context, items []Item) ([]Price, error) {
	entries := t.Entries
	if entries == nil {
		entries = Table()
	}
	out := make([]Price, len(items))
	for i, it := range items {
		if e, ok := lookupTable(entries, it); ok {
			out[i] = e.price()
		}
	}
	return out, nil
}

// LookupTable finds the table row for an item.
func LookupTable(it Item) (TableEntry, bool) { return lookupTable(Table(), it) }

func lookupTable(entries []TableEntry, it Item) (TableEntry, bool) {
	for _, e := range entries {
		if e.Kind != it.Kind {
			continue
		}
		switch it.Kind {
		case KindInstance, KindBaremetal:
			if e.SKU == it.SKU {
				return e, true
			}
		case KindBlockVolume:
			if e.IOPS == it.IOPS {
				return e, true
			}
		default:
			return e, true
		}
	}
	return TableEntry{}, false
}

func (e TableEntry) price() Price {
	p := Price{
		Availability: Known, Amount: e.Amount, Unit: e.Unit, Source: SourceTable, Date: TableDate,
		Estimate: e.Estimate, Ref: tableRef(e), Note: e.Note,
	}
	if e.Subscription != nil {
		s := e.Subscription.price()
		p.Subscription = &s
	}
	return p
}

func tableRef(e TableEntry) string {
	switch {
	case e.SKU != "":
		return "table:" + e.SKU
	case e.IOPS != 0:
		return "table:" + string(e.Kind) + ":" + iopsLabel(e.IOPS)
	}
	return "table:" + string(e.Kind)
}
