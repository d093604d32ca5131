package reaper

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
)

// WriteTable prints one line per decision and a summary line. In a dry run the actions read
// "would destroy", "would warn", "would sweep".
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tISSUE\tPHASE\tEXPIRES\tACTION\tREASON\tDETAIL")
	for _, d := range r.Decisions {
		issue := "-"
		switch {
		case d.Orphan:
			issue = "(no state) " + d.Zone
		case d.Number > 0:
			issue = fmt.Sprintf("%s#%d", d.Repository, d.Number)
		case d.Repository != "":
			issue = d.Repository
		}
		exp := "-"
		if !d.Expires.IsZero() {
			exp = d.Expires.UTC().Format(time.RFC3339)
		}
		detail := d.Detail
		if d.Err != nil {
			// Errors from the store, the APIs and GitHub never carry the state key or tokens;
			// redact anyway, as everything the bot prints may end up in a public log.
			detail = strings.TrimPrefix(detail+"; error: "+commands.Redact(d.Err.Error()), "; ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(d.Cluster), issue, orDash(d.Phase), exp,
			r.actionText(d.Action), orDash(string(d.Reason)), oneLine(detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	mode := ""
	if r.DryRun {
		mode = " (dry run: nothing was changed)"
	}
	bound := ""
	if r.Bounded {
		bound = "; bounded: the rest is left for the next run"
	}
	would := ""
	if r.DryRun {
		would = "would be "
	}
	_, err := fmt.Fprintf(w, "%d headers read in %s: %d %sdestroyed, %d %sswept, %d %swarned, %d busy, %d failed, %d deferred%s%s\n",
		r.Listed, r.Elapsed.Round(time.Millisecond), r.Count(ActionDestroyed), would, r.Count(ActionSwept), would, r.Count(ActionWarned), would,
		r.Count(ActionBusy), r.Failed(), r.Count(ActionDeferred), bound, mode)
	return err
}

func (r Report) actionText(a Action) string {
	if !r.DryRun {
		return string(a)
	}
	switch a {
	case ActionDestroyed:
		return "would destroy"
	case ActionWarned:
		return "would warn"
	case ActionSwept:
		return "would sweep"
	}
	return string(a)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if s == "" {
		return "-"
	}
	return s
}
