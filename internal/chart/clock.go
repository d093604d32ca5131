package chart

import (
	"errors"
	"fmt"
	"time"
)

// The clock. Charts call sprig's now to check a duration, not to print it: Cilium's
// validateDuration helper is `$_ := now | mustDateModify (toString .)` (the duration must
// parse), and its hasDuration is `ne $now ($now | dateModify (toString .))` (the duration is not
// zero). So now, dateModify and mustDateModify are here, with sprig's semantics, and a time
// value can be compared with eq and ne; but the bot needs the same manifest from every render,
// so a render in which a time is turned into text (printed, quoted, encoded, formatted), or
// whose other methods a template calls, is refused (ErrClock).

// ErrClock is a chart whose output would depend on when it is rendered.
var ErrClock = errors.New("the chart formats the current time (now): its manifest would differ on each render")

// instant is a time.Time as a template holds it. formatted is the render's: set when the time
// is turned into text, which Render then refuses.
type instant struct {
	t         time.Time
	formatted *bool
}

func (i instant) String() string {
	*i.formatted = true

	return i.t.String()
}

func (instant) typeName() string { return "time.Time" }

func (instant) field(string) (any, bool) { return nil, false }

func (i instant) method(name string) (func([]any) (any, error), bool) {
	return func([]any) (any, error) {
		return nil, fmt.Errorf("time.Time.%s is not supported by pocbot's chart renderer: %w", name, ErrClock)
	}, true
}

func fnNow(s *state, a []any) (any, error) {
	if err := nargs(a, 0); err != nil {
		return nil, err
	}

	return instant{t: time.Now(), formatted: s.e.clockFormatted}, nil
}

// dateModify is sprig's: the date moved by a Go duration ("-1h30m"); dateModify leaves the date
// as it is when the duration does not parse, mustDateModify fails.
func dateModify(a []any, must bool) (any, error) {
	if err := nargs(a, 2); err != nil {
		return nil, err
	}

	d, err := stringArg(a[0])
	if err != nil {
		return nil, err
	}

	date, ok := a[1].(instant)
	if !ok {
		return nil, fmt.Errorf("wrong type for value; expected time.Time; got %s", goType(a[1]))
	}

	dur, err := time.ParseDuration(d)
	switch {
	case err != nil && must:
		return nil, err
	case err != nil:
		return date, nil
	}

	return instant{t: date.t.Add(dur), formatted: date.formatted}, nil
}
