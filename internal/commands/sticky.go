package commands

import (
	"github.com/pocbot/pocbot/internal/lifecycle"

	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxCommentBytes is GitHub's limit on a comment body (65,536 characters). Bodies are measured
// in bytes, which is never less than characters, so a body under it in bytes always fits.
const MaxCommentBytes = 65536

// StepState is the state of one step in the sticky comment's table.
type StepState int

// Step states; each renders as one emoji.
const (
	StepPending StepState = iota // ⏳ with "waiting"
	StepRunning                  // ⏳ with the elapsed time
	StepDone                     // ✅
	StepFailed                   // ❌
	StepSkipped                  // ⏭️ (already done by an earlier run, or not needed)
)

func (s StepState) emoji() string {
	switch s {
	case StepDone:
		return "✅"
	case StepFailed:
		return "❌"
	case StepSkipped:
		return "⏭️"
	}
	return "⏳"
}

// Step is one row of the progress table.
type Step struct {
	Name     string // trusted text from the engine, e.g. "control plane 2: volume from snapshot"
	State    StepState
	Duration time.Duration // elapsed so far for a running step, total when finished
	Note     string        // optional short detail (redacted and escaped when rendered)
}

// StickyView is everything the one status comment of a cluster shows. It is rewritten whole at
// every update; Serial orders the writers (see ShouldOverwrite).
type StickyView struct {
	Cluster string
	Serial  int64 // e.g. GITHUB_RUN_ID*100 + GITHUB_RUN_ATTEMPT: grows with every run
	// StateSerial is the serial of the cluster's state document this run last read or wrote (0:
	// none). Kept on GitHub, where a writer of the state bucket cannot change it, it is the
	// witness against a rolled-back state (see StickyStateSerial).
	StateSerial int64
	Verb        Verb   // the command being run
	Requester   string // GitHub login
	Phase       lifecycle.Phase
	Now         time.Time
	Started     time.Time
	RunURL      string
	Steps       []Step
	Up          *UpView     // set when `up` has finished successfully
	Plan        *PlanView   // set for `up --dry-run`
	Down        *DownView   // set when `down` has finished
	Paused      *PausedView // set when `pause` has finished
	Note        string      // one more paragraph under the result (trusted text: the bot's own)
	Error       string      // what failed and what to do; redacted and fenced when rendered
	Log         string      // long log, folded; truncated first when the body is too long
	// ETA is the up's expected length while it runs ("about 11 min (cold, …)"); shown until
	// the run ends.
	ETA string
	// Tick, while the command runs, rounds the running times down to it ("running for 4m"), so
	// that the body changes once a tick rather than every second; 0 shows them to the second.
	Tick time.Duration
}

var (
	clusterMarkerRE = regexp.MustCompile(`<!-- pocbot:cluster=([a-z0-9-]{1,64}) -->`)
	serialMarkerRE  = regexp.MustCompile(`<!-- pocbot:serial=(-?[0-9]{1,19}) -->`)
	stateMarkerRE   = regexp.MustCompile(`<!-- pocbot:state-serial=([0-9]{1,19}) -->`)
)

// StickyStateSerial returns the state serial a status comment recorded (RenderSticky with
// StateSerial > 0). The caller must have checked that the comment is the App's own.
func StickyStateSerial(body string) (int64, bool) {
	m := stateMarkerRE.FindStringSubmatch(body)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// StickyMarker is the hidden first line that identifies the sticky comment of a cluster. Anyone
// can type it, so the finder must also check that the comment's author is the bot.
func StickyMarker(cluster string) string { return "<!-- pocbot:cluster=" + cluster + " -->" }

func serialMarker(serial int64) string {
	return "<!-- pocbot:serial=" + strconv.FormatInt(serial, 10) + " -->"
}

// StickyCluster returns the cluster named by a body's sticky marker.
func StickyCluster(body string) (string, bool) {
	m := clusterMarkerRE.FindStringSubmatch(body)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// ShouldOverwrite reports whether a run with `serial` may replace `existing`: yes when the
// existing body carries no serial or one not newer than ours (the same run re-edits its own
// body). An older run that wakes up late must not hide a newer run's result.
func ShouldOverwrite(existing string, serial int64) bool {
	m := serialMarkerRE.FindStringSubmatch(existing)
	if m == nil {
		return true
	}
	old, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return true
	}
	return serial >= old
}

// RenderSticky renders the status comment, always within MaxBodyBytes: the error shows its head
// and end (cutMiddle), the step table at most maxRows steps (the failed and running ones first to
// stay), the log its end, and what is still too long is cut by fit.
func RenderSticky(v StickyView) string {
	// Redact once, on no more than twice what can fit: a long log is cut anyway, and scanning
	// megabytes at every throttled edit would be wasted work.
	v.Log = Redact(tail(v.Log, 2*MaxCommentBytes))
	v.Error = shown(v.Error, maxErrorBytes)
	v.Steps = keepSteps(v.Steps, maxRows)
	body := renderSticky(v, v.Log)
	if len(body) <= MaxBodyBytes {
		return body
	}
	// Cut the log to what fits, keeping its tail.
	over := len(body) - (MaxBodyBytes - 1024)
	log := v.Log
	if over < len(log) {
		log = tail(log, len(log)-over)
	} else {
		log = ""
	}
	return fit(renderSticky(v, log))
}

// keepSteps keeps at most n steps, in their order: the failed and running ones first, then the
// latest of the others; an elided step is counted in a last row.
func keepSteps(steps []Step, n int) []Step {
	if len(steps) <= n {
		return steps
	}
	keep := make([]bool, len(steps))
	kept := 0
	for i, s := range steps {
		if kept < n-1 && (s.State == StepFailed || s.State == StepRunning) {
			keep[i], kept = true, kept+1
		}
	}
	for i := len(steps) - 1; i >= 0 && kept < n-1; i-- {
		if !keep[i] {
			keep[i], kept = true, kept+1
		}
	}
	out := make([]Step, 0, n)
	for i, s := range steps {
		if keep[i] {
			out = append(out, s)
		}
	}
	return append(out, Step{Name: fmt.Sprintf("… and %d more steps, not shown (GitHub's size limit)", len(steps)-kept), State: StepSkipped})
}

func renderSticky(v StickyView, log string) string {
	var b strings.Builder
	b.WriteString(StickyMarker(v.Cluster) + "\n" + serialMarker(v.Serial) + "\n")
	if v.StateSerial > 0 {
		b.WriteString("<!-- pocbot:state-serial=" + strconv.FormatInt(v.StateSerial, 10) + " -->\n")
	}
	title := "`/poc " + string(v.Verb) + "`"
	fmt.Fprintf(&b, "### %s %s on cluster `%s`\n\n", v.Phase.Emoji(), title, v.Cluster)
	var meta []string
	if v.Phase != "" {
		meta = append(meta, "**"+EscapeText(string(v.Phase))+"**")
	}
	if v.Requester != "" {
		meta = append(meta, "asked by "+Escape(v.Requester))
	}
	if !v.Started.IsZero() && !v.Now.IsZero() {
		meta = append(meta, "running for "+tickDuration(v.Now.Sub(v.Started), v.Tick))
	}
	if v.ETA != "" && v.Up == nil && v.Down == nil && v.Paused == nil && v.Error == "" {
		meta = append(meta, "ETA "+cellText(v.ETA, maxCellBytes))
	}
	if v.RunURL != "" {
		meta = append(meta, "[run log]("+v.RunURL+")")
	}
	if len(meta) > 0 {
		b.WriteString(strings.Join(meta, " · ") + "\n\n")
	}
	if v.Error != "" {
		head := "❌ **Failed:**"
		if v.Phase == lifecycle.PhaseRefused {
			head = "😕 **Refused:**"
		}
		b.WriteString(head + "\n\n" + fence(Redact(v.Error)) + "\n")
	}
	if v.Up != nil {
		b.WriteString(renderUpResult(*v.Up, v.Now))
		b.WriteString("\n")
	}
	if v.Plan != nil {
		b.WriteString(RenderPlan(*v.Plan))
		b.WriteString("\n")
	}
	if v.Down != nil {
		b.WriteString(renderDownBody(*v.Down))
		b.WriteString("\n")
	}
	if v.Paused != nil {
		b.WriteString(renderPaused(*v.Paused, v.Now))
		b.WriteString("\n")
	}
	if v.Note != "" {
		b.WriteString(v.Note + "\n\n")
	}
	if len(v.Steps) > 0 {
		steps := renderSteps(v.Steps, v.Tick)
		// Once finished, the table is history: fold it so the result stays on top.
		if v.Up != nil || v.Down != nil || v.Plan != nil || v.Paused != nil {
			fmt.Fprintf(&b, "<details><summary>Steps (%d)</summary>\n\n%s\n</details>\n\n", len(v.Steps), steps)
		} else {
			b.WriteString(steps + "\n")
		}
	}
	if log != "" {
		fmt.Fprintf(&b, "<details><summary>Log</summary>\n\n%s\n</details>\n", fence(log)) // redacted by RenderSticky
	}
	return b.String()
}

func renderSteps(steps []Step, tick time.Duration) string {
	var b strings.Builder
	b.WriteString("| | step | time |\n|---|---|---|\n")
	for _, s := range steps {
		d := preciseDuration(s.Duration)
		if s.State == StepRunning {
			d = tickDuration(s.Duration, tick)
		}
		if s.State == StepPending {
			d = "waiting"
		} else if s.State == StepSkipped {
			d = "—"
		}
		name := cell(cellText(s.Name, maxCellBytes))
		if s.Note != "" {
			name += " — " + cell(cellText(s.Note, maxCellBytes))
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", s.State.emoji(), name, d)
	}
	return b.String()
}

// tickDuration is a running time rounded down to tick ("under 1m" below one), or precise
// without a tick.
func tickDuration(d, tick time.Duration) string {
	switch {
	case tick <= 0:
		return preciseDuration(d)
	case d < tick:
		return "under " + FormatDuration(tick)
	}
	return FormatDuration(d.Truncate(tick))
}

// preciseDuration keeps seconds under an hour: step times are what people compare between runs.
func preciseDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour || d < time.Minute {
		return FormatDuration(d)
	}
	if d%time.Minute == 0 {
		return FormatDuration(d)
	}
	return fmt.Sprintf("%dm %ds", d/time.Minute, (d%time.Minute)/time.Second)
}

// fence puts text in a fenced code block whose fence is longer than any backtick run inside,
// so that the text cannot close it.
func fence(s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + "text\n" + strings.TrimRight(s, "\n") + "\n" + f + "\n"
}

// tail keeps the last n bytes of s, starting at a line (or rune) boundary, with a note.
func tail(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(s) {
		return s
	}
	cut := len(s) - n
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < 200 {
		cut += i + 1
	}
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	dropped := strings.Count(s[:cut], "\n")
	return fmt.Sprintf("… %d earlier lines cut …\n", dropped) + s[cut:]
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// NotifyView is the short comment posted when a command finishes: editing the sticky comment
// notifies nobody, this one @-mentions the requester.
type NotifyView struct {
	Requester string
	Verb      Verb
	Cluster   string
	OK        bool
	Summary   string // one trusted line, e.g. "API at k8s-poc.example.com:6443, 3.84 €/day"
	StickyURL string // html_url of the sticky comment
}

// RenderNotify renders the notification.
func RenderNotify(v NotifyView) string {
	status := "finished ✅"
	if !v.OK {
		status = "failed ❌"
	}
	s := fmt.Sprintf("%s `/poc %s` on `%s` %s", mention(v.Requester), v.Verb, v.Cluster, status)
	if v.Summary != "" {
		s += ": " + cellText(v.Summary, 4*maxCellBytes)
	}
	if v.StickyURL != "" {
		s += " — [details](" + v.StickyURL + ")"
	}
	return fit(s + "\n")
}
