package github

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeEvent: an event payload is untrusted input (a comment body, a label, a branch name
// are anyone's words). Decoding never panics, and what it accepts is consistent.
func FuzzDecodeEvent(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		name := strings.SplitN(filepath.Base(p), "_", 3)
		event := name[0]
		if event == "issue" || event == "pull" {
			event = name[0] + "_" + name[1]
		}
		if strings.HasPrefix(filepath.Base(p), "pull_request_target") {
			event = "pull_request_target"
		}
		f.Add(strings.TrimSuffix(event, ".json"), b)
	}
	f.Add("issue_comment", []byte(`{"action":"created","comment":{"body":"/poc up"},"issue":{"number":-1}}`))
	f.Fuzz(func(t *testing.T, name string, payload []byte) {
		ev, err := DecodeEvent(name, payload)
		if err != nil {
			return
		}
		if ev.Kind == KindComment && ev.Ignore == "" && ev.Number <= 0 {
			t.Errorf("an actionable comment event without an issue number: %+v", ev)
		}
		if ev.Ignore == "" && ev.Kind == KindComment && !utf8.ValidString(ev.Body) && utf8.Valid(payload) {
			t.Errorf("decoded body is not valid UTF-8 although the payload was")
		}
	})
}
