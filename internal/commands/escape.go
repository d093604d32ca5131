package commands

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote makes user text safe to echo in a reply: secrets redacted, cut to fewer than MaxEcho
// characters, markdown and HTML neutralized, no @-mention or #-reference, one line; wrapped in
// typographic quotes so an empty word stays visible.
func Quote(s string) string {
	return "“" + Escape(s) + "”"
}

// Escape is Quote without the quotes: it returns text that renders literally in GitHub markdown.
// The result never holds a newline and is always placed mid-line, so the characters that only
// matter at a line start (- + . = ! #) need no escape. Why each rule: backslash escapes stop
// emphasis, links, tables and code spans; &lt; &gt; &amp;
// stop raw HTML (and hidden <!-- markers --> that could spoof the sticky comment); a zero-width
// space after @ and # stops GitHub's mention and issue-reference filters, which run on the
// decoded text and would otherwise notify strangers or cross-link issues.
func Escape(s string) string {
	s = Redact(s)
	if utf8.RuneCountInString(s) >= MaxEcho {
		r := []rune(s)
		s = string(r[:MaxEcho-1]) + "…"
	}
	return escapeMarkdown(s)
}

// EscapeText is Escape without the length cut, for longer text the bot itself produced (step
// names, error summaries, a refusal's reason) that may still hold characters markdown would
// interpret. MaxEcho bounds what a user can make the bot repeat; the bot's own words are shown
// whole.
func EscapeText(s string) string { return escapeMarkdown(Redact(s)) }

func escapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteRune('\uFFFD')
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case unicode.IsControl(r) || isBidi(r):
			b.WriteRune('\uFFFD')
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '@' || r == '#':
			b.WriteRune(r)
			b.WriteRune('\u200B')
		case r < utf8.RuneSelf && strings.ContainsRune("\\`*_[]|~", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBidi reports the explicit direction controls that can make echoed text read differently
// from what it is (the "Trojan Source" trick).
func isBidi(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// validLogin reports whether s is a GitHub login, so that "@"+s mentions exactly that user.
func validLogin(s string) bool {
	if s == "" || len(s) > 39 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' ||
			(c == '[' || c == ']')) { // bots: "pocbot[bot]"
			return false
		}
	}
	return true
}

// mention renders "@login" for a valid login, the escaped text otherwise.
func mention(login string) string {
	if validLogin(login) && !strings.ContainsAny(login, "[]") {
		return "@" + login
	}
	return Escape(login)
}

// inlineCode wraps s (trusted or already-validated text: names, ids, addresses, URLs we built)
// in a code span, using a longer backtick fence when s itself holds backticks.
func inlineCode(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

// cell makes trusted text safe inside a table cell: a pipe or newline would break the row.
func cell(s string) string {
	s = strings.NewReplacer("|", "\\|", "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return "—"
	}
	return s
}
