package commands

import (
	"strings"
	"testing"
)

// BenchmarkParseLargeComment parses a comment at GitHub's 65,536-character limit whose command
// is on its last line (the CommonMark parse walks the whole body): the cost of hole 5's fix on
// the worst comment GitHub can send.
func BenchmarkParseLargeComment(b *testing.B) {
	var body strings.Builder
	for body.Len() < 65000 {
		body.WriteString("Some *review* text with `code`, a [link](https://example.com) and <!-- a note -->.\n\n> quoted /poc down\n\n")
	}
	body.WriteString("/poc status")
	s := body.String()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		if r := Parse(s, ParseConfig{}); r.Command == nil || r.Command.Verb != VerbStatus {
			b.Fatalf("got %+v", r)
		}
	}
}
