package cost

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of a cost table, formatted for people: hourly prices
// keep up to 5 decimals (0.02754 must not print as 0.03), daily and monthly
// figures are rounded to the cent (half away from zero).
type Row struct {
	Resource, Hourly, Daily, Monthly, OneTime, Source string
}

// hourlyDecimals is enough for every recorded hourly price (0.02754,
// 0.077) and shows the estimates' order of magnitude.
const hourlyDecimals = 5

// Rows formats the quote's lines; unknown prices print "unknown".
func (q Quote) Rows() []Row {
	out := make([]Row, 0, len(q.Lines))
	for _, l := range q.Lines {
		r := Row{Resource: l.Item.Label(), Source: l.Price.Provenance()}
		if !l.Known() {
			r.Hourly, r.Daily, r.Monthly, r.OneTime = "unknown", "unknown", "unknown", ""
			r.Source = "none"
			if l.Price.Availability == Withdrawn {
				r.Source = "withdrawn: " + l.Price.Note
			}
		} else {
			r.Hourly, r.Daily, r.Monthly = l.Hourly.Format(hourlyDecimals), l.Daily.Format(2), l.Monthly.Format(2)
			if !l.OneTime.IsZero() {
				r.OneTime = l.OneTime.Format(2)
			}
		}
		out = append(out, r)
	}
	return out
}

// Times are the dates a cost report is about; zero values are left out.
type Times struct {
	Created, Now, Expires time.Time
}

// WriteText prints the quote as the operator CLI shows it (`bot cost`): a
// table per resource, then the totals; the last line is always
// "Total per day: € X.XX".
func (q Quote) WriteText(w io.Writer, at Times) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tPER HOUR\tPER DAY\tPER MONTH (730 h)\tONE-TIME\tSOURCE")
	for _, r := range q.Rows() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Resource, r.Hourly, r.Daily, r.Monthly, r.OneTime, r.Source)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write cost table: %w", err)
	}
	var b strings.Builder
	lower := ""
	if q.HasUnknown() {
		lower = " (lower bound: some prices unknown)"
	}
	fmt.Fprintf(&b, "Total per hour: %s%s\n", q.Hourly.Format(hourlyDecimals), lower)
	fmt.Fprintf(&b, "Total per month (730 h): %s\n", q.Monthly.Format(2))
	if !q.OneTime.IsZero() {
		fmt.Fprintf(&b, "One-time fees: %s\n", q.OneTime.Format(2))
	}
	if !at.Created.IsZero() && !at.Now.IsZero() {
		fmt.Fprintf(&b, "Accrued since %s: %s\n", at.Created.UTC().Format(time.RFC3339), q.Accrued(at.Created, at.Now).Format(2))
	}
	if !at.Expires.IsZero() && !at.Now.IsZero() {
		fmt.Fprintf(&b, "Until expiry at %s: %s\n", at.Expires.UTC().Format(time.RFC3339), q.UntilExpiry(at.Now, at.Expires).Format(2))
	}
	for _, a := range q.Alternatives {
		fmt.Fprintf(&b, "Cheaper: %s on a monthly subscription, %d month(s) for %s instead of %s hourly (saves %s; %s)\n",
			a.Item.Label(), a.Months, a.Total.Format(2), a.Hourly.Format(2), a.Saving.Format(2), a.Subscription.Provenance())
	}
	for _, warn := range q.Warnings {
		fmt.Fprintf(&b, "Note: %s\n", warn)
	}
	fmt.Fprintf(&b, "Total per day: %s%s\n", q.Daily.Format(2), lower)
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write cost totals: %w", err)
	}
	return nil
}
