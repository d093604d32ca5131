package cost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

const (
	hoursPerDay   = 24
	hoursPerMonth = 730 // Scaleway's (and this package's) month
)

// Line is one priced item of a quote.
type Line struct {
	Item  Item
	Price Price
	// Hourly, Daily (×24) and Monthly (×730) are for the whole line
	// (count × size); zero and meaningless when the price is unknown.
	Hourly, Daily, Monthly Money
	// OneTime is the setup fee for the whole line.
	OneTime Money
	// CrossChecks are the other API sources' figures for the same item,
	// hourly, with a note when they disagree with the chosen price.
	CrossChecks []Price
}

// Known reports whether the line has a usable price.
func (l Line) Known() bool { return l.Price.IsKnown() }

// Alternative is the monthly subscription of an hourly item, shown when it
// would cost less than hourly billing over the cluster's remaining lifetime.
type Alternative struct {
	Item Item
	// Months is how many months of subscription cover the remaining
	// lifetime (at least one: a subscription is a monthly commitment).
	Months int64
	// Subscription is the monthly unit price (with its provenance).
	Subscription Price
	// Total is Months × monthly price × count + setup fee; Hourly is the
	// same lifetime billed by the hour; Saving = Hourly − Total (> 0).
	Total, Hourly, Saving Money
}

// Quote is the priced list of items.
type Quote struct {
	Lines []Line
	// Totals of the known lines.
	Hourly, Daily, Monthly, OneTime Money
	// Alternatives are cheaper monthly subscriptions, if any.
	Alternatives []Alternative
	// Warnings say which source failed, which price was an estimate
	// fallback, which sources disagreed. Plain text, no secrets.
	Warnings []string
	// PricedAt is when the quote was made.
	PricedAt time.Time
}

// Unknown lists the lines whose price no source knows.
func (q Quote) Unknown() []Line {
	var out []Line
	for _, l := range q.Lines {
		if !l.Known() {
			out = append(out, l)
		}
	}
	return out
}

// HasUnknown reports whether some line's price is unknown (so every total
// is a lower bound).
func (q Quote) HasUnknown() bool { return len(q.Unknown()) > 0 }

// BilledHours is the number of hours billed for a duration: every started
// hour counts (hourly billing), nothing for a zero or negative duration.
func BilledHours(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	h := int64(d / time.Hour)
	if d%time.Hour != 0 {
		h++
	}
	return h
}

// Accrued is what the cluster has cost from created to now: the hourly total
// times the billed hours (every started hour), plus the one-time fees.
func (q Quote) Accrued(created, now time.Time) Money {
	return q.Hourly.Mul(BilledHours(now.Sub(created))).Add(q.OneTime)
}

// AccruedAtDaily is Accrued for a cluster known only by its daily cost (the figure its state
// header records): a 24th of it per started hour. One-time fees are not in that figure.
func AccruedAtDaily(daily Money, created, now time.Time) Money {
	return daily.MulRat(BilledHours(now.Sub(created)), 24)
}

// UntilExpiry is what the cluster will still cost from now until it
// expires, zero once expired. The hour in progress is already in Accrued, so
// only the whole hours left are counted: Accrued(created, now) +
// UntilExpiry(now, expires) is the cost of the whole lifetime (to within one
// hour when the lifetime is not a whole number of hours).
func (q Quote) UntilExpiry(now, expires time.Time) Money {
	left := expires.Sub(now)
	if left <= 0 {
		return q.Hourly.Mul(0)
	}
	return q.Hourly.Mul(int64(left / time.Hour))
}

// UnknownPriceError says compute items have no known price: `up` must refuse
// unless the repository config sets allow_unknown_prices.
type UnknownPriceError struct {
	Items []Item
	// Reasons, one per item: "no source has a price", "end of sale (catalog)".
	Reasons []string
}

func (e *UnknownPriceError) Error() string {
	parts := make([]string, len(e.Items))
	for i, it := range e.Items {
		parts[i] = it.Label()
		if i < len(e.Reasons) && e.Reasons[i] != "" {
			parts[i] += " (" + e.Reasons[i] + ")"
		}
	}
	return "unknown price for compute item(s): " + strings.Join(parts, ", ") +
		"; refusing rather than counting them as free — set allow_unknown_prices: true in .github/poc.yml to proceed anyway"
}

