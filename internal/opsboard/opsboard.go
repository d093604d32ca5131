// Package opsboard keeps the operators' view of a repository's clusters: one issue titled
// "POC clusters", rewritten by every scheduled run. It lists the live clusters (issue, requester,
// age, expiry, cost so far, cost per day), the warm pool's spares (age, health, cost per day),
// what is parked or orphaned, the month's spend, and a
// Mermaid Gantt chart of the clusters' lifetimes over the last 7 days (GitHub renders Mermaid).
//
// The state bucket only knows live clusters, so the board remembers the lifetimes it has seen in
// a hidden block of its own body (gzip'd JSON, base64), keeping what the Gantt and the month's
// spend need: the live clusters and those that ended in the chart's window; an older lifetime is
// folded into the month's spend (its cost and a count). The block is the operators' view, never
// an input to a decision: an edit to it changes the chart, nothing else.
//
// The body always fits GitHub's 65,536 characters (commands.MaxBodyBytes, in bytes): the live
// clusters first, then the most recent lifetimes; what does not fit is folded or counted, and
// the board says how many. It is one issue, the App's own: its number is kept in the state bucket
// (memory.go), it is created once under a lock, and an issue is taken for it only when the App
// opened it. Deciding what to show is pure (Merge, Render); Update only talks to GitHub and the
// bucket.
package opsboard

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
)

// Title is the title.
const Title = "POC clusters"

const (
	marker = "<!-- pocbot:board -->"
	window = 7 * 24 * time.Hour
	// The body's budget: commands.MaxBodyBytes (GitHub's limit less room for a notice) split
	// between what is shown and what is remembered. The hidden history takes at most
	// historyBytes (the most recent lifetimes; the older are folded into the month's spend); the
	// chart what is left once the tables are written, and at most maxBars bars.
	historyBytes = 24 << 10
	maxBars      = 300
	maxRows      = 100 // rows of the live and of the parked/orphaned tables
	maxCell      = 100 // bytes of a cell's text
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
	// Spare: a spare of the warm pool (issue #33), shown in its own section, not as a live
	// cluster; its lifetime is drawn and its cost counted in the month's spend like any.
	Spare bool `json:"w,omitempty"`
	// Ready (zero while building) and Health are a live spare's, given by every run: not
	// remembered.
	Ready  time.Time `json:"-"`
	Health string    `json:"-"`
}

// History is what the board remembers between runs: the lifetimes it still shows, and what the
// lifetimes folded out of them cost in Month and how many they were.
type History struct {
	Entries []Entry `json:"l"`
	Month   string  `json:"m,omitempty"` // YYYY-MM (UTC) of the folded sum
	// FoldedNanoEUR is what the folded lifetimes cost in Month; Folded counts them.
	FoldedNanoEUR int64 `json:"f,omitempty"`
	Folded        int   `json:"k,omitempty"`
}

// Orphan is a set of tagged resources no state knows (from the reaper's pass).
type Orphan struct {
	Cluster, Zone, Detail string
}

func monthKey(now time.Time) string { return now.UTC().Format("2006-01") }

// Merge folds the live clusters into the remembered history: a remembered live cluster that is
// no longer in the state is ended at now; a lifetime that ended before the chart's window is
// folded into the month's spend (what it cost since the first of the month), or dropped when it
// ended before the month too.
func Merge(prev History, live []Entry, now time.Time) History {
	h := History{Month: monthKey(now)}
	if prev.Month == h.Month {
		h.FoldedNanoEUR, h.Folded = prev.FoldedNanoEUR, prev.Folded
	}
	byName := map[string]Entry{}
	for _, e := range prev.Entries {
		byName[e.Cluster+"@"+e.Created.UTC().Format(time.RFC3339)] = e
	}
	seen := map[string]bool{}
	for _, e := range live {
		k := e.Cluster + "@" + e.Created.UTC().Format(time.RFC3339)
		e.Ended = time.Time{}
		byName[k] = e
		seen[k] = true
	}
	from := now.Add(-window)
	for k, e := range byName {
		if !seen[k] && e.Ended.IsZero() {
			e.Ended = now
		}
		if !e.Ended.IsZero() && e.Ended.Before(from) {
			h = h.fold(e, now)
			continue
		}
		h.Entries = append(h.Entries, e)
	}
	sortEntries(h.Entries)
	return h
}

