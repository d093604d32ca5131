// Package opsboard keeps the operators' view of a repository's clusters: one issue titled
// "POC clusters", rewritten by every scheduled run. It lists the live clusters (issue, requester,
// age, expiry, cost so far, cost per day), what is parked or orphaned, the month's spend, and a
// Mermaid Gantt chart of the clusters' lifetimes over the last 7 days (GitHub renders Mermaid).
//
// The state bucket only knows live clusters, so the board remembers the lifetimes it has seen in
// a hidden block of its own body (base64 JSON), keeping what the Gantt and the month's spend
// need. The block is the operators' view, never an input to a decision: an edit to it changes the
// chart, nothing else. Deciding what to show is pure (Merge, Render); Update only talks to GitHub.
package opsboard

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
)

// Title is the issue's title.
const Title = "POC clusters"

const (
	marker     = "<!-- pocbot:board -->"
	window     = 7 * 24 * time.Hour
	maxEntries = 500 // bounds the hidden block whatever happens
)

// Entry is one cluster's lifetime.
type Entry struct {
	Cluster      string    `json:"c"`
	Repository   string    `json:"r,omitempty"`
	Number       int       `json:"n,omitempty"`
	RequestedBy  string    `json:"u,omitempty"`
	Created      time.Time `json:"s"`
	Expires      time.Time `json:"x,omitzero"`
	Ended        time.Time `json:"e,omitzero"` // zero while live
	DailyNanoEUR int64     `json:"d,omitempty"`
	Phase        string    `json:"p,omitempty"` // the state's phase, e.g. ready, failed, parked
	Kept         bool      `json:"k,omitempty"` // the keep label pauses its expiry
}

// Orphan is a set of tagged resources no state knows (from the reaper's pass).
type Orphan struct {
	Cluster, Zone, Detail string
}

// Merge folds the live clusters into the remembered history: a remembered live cluster that is
// no longer in the state is ended at now; lifetimes that ended before both the month's start and
// the chart's window are dropped.
func Merge(prev, live []Entry, now time.Time) []Entry {
	byName := map[string]Entry{}
	for _, e := range prev {
		byName[e.Cluster+"@"+e.Created.UTC().Format(time.RFC3339)] = e
	}
	seen := map[string]bool{}
	for _, e := range live {
		k := e.Cluster + "@" + e.Created.UTC().Format(time.RFC3339)
		e.Ended = time.Time{}
		byName[k] = e
		seen[k] = true
	}
	keepFrom := monthStart(now)
	if w := now.Add(-window); w.Before(keepFrom) {
		keepFrom = w
	}
	var out []Entry
	for k, e := range byName {
		if !seen[k] && e.Ended.IsZero() {
			e.Ended = now
		}
		if !e.Ended.IsZero() && e.Ended.Before(keepFrom) {
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].Cluster < out[j].Cluster
	})
	if len(out) > maxEntries {
		out = out[len(out)-maxEntries:]
	}
	return out
}

func monthStart(now time.Time) time.Time {
	u := now.UTC()
	return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// cost of e between from and to (clipped to its life).
func spent(e Entry, from, to time.Time) cost.Money {
	start, end := e.Created, e.Ended
	if end.IsZero() || end.After(to) {
		end = to
	}
	if start.Before(from) {
		start = from
	}
	if !end.After(start) || e.DailyNanoEUR <= 0 {
		return cost.EUR(0, 0)
	}
	return cost.EUR(0, e.DailyNanoEUR).MulRat(int64(end.Sub(start)/time.Second), 24*3600)
}

// MonthSpend is what the remembered clusters cost since the first of now's month (UTC).
func MonthSpend(entries []Entry, now time.Time) cost.Money {
	total := cost.EUR(0, 0)
	for _, e := range entries {
		total = total.Add(spent(e, monthStart(now), now))
	}
	return total
}

// Render is the issue's body.
func Render(entries []Entry, orphans []Orphan, now time.Time) string {
	now = now.UTC()
	var b strings.Builder
	fmt.Fprintf(&b, "_Kept up to date by pocbot's scheduled run; last update %s UTC. Edits are overwritten._\n\n", now.Format("2006-01-02 15:04"))
	var live, parked []Entry
	daily := cost.EUR(0, 0)
	for _, e := range entries {
		if !e.Ended.IsZero() {
			continue
		}
		if e.Phase == "parked" {
			parked = append(parked, e)
			continue
		}
		live = append(live, e)
		daily = daily.Add(cost.EUR(0, e.DailyNanoEUR))
	}
	fmt.Fprintf(&b, "## Live clusters (%d)\n\n", len(live))
	if len(live) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| cluster | for | requested by | age | expires | cost so far | per day |\n|---|---|---|---|---|---|---:|\n")
		for _, e := range live {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", e.Cluster, ref(e), who(e),
				commands.FormatDuration(now.Sub(e.Created)), expiry(e, now), spent(e, e.Created, now).Format(2), cost.EUR(0, e.DailyNanoEUR).Format(2))
		}
	}
	b.WriteString("\n## Parked and orphaned\n\n")
	if len(parked) == 0 && len(orphans) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| what | cluster | detail |\n|---|---|---|\n")
		for _, e := range parked {
			fmt.Fprintf(&b, "| parked | `%s` | %s, since %s |\n", e.Cluster, ref(e), commands.FormatDuration(now.Sub(e.Created)))
		}
		for _, o := range orphans {
			fmt.Fprintf(&b, "| orphaned | `%s` | %s |\n", commands.Escape(o.Cluster), commands.Escape(strings.TrimSpace(o.Zone+" "+o.Detail)))
		}
	}
	ms := monthStart(now)
	fmt.Fprintf(&b, "\n## Spend\n\n- This month (since %s): **%s**\n- Live clusters now: **%s per day**\n", ms.Format("2 Jan"), MonthSpend(entries, now).Format(2), daily.Format(2))
	b.WriteString("\n## Lifetimes, last 7 days\n\n")
	b.WriteString(gantt(entries, now))
	fmt.Fprintf(&b, "\n%s\n<!-- pocbot:history %s -->\n", marker, encodeHistory(entries))
	return b.String()
}

