package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseDuration is the one duration grammar of every setting, wherever it is written (a comment's
// flag, a CLI flag, an environment variable, `.github/poc.yml`): Go durations ("90m", "1h30m")
// plus days ("2d", "1d12h", "1.5d"), at most 32 characters, never negative; a lone "0" is zero, as
// in Go. Units are case-sensitive ("8H" is refused, "M" would be ambiguous with months). Callers
// bound the result (a TTL must be positive, park_for at most 7d).
func ParseDuration(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a duration like 8h, 90m or 2d", s)
	if s == "0" {
		return 0, nil
	}
	if s == "" || len(s) > 32 {
		return 0, bad
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("%q is negative: a duration is 0 or more", s)
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		j := i
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		num, unit := rest[:i], rest[i:j]
		rest = rest[j:]
		if num == "" || unit == "" {
			return 0, bad
		}
		var d time.Duration
		var err error
		if unit == "d" {
			d, err = time.ParseDuration(num + "h")
			if err == nil && d > time.Duration(1<<63-1)/24 {
				err = errors.New("overflow")
			}
			d *= 24
		} else {
			d, err = time.ParseDuration(num + unit)
		}
		if err != nil || d < 0 || total > time.Duration(1<<63-1)-d {
			return 0, bad
		}
		total += d
	}
	return total, nil
}

// DurationOr is v when it is set (positive), def otherwise: the one reading of a duration field
// whose zero value means "the default" (an Ops' lock lease, a Handler's sticky interval).
func DurationOr(v, def time.Duration) time.Duration {
	if v > 0 {
		return v
	}
	return def
}

// ParseBool is the one boolean grammar of a setting written as text (a comment's switch, a CLI
// flag, an environment variable): Go's (true, false, 1, 0, t, f, in the cases strconv reads).
// `.github/poc.yml` holds YAML booleans, read by the YAML decoder.
func ParseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("%q is not a boolean: use true or false", s)
	}
	return b, nil
}
