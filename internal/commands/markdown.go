package commands

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// commandLines returns the lines a reader sees as plain lines of the comment, in order: the
// lines of its top-level paragraphs, as CommonMark (goldmark, the CommonMark 0.31 reference
// behaviour) parses them. Everything else is someone's quoted, listed, headed or hidden words,
// and never a command:
//
//   - HTML blocks and inline HTML (`<!-- … -->`, `<details>` …) — invisible or not plain text;
//   - indented and fenced code blocks, code spans (kept with their backticks, so they never
//     match) — text about a command, not a command;
//   - block quotes — someone else's words;
//   - list items — decision: a command must stand on a line of its own at the top level, so a
//     bullet that mentions `/poc down` is never an order (the help shows commands that way);
//   - headings, including a setext heading (`/poc down` underlined by `---`) — a title.
//
// Within a paragraph, a line's text is the source of its visible inline nodes: plain text,
// the text of emphasis and links, code spans' content; raw HTML contributes nothing, so a
// hidden comment can neither carry a command nor add arguments to a visible one. Text keeps its
// source bytes (backslash escapes included): the command grammar does its own quoting.
func commandLines(body string) []string {
	src := []byte(body)
	doc := goldmark.DefaultParser().Parse(text.NewReader(src))
	var lines []string
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		if n.Kind() != ast.KindParagraph {
			continue
		}
		var cur bytes.Buffer
		visibleText(n, src, &cur, &lines)
		lines = append(lines, cur.String())
	}
	return lines
}

// visibleText appends the visible text of n's inline descendants to cur, closing a line at
// every soft or hard line break.
func visibleText(n ast.Node, src []byte, cur *bytes.Buffer, lines *[]string) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.RawHTML, *ast.Image:
			// Hidden (comments, tags) or not text (an image's alt text is not read as a line).
		case *ast.Text:
			cur.Write(c.Segment.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				*lines = append(*lines, cur.String())
				cur.Reset()
			}
		case *ast.CodeSpan:
			// Kept with its backticks, so a code span never reads as (part of) a command word.
			cur.WriteByte('`')
			visibleText(c, src, cur, lines)
			cur.WriteByte('`')
		case *ast.String:
			cur.Write(c.Value)
		case *ast.AutoLink:
			cur.Write(c.Label(src))
		default:
			visibleText(c, src, cur, lines)
		}
	}
}

// asciiLower lower-cases ASCII letters only: under Unicode case folding the Kelvin sign K
// (U+212A) is "k" and the long s ſ (U+017F) is "s", so `strings.ToLower`/`EqualFold` would
// accept words a reviewer reads as something else. Other bytes are kept as they are (and then
// fail to match any verb or flag).
func asciiLower(s string) string { return asciiShift(s, 'A', 'Z', 'a') }

// asciiUpper is asciiLower's mirror (offer names): "ſ" must not become "S".
func asciiUpper(s string) string { return asciiShift(s, 'a', 'z', 'A') }

// asciiShift moves the bytes from..last (one case of the ASCII letters) to to.. (the other case)
// and keeps every other byte.
func asciiShift(s string, from, last, to byte) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if from <= c && c <= last {
			c = c - from + to
		}
		b.WriteByte(c)
	}
	return b.String()
}
