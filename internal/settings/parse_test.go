package settings

import (
	"testing"
	"time"
)

// The one duration grammar reads what it prints, and never yields a negative duration.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"8h", "90m", "2d", "1.5d", "1d12h", "0", "-1h", "1500ms", "99999999999999d", "1..5h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v, negative", s, d)
		}
		if d == 0 {
			return
		}
		back, err := ParseDuration(FormatDuration(d))
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v; FormatDuration = %q reads back as %v, %v", s, d, FormatDuration(d), back, err)
		}
	})
}

func TestParseDurationIsTheCommentsGrammar(t *testing.T) {
	for in, want := range map[string]time.Duration{"2d": 48 * time.Hour, "1.5d": 36 * time.Hour, "1d12h": 36 * time.Hour, "0": 0, "0s": 0} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "8", "8H", "-1h", "1w", "1d 2h"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestDurationOr(t *testing.T) {
	t.Parallel()

	for _, tt := range []struct {
		name         string
		v, def, want time.Duration
	}{
		{"set", 90 * time.Second, time.Minute, 90 * time.Second},
		{"set below the default", time.Nanosecond, time.Hour, time.Nanosecond},
		{"zero takes the default", 0, 2 * time.Minute, 2 * time.Minute},
		{"negative takes the default", -time.Second, 3 * time.Second, 3 * time.Second},
		{"zero with no default", 0, 0, 0},
	} {
		if got := DurationOr(tt.v, tt.def); got != tt.want {
			t.Errorf("%s: DurationOr(%v, %v) = %v, want %v", tt.name, tt.v, tt.def, got, tt.want)
		}
	}
}
