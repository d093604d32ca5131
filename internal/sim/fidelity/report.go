package fidelity

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Report is a replay's results.
type Report struct {
	Results []Result
}

// Counts are the compared exchanges, those that matched, and the skipped ones by reason.
func (r *Report) Counts() (matched, compared int, skipped map[string]int) {
	skipped = map[string]int{}
	for _, x := range r.Results {
		switch {
		case x.Skipped != "":
			skipped[x.Skipped]++
		case x.Verdict.Match():
			matched++
			compared++
		default:
			compared++
		}
	}
	return matched, compared, skipped
}

// Rate is the share of the compared exchanges that matched (0 when none was compared).
func (r *Report) Rate() float64 {
	m, n, _ := r.Counts()
	if n == 0 {
		return 0
	}
	return float64(m) / float64(n)
}

// Write prints the matches per route, every mismatch, what was not replayed and why, and the
// match rate.
func (r *Report) Write(w io.Writer) {
	type tally struct{ ok, n int }
	per := map[string]*tally{}
	for _, x := range r.Results {
		if x.Skipped != "" {
			continue
		}
		k := string(x.Service) + " " + x.Route
		if per[k] == nil {
			per[k] = &tally{}
		}
		per[k].n++
		if x.Verdict.Match() {
			per[k].ok++
		}
	}
	keys := make([]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%-90s %4d/%-4d\n", k, per[k].ok, per[k].n)
	}
	for _, x := range r.Results {
		if x.Skipped == "" && !x.Verdict.Match() {
			fmt.Fprintf(w, "mismatch %s #%d %s %s: %s\n", x.File, x.ID, x.Request.Method, x.Route, x.Verdict.Why)
		}
	}
	m, n, skipped := r.Counts()
	reasons := make([]string, 0, len(skipped))
	for why, k := range skipped {
		reasons = append(reasons, fmt.Sprintf("%d because %s", k, why))
	}
	sort.Strings(reasons)
	if len(reasons) > 0 {
		fmt.Fprintf(w, "not replayed: %s\n", strings.Join(reasons, "; "))
	}
	var waited int
	for _, x := range r.Results {
		if x.Waited > 0 && x.Skipped == "" {
			waited++
		}
	}
	if waited > 0 {
		fmt.Fprintf(w, "%d answers were asked again as the stand-in's clock moved on (the recording's Date headers time them to the second)\n", waited)
	}
	fmt.Fprintf(w, "fidelity: %d/%d exchanges match (%.1f %%)\n", m, n, 100*r.Rate())
}