// QuoteOptions tune a quote.
type QuoteOptions struct {
	// AllowUnknown turns the UnknownPriceError for compute items off.
	AllowUnknown bool
	// Lifetime is the cluster's remaining lifetime, for the monthly
	// subscription alternative; zero skips alternatives.
	Lifetime time.Duration
	// Now is the quote time (default time.Now).
	Now time.Time
}

// Quoter prices items from Sources tried in order.
type Quoter struct {
	Sources []Source
	Logger  *slog.Logger
	// CrossCheckTolerance is the largest hourly difference between two API
	// sources that is not reported (default 1 µ€/h: the Instance API's float
	// prices are rounded, e.g. 0.065076 vs the catalog's 0.065075999).
	CrossCheckTolerance Money

	mu   sync.Mutex
	read map[readKey]readPrice // what each source answered, by item (prices)
}

// PriceReuse is how long a Quoter reuses a source's price of an item once read. One run quotes
// the same cluster several times (its budget, its reply, a paused or a parked figure), and each
// quote asked every source again: the catalog's listing of each zone, the Instance products,
// the Elastic Metal offers and their monthly offers. A run lasts minutes; a price changes by
// announcement, not within them.
const PriceReuse = 10 * time.Minute

type readKey struct {
	source int // index in Sources
	item   Item
}

type readPrice struct {
	price Price
	at    time.Time // the quote time of the reading
}

// NewQuoter builds a Quoter over the given sources, in order. Append a
// TableSource last so that an unreachable API still gives an answer.
func NewQuoter(sources ...Source) *Quoter {
	return &Quoter{Sources: sources, Logger: slog.Default(), CrossCheckTolerance: EUR(0, 1000)}
}

