package commands

import (
	"errors"
	"testing"
)

func TestParsePause(t *testing.T) {
	for _, tc := range []struct {
		line    string
		release bool
		err     bool
	}{
		{"/poc pause", false, false},
		{"/poc pause --release-ips", true, false},
		{"/poc PAUSE --RELEASE-IPS", true, false},
		{"/poc pause now", false, true},
		{"/poc pause --release-ip", false, true},
		{"/poc resume", false, false},
		{"/poc resume --release-ips", false, true},
	} {
		cmd, err := parseLine(tc.line[len("/poc "):], ParseConfig{}.withDefaults())
		if (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrSyntax)) {
			t.Errorf("%q: error %v, want error %v", tc.line, err, tc.err)
			continue
		}
		if err == nil && cmd.ReleaseIPs != tc.release {
			t.Errorf("%q: ReleaseIPs %v", tc.line, cmd.ReleaseIPs)
		}
	}
}