// fold takes e out of the entries it is not in, adding what it cost this month to the sum.
func (h History) fold(e Entry, now time.Time) History {
	if spent := spent(e, monthStart(now), now); !spent.IsZero() || !e.Ended.Before(monthStart(now)) {
		h.FoldedNanoEUR += spent.Nanos
		h.Folded++
	}
	return h
}

func sortEntries(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if !es[i].Created.Equal(es[j].Created) {
			return es[i].Created.Before(es[j].Created)
		}
		return es[i].Cluster < es[j].Cluster
	})
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

// MonthSpend is what the remembered clusters cost since the first of now's month (UTC), the
// folded ones included.
func MonthSpend(h History, now time.Time) cost.Money {
	total := cost.EUR(0, 0)
	if h.Month == monthKey(now) {
		total = cost.EUR(0, h.FoldedNanoEUR)
	}
	for _, e := range h.Entries {
		total = total.Add(spent(e, monthStart(now), now))
	}
	return total
}

// Render is the body, within commands.MaxBodyBytes whatever the history holds: the
// tables first (at most maxRows rows each), then the hidden history in what is left (at most
// historyBytes: its oldest lifetimes folded into the month's spend), then the chart in the rest.
func Render(h History, orphans []Orphan, now time.Time) string {
	// Fewer table rows when the live clusters' and orphans' rows with the hidden history would
	// not leave the chart its room (names at their longest): the history is never cut.
	for _, rows := range []int{maxRows, maxRows / 4} {
		if body, ok := render(h, orphans, now.UTC(), rows); ok {
			return body
		}
	}
	body, _ := render(h, orphans, now.UTC(), 5)
	return body
}

// render is Render with at most rows rows a table; ok is false when the body is over the limit.
func render(h History, orphans []Orphan, now time.Time, rows int) (string, bool) {
	tables, daily, pool := renderTables(h, orphans, now, rows)
	head := fmt.Sprintf("_Kept up to date by pocbot's scheduled run; last update %s UTC. Edits are overwritten._\n\n", now.Format("2006-01-02 15:04")) + tables
	const spendRoom, chartRoom = 400, 600 // the spend section, and the least the chart gets
	h, block := fitHistory(h, now, min(historyBytes, commands.MaxBodyBytes-len(head)-spendRoom-chartRoom))
	var b strings.Builder
	b.WriteString(head)
	ms := monthStart(now)
	fmt.Fprintf(&b, "\n## Spend\n\n- This month (since %s): **%s**\n- Live clusters now: **%s per day**\n", ms.Format("2 Jan"), MonthSpend(h, now).Format(2), daily.Format(2))
	if !pool.IsZero() {
		fmt.Fprintf(&b, "- Warm pool now: **%s per day**\n", pool.Format(2))
	}
	if h.Folded > 0 && h.Month == monthKey(now) {
		fmt.Fprintf(&b, "- Of this month's spend, %s came from %d clusters that ended more than 7 days ago (or that the board had no room to list): counted, not drawn.\n",
			cost.EUR(0, h.FoldedNanoEUR).Format(2), h.Folded)
	}
	b.WriteString("\n## Lifetimes, last 7 days\n\n")
	tail := fmt.Sprintf("\n%s\n%s\n", marker, block)
	b.WriteString(gantt(h.Entries, now, commands.MaxBodyBytes-b.Len()-len(tail)))
	b.WriteString(tail)
	return b.String(), b.Len() <= commands.MaxBodyBytes
}