// Quote prices the items. When a compute item's price is unknown and
// opts.AllowUnknown is false, it returns the full Quote (unknown lines
// included) together with an *UnknownPriceError. Other errors mean the items
// are malformed.
func (q *Quoter) Quote(ctx context.Context, items []Item, opts QuoteOptions) (Quote, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	log := q.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, it := range items {
		if err := it.validate(); err != nil {
			return Quote{}, fmt.Errorf("quote: %w", err)
		}
	}
	out := Quote{PricedAt: now.UTC(), Hourly: EUR(0, 0), Daily: EUR(0, 0), Monthly: EUR(0, 0), OneTime: EUR(0, 0)}

	// Ask every source: the first known price wins, the others' API figures
	// cross-check it.
	answers := make([][]Price, len(q.Sources))
	for si, src := range q.Sources {
		if err := ctx.Err(); err != nil {
			return Quote{}, fmt.Errorf("quote: %w", err)
		}
		ps, err := q.prices(ctx, si, items, out.PricedAt)
		if err != nil {
			log.WarnContext(ctx, "price source failed, falling back", "source", src.Name(), "err", err)
			out.Warnings = append(out.Warnings, fmt.Sprintf("price source %s unavailable (%v): later sources used", src.Name(), err))
			continue
		}
		answers[si] = ps
	}

	var unknown []Item
	var reasons []string
	for i, it := range items {
		line := Line{Item: it}
		chosen := -1
		withdrawn := ""
		for si := range q.Sources {
			if answers[si] == nil {
				continue
			}
			p := answers[si][i]
			if p.Availability == Withdrawn && chosen < 0 {
				withdrawn = fmt.Sprintf("withdrawn from sale per %s: %s", p.Source, p.Note)
				line.Price = p
				break
			}
			if !p.IsKnown() {
				continue
			}
			if chosen < 0 {
				chosen = si
				line.Price = p
				continue
			}
			if p.Source != SourceTable {
				line.CrossChecks = append(line.CrossChecks, p)
			}
		}
		switch {
		case withdrawn != "":
			if it.Kind.Compute() {
				unknown, reasons = append(unknown, it), append(reasons, withdrawn)
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: price unknown, %s", it.Label(), withdrawn))
		case chosen < 0:
			line.Price = Price{Availability: Missing, Note: "no source has a price"}
			if it.Kind.Compute() {
				unknown, reasons = append(unknown, it), append(reasons, "no source has a price")
			}
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: price unknown, no source has one", it.Label()))
		default:
			if err := q.fill(&line, &out); err != nil {
				return Quote{}, fmt.Errorf("quote %s: %w", it.Label(), err)
			}
			if q.Sources[chosen].Name() == SourceTable && len(q.Sources) > 1 && line.Price.Estimate {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s: labelled estimate from the %s table", it.Label(), TableDate))
			}
		}
		out.Lines = append(out.Lines, line)
	}
	if opts.Lifetime > 0 {
		out.Alternatives = alternatives(out.Lines, opts.Lifetime)
	}
	if len(unknown) > 0 && !opts.AllowUnknown {
		return out, &UnknownPriceError{Items: unknown, Reasons: reasons}
	}
	return out, nil
}

func (q *Quoter) fill(line *Line, out *Quote) error {
	it := line.Item
	unit, err := line.Price.hourlyFor(it)
	if err != nil {
		return err
	}
	line.Hourly = unit.Mul(it.count())
	line.Daily = line.Hourly.Mul(hoursPerDay)
	line.Monthly = line.Hourly.Mul(hoursPerMonth)
	line.OneTime = line.Price.Fee.Mul(it.count())
	for i, c := range line.CrossChecks {
		ch, err := c.hourlyFor(it)
		if err != nil {
			continue
		}
		diff := ch.Sub(unit)
		if diff.Nanos < 0 {
			diff.Nanos = -diff.Nanos
		}
		if diff.Cmp(q.CrossCheckTolerance) > 0 {
			msg := fmt.Sprintf("%s disagrees: %s/h vs %s/h from %s", c.Source, ch, unit, line.Price.Source)
			line.CrossChecks[i].Note = msg
			out.Warnings = append(out.Warnings, it.Label()+": "+msg)
		}
	}
	out.Hourly = out.Hourly.Add(line.Hourly)
	out.Daily = out.Daily.Add(line.Daily)
	out.Monthly = out.Monthly.Add(line.Monthly)
	out.OneTime = out.OneTime.Add(line.OneTime)
	return nil
}

// alternatives compares, for each line with a known monthly subscription,
// hourly billing over the remaining lifetime with whole months of
// subscription (plus its setup fee).
func alternatives(lines []Line, lifetime time.Duration) []Alternative {
	var out []Alternative
	hours := BilledHours(lifetime)
	for _, l := range lines {
		s := l.Price.Subscription
		if !l.Known() || s == nil || !s.IsKnown() || s.Unit != PerMonth {
			continue
		}
		months := max((hours+hoursPerMonth-1)/hoursPerMonth, 1)
		total := s.Amount.Mul(months).Mul(l.Item.count()).Add(s.Fee.Mul(l.Item.count()))
		hourly := l.Hourly.Mul(hours)
		if total.Cmp(hourly) < 0 {
			out = append(out, Alternative{Item: l.Item, Months: months, Subscription: *s, Total: total, Hourly: hourly, Saving: hourly.Sub(total)})
		}
	}
	return out
}

// IsUnknownPrice reports whether err carries an UnknownPriceError.
func IsUnknownPrice(err error) bool {
	var u *UnknownPriceError
	return errors.As(err, &u)
}

// prices is source si's price of each item, stamped with the day it was read: the ones it gave
// less than PriceReuse before now are reused, the others asked in one call. A failure is not
// kept: the next quote asks again. The lock guards the map only, never a call.
func (q *Quoter) prices(ctx context.Context, si int, items []Item, now time.Time) ([]Price, error) {
	out := make([]Price, len(items))
	var missing []Item
	var at []int
	q.mu.Lock()
	for i, it := range items {
		r, ok := q.read[readKey{si, it}]
		if ok && !now.Before(r.at) && now.Sub(r.at) < PriceReuse {
			out[i] = r.price
			continue
		}
		missing, at = append(missing, it), append(at, i)
	}
	q.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	ps, err := q.Sources[si].Prices(ctx, missing)
	if err == nil && len(ps) != len(missing) {
		err = fmt.Errorf("answered %d prices for %d items", len(ps), len(missing))
	}
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.read == nil {
		q.read = map[readKey]readPrice{}
	}
	for k, r := range q.read {
		if now.Sub(r.at) >= PriceReuse {
			delete(q.read, k)
		}
	}
	for j, i := range at {
		stamp(&ps[j], now)
		out[i] = ps[j]
		q.read[readKey{si, missing[j]}] = readPrice{price: ps[j], at: now}
	}
	return out, nil
}

// stamp dates an API price (and its subscription) with the quote's day.
func stamp(p *Price, at time.Time) {
	if p.Date == "" {
		p.Date = at.Format(time.DateOnly)
	}
	if p.Subscription != nil && p.Subscription.Date == "" {
		s := *p.Subscription
		s.Date = p.Date
		p.Subscription = &s
	}
}
