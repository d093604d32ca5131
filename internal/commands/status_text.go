package commands

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteStatusText writes the status v as `bot status` prints it on a terminal: the view of
// `/poc status` (RenderStatus) with what an operator needs besides (the lock's id and lease, the
// resources' zones, the health checks' targets), as aligned text. Exists must be true.
func WriteStatusText(w io.Writer, v StatusView) error {
	p := func(f string, a ...any) { fmt.Fprintf(w, f, a...) }
	p("cluster %s\n", v.Cluster)
	p("  phase:        %s\n", v.Phase)
	if v.Repository != "" {
		p("  for:          %s #%d (%s), requested by %s\n", v.Repository, v.Number, cmpOr(v.Kind, "issue"), v.RequestedBy)
	} else if v.RequestedBy != "" {
		p("  requested by: %s\n", v.RequestedBy)
	}
	p("  created:      %s (age %s)\n", rfc3339(v.Created), RoundDuration(v.Now.Sub(v.Created)))
	switch {
	case v.Expires.IsZero():
		p("  expires:      never\n")
	case v.Expires.After(v.Now):
		p("  expires:      %s (in %s)\n", rfc3339(v.Expires), RoundDuration(v.Expires.Sub(v.Now)))
	default:
		p("  expires:      %s (expired %s ago: the reaper will remove it)\n", rfc3339(v.Expires), RoundDuration(v.Now.Sub(v.Expires)))
	}
	switch {
	case v.MetaNote != "":
		p("  metadata:     unreadable (%s)\n", v.MetaNote)
	case v.Keep:
		p("  keep label:   yes (expiry paused while the issue carries the keep label)\n")
	default:
		p("  keep label:   no\n")
	}
	if !v.DownFailed.IsZero() {
		p("  down failed:  %s (the reaper retries)\n", v.DownFailed.Format(time.RFC3339))
	}
	if l := v.Lock; l != nil {
		state := "lease until " + rfc3339(l.Expires)
		if !l.Expires.After(v.Now) {
			state = "lease expired " + RoundDuration(v.Now.Sub(l.Expires)).String() + " ago: the next run takes it over"
		}
		p("  lock:         held by %s (%s, run %s) since %s, %s; id %s\n", orDash(l.Actor), orDash(l.Command),
			orDash(l.RunID), rfc3339(l.Since), state, l.ID)
	} else {
		p("  lock:         free\n")
	}
	if line := costText(v); line != "" {
		p("  cost:         %s\n", line)
	}
	if len(v.APIEndpoints) > 0 {
		p("  Kubernetes:   %s\n", strings.Join(v.APIEndpoints, ", "))
	}
	if v.Edge != "" {
		p("  edge:         %s\n", v.Edge)
	}
	p("\nresources (%d):\n", len(v.Resources))
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NODE\tKIND\tID\tZONE\tRECORDED STATUS\tADDRESS")
	for _, r := range v.Resources {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Kind, orDash(r.ID), orDash(r.Zone), orDash(r.State), orDash(r.Address))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Health) > 0 {
		p("\nhealth:\n")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range v.Health {
			mark := "✓"
			if !c.OK {
				mark = "✗"
			}
			fmt.Fprintf(tw, "  %s %s\t%s\t%s\n", mark, c.Name, orDash(c.Target), c.Detail)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if v.HealthNote != "" {
			p("  note: %s\n", v.HealthNote)
		}
	}
	return nil
}

// costText is the cost line: accrued, per day, until expiry, with its note; "" when the view has
// no cost.
func costText(v StatusView) string {
	if v.DailyCost == "" {
		if v.CostNote == "" {
			return ""
		}
		return "unknown (" + v.CostNote + ")"
	}
	line := fmt.Sprintf("accrued %s since created, %s per day", v.Accrued, v.DailyCost)
	if v.UntilExpiry != "" {
		line += fmt.Sprintf(", %s more until expiry", v.UntilExpiry)
	}
	if v.CostNote != "" {
		line += " (" + v.CostNote + ")"
	}
	return line
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// RoundDuration rounds an age or a delay for a terminal: minutes over an hour, seconds over a minute.
func RoundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	default:
		return d.Round(100 * time.Millisecond)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