// renderTables is the live clusters' table, the warm pool's and the parked and orphaned one, and
// what the live clusters and the spares cost per day.
func renderTables(h History, orphans []Orphan, now time.Time, rows int) (string, cost.Money, cost.Money) {
	var live, parked, spares []Entry
	daily, pool := cost.EUR(0, 0), cost.EUR(0, 0)
	for _, e := range h.Entries {
		switch {
		case !e.Ended.IsZero():
		case e.Spare:
			spares = append(spares, e)
			pool = pool.Add(cost.EUR(0, e.DailyNanoEUR))
		case e.Phase == "parked":
			parked = append(parked, e)
		default:
			live = append(live, e)
			daily = daily.Add(cost.EUR(0, e.DailyNanoEUR))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Live clusters (%d)\n\n", len(live))
	if len(live) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| cluster | for | requested by | age | expires | cost so far | per day |\n|---|---|---|---|---|---|---:|\n")
		shown, more := elide(live, rows)
		for _, e := range shown {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s |\n", clip(e.Cluster), ref(e), who(e),
				commands.FormatDuration(now.Sub(e.Created)), expiry(e, now), spent(e, e.Created, now).Format(2), cost.EUR(0, e.DailyNanoEUR).Format(2))
		}
		b.WriteString(more)
	}
	if len(spares) > 0 {
		b.WriteString(poolTable(spares, now, rows))
	}
	b.WriteString("\n## Parked and orphaned\n\n")
	if len(parked) == 0 && len(orphans) == 0 {
		b.WriteString("None.\n")
		return b.String(), daily, pool
	}
	b.WriteString("| what | cluster | detail |\n|---|---|---|\n")
	var lines []string
	for _, e := range parked {
		lines = append(lines, fmt.Sprintf("| parked | `%s` | %s, since %s |\n", clip(e.Cluster), ref(e), commands.FormatDuration(now.Sub(e.Created))))
	}
	for _, o := range orphans {
		lines = append(lines, fmt.Sprintf("| orphaned | `%s` | %s |\n", clip(commands.Escape(o.Cluster)), clip(commands.Escape(strings.TrimSpace(o.Zone+" "+o.Detail)))))
	}
	shown, more := elide(lines, rows)
	b.WriteString(strings.Join(shown, "") + more)
	return b.String(), daily, pool
}

// poolTable is the warm pool's section: each spare's age (since it was ready, or how long it has
// been building), health and cost, at most rows rows.
func poolTable(spares []Entry, now time.Time, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Warm pool (%d)\n\n| spare | age | health | cost so far | per day |\n|---|---|---|---|---:|\n", len(spares))
	shown, more := elide(spares, rows)
	for _, e := range shown {
		age := "building for " + commands.FormatDuration(now.Sub(e.Created))
		if !e.Ready.IsZero() {
			age = commands.FormatDuration(now.Sub(e.Ready))
		}
		health := e.Health
		if health == "" {
			health = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", clip(e.Cluster), age, commands.EscapeText(clip(health)),
			spent(e, e.Created, now).Format(2), cost.EUR(0, e.DailyNanoEUR).Format(2))
	}
	b.WriteString(more)
	return b.String()
}

// elide keeps the first n rows and says how many more there were.
func elide[T any](rows []T, n int) ([]T, string) {
	if len(rows) <= n {
		return rows, ""
	}
	return rows[:n], fmt.Sprintf("\n_… and %d more, not listed: the issue would pass GitHub's size limit._\n", len(rows)-n)
}

// clip keeps a cell's text to maxCell bytes.
func clip(s string) string {
	const n = maxCell
	if len(s) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return s[:i] + "…"
		}
	}
	return "…"
}

func ref(e Entry) string {
	if e.Repository == "" || e.Number == 0 {
		return "—"
	}
	return fmt.Sprintf("%s#%d", clip(commands.Escape(e.Repository)), e.Number)
}

