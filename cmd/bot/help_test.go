package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// `--help` is an answer, not an error: it goes to stdout only, once, and exits 0.
func TestHelpGoesToStdoutOnly(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"up", "--help"}, {"up", "-h"}, {"reap", "--help"}, {"state", "--help"}, {"state", "ls", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var so, se bytes.Buffer
			a := newApp(&so, &se, func(string) string { return "" })
			if err := a.dispatch(context.Background(), args); err != nil {
				t.Fatalf("dispatch: %v", err)
			}
			if se.Len() != 0 {
				t.Errorf("stderr is not empty:\n%s", se.String())
			}
			if so.Len() == 0 || strings.Count(so.String(), "Usage:") != 1 {
				t.Errorf("stdout has not exactly one usage:\n%s", so.String())
			}
		})
	}
}
