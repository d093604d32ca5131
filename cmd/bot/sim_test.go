//go:build sim

package main

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"
)

// `bot sim --readings` lists every row of the assumptions register with the readings the
// stand-ins play; `--reading` refuses an unknown row or value, naming what is valid.
func TestSimReadings(t *testing.T) {
	out, err := runBotOut(t.Context(), map[string]string{}, "sim", "--readings")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range assume.Register {
		if !strings.Contains(out, r.ID) || !strings.Contains(out, r.Default+" (default)") {
			t.Errorf("the listing lacks %s:\n%s", r.ID, out)
		}
	}
	for arg, want := range map[string]string{"nope=1": "no register row", "dns-comment=maybe": "dns-comment plays echoed, dropped"} {
		if _, err := runBotOut(t.Context(), map[string]string{}, "sim", "--reading", arg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--reading %s: %v, want %q", arg, err, want)
		}
	}
}