func who(e Entry) string {
	if e.RequestedBy == "" {
		return "—"
	}
	// No @: the board is rewritten every half hour and must not ping anyone.
	return commands.Escape(clip(e.RequestedBy))
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

// gantt draws the lifetimes that overlap the last 7 days, one section per repository, within
// room bytes and maxBars bars: the most recent first to stay, the others counted.
func gantt(entries []Entry, now time.Time, room int) string {
	from := now.Add(-window)
	const layout = "2006-01-02T15:04"
	type bar struct {
		sec, line string
		start     time.Time
	}
	var bars []bar
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
		bars = append(bars, bar{sec: clip(sec), start: start, line: fmt.Sprintf("    %s :%s, c%d, %s, %s", clip(mermaidUnsafe.ReplaceAllString(name, "")), tag, i,
			start.UTC().Format(layout), end.UTC().Format(layout))})
	}
	if len(bars) == 0 {
		return "No cluster lived in the last 7 days.\n"
	}
	// The most recent bars that fit.
	const frame = "```mermaid\ngantt\n    dateFormat YYYY-MM-DDTHH:mm\n    axisFormat %d %b\n```\n"
	const noteRoom = 120
	sort.SliceStable(bars, func(i, j int) bool { return bars[i].start.After(bars[j].start) })
	used, n := len(frame)+noteRoom, 0
	secs := map[string]bool{}
	for ; n < len(bars) && n < maxBars; n++ {
		need := len(bars[n].line) + 1
		if !secs[bars[n].sec] {
			need += len("    section ") + len(bars[n].sec) + 1
		}
		if used+need > room {
			break
		}
		used += need
		secs[bars[n].sec] = true
	}
	drawn := bars[:n]
	sort.SliceStable(drawn, func(i, j int) bool { return drawn[i].start.Before(drawn[j].start) })
	sections := map[string][]string{}
	var names []string
	for _, br := range drawn {
		if _, ok := sections[br.sec]; !ok {
			names = append(names, br.sec)
		}
		sections[br.sec] = append(sections[br.sec], br.line)
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
	if left := len(bars) - n; left > 0 {
		fmt.Fprintf(&b, "\n_%d earlier lifetimes of the last 7 days are not drawn: the issue would pass GitHub's size limit._\n", left)
	}
	return b.String()
}

// The hidden history block: gzip'd JSON in base64, after the board's marker. v1 (plain JSON
// array in base64) is still read.
var historyRE = regexp.MustCompile(`<!-- pocbot:history (v2 )?([A-Za-z0-9+/=]*) -->`)

// fitHistory is h with its oldest ended lifetimes folded until its block fits room bytes (the
// live ones always stay), and the block.
func fitHistory(h History, now time.Time, room int) (History, string) {
	for {
		block := encodeHistory(h)
		if len(block) <= room {
			return h, block
		}
		var ended []int
		for i, e := range h.Entries {
			if !e.Ended.IsZero() {
				ended = append(ended, i)
			}
		}
		if len(ended) == 0 {
			// The live ones alone overflow: written as they are (a repository has at most 100
			// live clusters, and Render leaves them the room).
			return h, block
		}
		// Fold the oldest ended lifetimes in proportion to the overflow (a tenth more than it,
		// at least one): one or two encodings, not one per lifetime.
		fold := max(len(ended)-len(ended)*room*9/(len(block)*10), 1)
		drop := map[int]bool{}
		for _, i := range ended[:min(fold, len(ended))] {
			drop[i] = true
		}
		var keep []Entry
		for i, e := range h.Entries {
			if drop[i] {
				h = h.fold(e, now)
				continue
			}
			keep = append(keep, e)
		}
		h.Entries = keep
	}
}

func encodeHistory(h History) string {
	j, _ := json.Marshal(h)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	_, _ = w.Write(j)
	_ = w.Close()
	return "<!-- pocbot:history v2 " + base64.StdEncoding.EncodeToString(z.Bytes()) + " -->"
}

// maxHistoryJSON bounds what a history block may inflate to: a block in a body is under 64 KiB,
// and JSON this repetitive compresses well, but not a thousandfold.
const maxHistoryJSON = 8 << 20

// ParseHistory reads the history a previous Render remembered; a body without a readable block
// gives none (the board starts over, it decides nothing).
func ParseHistory(body string) History {
	m := historyRE.FindStringSubmatch(body)
	if m == nil {
		return History{}
	}
	raw, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		return History{}
	}
	if m[1] == "" { // v1: the entries, plain
		var es []Entry
		if json.Unmarshal(raw, &es) != nil {
			return History{}
		}
		return History{Entries: es}
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return History{}
	}
	j, err := io.ReadAll(io.LimitReader(zr, maxHistoryJSON))
	if err != nil {
		return History{}
	}
	var h History
	if json.Unmarshal(j, &h) != nil {
		return History{}
	}
	return h
}
