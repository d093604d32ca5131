package main

import (
	"bytes"
	"strings"
	"testing"
)

// `--help` is an answer, not an error: it goes to stdout only, once, and exits 0.
func TestHelpGoesToStdoutOnly(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"up", "--help"}, {"up", "-h"}, {"reap", "--help"}, {"state", "--help"}, {"state", "ls", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var so, se bytes.Buffer
			a := newApp(&so, &se, func(string) string { return "" })
			if err := a.dispatch(t.Context(), args); err != nil {
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

func TestVersionCommand(t *testing.T) {
	var so, se bytes.Buffer
	a := newApp(&so, &se, func(string) string { return "" })
	if err := a.dispatch(t.Context(), []string{"version"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"pocbot dev", "go          go1.", "talos       v1.13.11", "kubernetes  1.33.6 (for talos v1.13)", "(for talos v1.14)", "cilium      1.18.1 (quay.io/cilium/cilium:v1.18.1@sha256:"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("bot version lacks %q:\n%s", want, so.String())
		}
	}
}
