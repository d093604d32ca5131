package commands

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Bodies within GitHub's limit. GitHub refuses an issue or comment body over 65,536 characters
// (MaxCommentBytes), and says neither which characters nor how it counts them: bodies are
// measured here in bytes, never fewer than characters, code points or UTF-16 units. Every
// renderer's result stays within MaxBodyBytes, leaving bodyReserve for what is added after
// rendering: the status editor's markers and a comment's post marker (internal/github, under 100
// bytes), a schedule notice (WithNotice, under 1 KiB).
const (
	bodyReserve  = 2048
	MaxBodyBytes = MaxCommentBytes - bodyReserve
	// maxErrorBytes is what one error shows: its head and its end (where the cause usually is),
	// the middle cut with a note; the run's log has it whole.
	maxErrorBytes = 4096
	// maxRows is the most rows a table or list of a reply shows; the others are counted.
	maxRows = 60
)

// cutMiddle keeps s within n bytes: its head and its tail, cut at line boundaries (else at a
// blank, else a rune: never inside a word when it can help it, so that a secret is not halved
// into a piece Redact no longer knows), with a note in between saying how much was left out.
func cutMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const noteMax = 80
	keep := max(n-noteMax, 0) / 2
	head := s[:keep]
	if i := strings.LastIndexByte(head, '\n'); i > keep/2 {
		head = head[:i+1]
	} else if i := strings.LastIndexAny(head, " \t"); i > keep/2 {
		head = head[:i+1]
	}
	head = truncateUTF8(head, len(head))
	tailAt := len(s) - keep
	if i := strings.IndexByte(s[tailAt:], '\n'); i >= 0 && i < keep/2 {
		tailAt += i + 1
	} else if i := strings.IndexAny(s[tailAt:], " \t"); i >= 0 && i < keep/2 {
		tailAt += i + 1
	}
	for tailAt < len(s) && !utf8.RuneStart(s[tailAt]) {
		tailAt++
	}
	cut := tailAt - len(head)
	if !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	return head + fmt.Sprintf("… %d bytes cut here; the run's log has them …\n", cut) + s[tailAt:]
}

// shown is the part of an error (or any long text from outside) a comment shows: redacted, then
// its head and end within n bytes. A text many times longer is cut to 4·n first (at blanks), so
// that redacting a megabyte does not cost every render a second.
func shown(s string, n int) string { return cutMiddle(Redact(cutMiddle(s, 4*n)), n) }

// cellText is one line of outside text in a table cell or list item: escaped (and so redacted)
// and cut to n bytes; only its first 2·n bytes are read.
func cellText(s string, n int) string { return clip(EscapeText(clip(s, 2*n)), n) }

// maxCellBytes bounds the text of one table cell or list line (a step's name and note, a
// resource's name): one line of a table, not a page.
const maxCellBytes = 300

// clip keeps one line of text within n bytes, ending with "…" when it was cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncateUTF8(s, n-len("…")) + "…"
}

// elide keeps the first n of items and says how many more there were.
func elide[T any](items []T, n int) ([]T, int) {
	if len(items) <= n {
		return items, 0
	}
	return items[:n], len(items) - n
}

// moreRows is the line that ends a table or list whose rows were elided ("" when none were).
func moreRows(more int, what string) string {
	if more <= 0 {
		return ""
	}
	return fmt.Sprintf("\n_… and %d more %s, not shown: this comment would pass GitHub's size limit._\n", more, what)
}

// cutNote ends a body that fit had to cut.
const cutNote = "\n_… cut: this comment reached GitHub's size limit; the run's log has the rest._\n"

// fit keeps a rendered body within MaxBodyBytes. A body over it is cut at a line, the code
// fences and <details> blocks it leaves open are closed (so that the note after them reads as
// text), and cutNote says so. Renderers cut their known long parts first (errors, logs, tables);
// this is the last guard, for what nothing else bounds.
func fit(body string) string {
	return fitTo(body, MaxBodyBytes)
}

func fitTo(body string, limit int) string {
	if len(body) <= limit {
		return body
	}
	// Room for the note and for closing what is open: a fence is at most a few backticks
	// longer than the longest run in the text, bounded here by the body's own length.
	room := limit - len(cutNote) - 256
	for {
		cut := truncateUTF8(body, max(room, 0))
		if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
			cut = cut[:i+1]
		}
		closing := closeOpen(cut)
		if out := cut + closing + cutNote; len(out) <= limit || room <= 0 {
			return out
		}
		room -= len(closing)
	}
}

// closeOpen returns what closes the fenced code blocks and <details> blocks that body leaves
// open, line by line as CommonMark reads fences (a line of three or more backticks opens one; a
// line of at least as many closes it).
func closeOpen(body string) string {
	fence, details := "", 0
	for line := range strings.SplitSeq(body, "\n") {
		t := strings.TrimLeft(line, " ")
		if fence != "" {
			if run := backticks(t); run >= len(fence) && strings.TrimSpace(t[run:]) == "" {
				fence = ""
			}
			continue
		}
		if run := backticks(t); run >= 3 && !strings.Contains(t[run:], "`") {
			fence = t[:run]
			continue
		}
		details += strings.Count(t, "<details>") - strings.Count(t, "</details>")
	}
	var b strings.Builder
	if fence != "" {
		b.WriteString(fence + "\n")
	}
	for range max(details, 0) {
		b.WriteString("\n</details>\n")
	}
	return b.String()
}

// backticks is the length of the run of backticks s starts with.
func backticks(s string) int {
	n := 0
	for n < len(s) && s[n] == '`' {
		n++
	}
	return n
}