func ref(e Entry) string {
	if e.Repository == "" || e.Number == 0 {
		return "—"
	}
	return fmt.Sprintf("%s#%d", commands.Escape(e.Repository), e.Number)
}

func who(e Entry) string {
	if e.RequestedBy == "" {
		return "—"
	}
	// No @: the board is rewritten every half hour and must not ping anyone.
	return commands.Escape(e.RequestedBy)
}

func expiry(e Entry, now time.Time) string {
	switch {
	case e.Kept:
		return "kept"
	case e.Expires.IsZero():
		return "—"
	case !e.Expires.After(now):
		return "due"
	}
	return "in " + commands.FormatDuration(e.Expires.Sub(now))
}

var mermaidUnsafe = regexp.MustCompile(`[^A-Za-z0-9 ._/-]`)

// gantt draws the lifetimes that overlap the last 7 days, one section per repository.
func gantt(entries []Entry, now time.Time) string {
	from := now.Add(-window)
	const layout = "2006-01-02T15:04"
	sections := map[string][]string{}
	var names []string
	for i, e := range entries {
		end := e.Ended
		if end.IsZero() {
			end = now
		}
		if end.Before(from) {
			continue
		}
		start := e.Created
		if start.Before(from) {
			start = from
		}
		if !end.After(start) {
			end = start.Add(time.Minute)
		}
		tag := "done"
		if e.Ended.IsZero() {
			tag = "active"
		}
		name := e.Cluster
		if e.Number != 0 {
			name = fmt.Sprintf("%s %d", e.Cluster, e.Number)
		}
		sec := mermaidUnsafe.ReplaceAllString(e.Repository, "")
		if sec == "" {
			sec = "no repository"
		}
		if _, ok := sections[sec]; !ok {
			names = append(names, sec)
		}
		sections[sec] = append(sections[sec], fmt.Sprintf("    %s :%s, c%d, %s, %s", mermaidUnsafe.ReplaceAllString(name, ""), tag, i,
			start.UTC().Format(layout), end.UTC().Format(layout)))
	}
	if len(names) == 0 {
		return "No cluster lived in the last 7 days.\n"
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("```mermaid\ngantt\n    dateFormat YYYY-MM-DDTHH:mm\n    axisFormat %d %b\n")
	for _, s := range names {
		fmt.Fprintf(&b, "    section %s\n", s)
		for _, t := range sections[s] {
			b.WriteString(t + "\n")
		}
	}
	b.WriteString("```\n")
	return b.String()
}

func encodeHistory(entries []Entry) string {
	j, _ := json.Marshal(entries)
	return base64.StdEncoding.EncodeToString(j)
}

var historyRE = regexp.MustCompile(`<!-- pocbot:history ([A-Za-z0-9+/=]*) -->`)

// ParseHistory reads the lifetimes a previous Render remembered; a body without a readable block
// gives none (the board starts over, it decides nothing).
func ParseHistory(body string) []Entry {
	m := historyRE.FindStringSubmatch(body)
	if m == nil {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(m[1])
	if err != nil {
		return nil
	}
	var out []Entry
	if json.Unmarshal(raw, &out) != nil {
		return nil
	}
	if len(out) > maxEntries {
		out = out[len(out)-maxEntries:]
	}
	return out
}

// Issues is what Update needs of GitHub (internal/github.Client).
type Issues interface {
	FindBoardIssue(ctx context.Context, title, marker string) (number int, body string, found bool, err error)
	CreateIssue(ctx context.Context, title, body string) (int, error)
	EditIssueBody(ctx context.Context, number int, body string) error
}

// Update rewrites the board issue (creating it the first time) and returns its number.
func Update(ctx context.Context, gh Issues, live []Entry, orphans []Orphan, now time.Time) (int, error) {
	n, body, found, err := gh.FindBoardIssue(ctx, Title, marker)
	if err != nil {
		return 0, fmt.Errorf("operator board: %w", err)
	}
	entries := Merge(ParseHistory(body), live, now)
	next := Render(entries, orphans, now)
	if !found {
		n, err = gh.CreateIssue(ctx, Title, next)
		if err != nil {
			return 0, fmt.Errorf("operator board: %w", err)
		}
		return n, nil
	}
	if next == body {
		return n, nil
	}
	if err := gh.EditIssueBody(ctx, n, next); err != nil {
		return 0, fmt.Errorf("operator board: %w", err)
	}
	return n, nil
}
