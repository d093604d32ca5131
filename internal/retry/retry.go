// Package retry owns the one way pocbot tries an operation again: Policy.Do, the loop (attempts,
// the waits between them, jitter, the bound of one attempt, the end of the caller's context), with
// a Policy value per caller. What is worth another try, and how long the server asked to wait, is
// the caller's: each attempt answers with an Outcome. The callers are GitHub's transport and
// comment creation (internal/github), Scaleway's transport (provision/scaleway), the engine's
// transient errors (provision.Retry), a conditional write the bucket answered 409
// (statestore), the Talos API of a node that is not up yet (provision/talos) and the rescue
// system's SSH (provision/rescue).
//
// The package knows nothing of HTTP or of any API; it imports only the standard library.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Jitter is how a wait is spread, so that parallel runs do not retry in lockstep.
type Jitter int

// The spreads of a wait d.
const (
	// NoJitter waits d exactly: a fixed poll interval, or a short doubling no one shares.
	NoJitter Jitter = iota
	// HalfJitter waits between d/2 and d: never about zero, never more than d.
	HalfJitter
	// QuarterMore waits between d and 1.25 d: never less than d.
	QuarterMore
)

// Policy is how one caller retries.
type Policy struct {
	// Attempts bounds the tries, the first included; 0 tries until ctx ends.
	Attempts int
	// Wait is the wait after the first failed attempt; it doubles after each next one, up to
	// MaxWait (0: no cap).
	Wait, MaxWait time.Duration
	Jitter        Jitter
	// MaxAfter bounds a wait the server named (Outcome.After, e.g. Retry-After), which is taken
	// when longer than the policy's own: a longer one is cut to MaxAfter, or ends the retries with
	// the attempt's outcome when GiveUpOverMaxAfter is set (0: any wait is taken).
	MaxAfter           time.Duration
	GiveUpOverMaxAfter bool
	// AttemptTimeout bounds one attempt: its context ends then (0: only ctx bounds it).
	AttemptTimeout time.Duration
	// Sleep waits d or until ctx ends (nil: a timer); tests count the waits with it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Outcome is what one attempt says.
type Outcome struct {
	// Err is the attempt's error; nil with Retry false is a success.
	Err error
	// Retry asks for another attempt.
	Retry bool
	// After is how long the server asked to wait (0: the policy decides).
	After time.Duration
	// Drop, when set, is called when this outcome is set aside for another attempt (an HTTP
	// answer's body is drained and closed); a final outcome is the caller's to use.
	Drop func()
}

// Stopped is the error of retries that ended with ctx while waiting: how many attempts ran, why
// ctx ended, and the last attempt's error.
type Stopped struct {
	What     string
	Attempts int
	Cause    error
	Last     error
}

func (s *Stopped) Error() string {
	return fmt.Sprintf("%s: gave up after %d attempts (%v); last error: %v", s.What, s.Attempts, s.Cause, s.Last)
}

// Unwrap lets errors.Is see both why the wait ended and the last error.
func (s *Stopped) Unwrap() []error { return []error{s.Cause, s.Last} }

// Do calls try (attempt counts from 1) until it succeeds or asks for no more, the attempts run
// out (then the last attempt's error is returned as it is), or ctx ends while waiting (a
// *Stopped naming what). The wait before each new attempt is the policy's, or the server's when
// longer.
func (p Policy) Do(ctx context.Context, what string, try func(ctx context.Context, attempt int) Outcome) error {
	for attempt := 1; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if p.AttemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, p.AttemptTimeout)
		}
		o := try(actx, attempt)
		cancel()
		if !o.Retry || (p.Attempts > 0 && attempt >= p.Attempts) {
			return o.Err
		}
		wait := p.Delay(attempt)
		if o.After > wait {
			switch {
			case p.MaxAfter <= 0 || o.After <= p.MaxAfter:
				wait = o.After
			case p.GiveUpOverMaxAfter:
				return o.Err
			default:
				wait = max(wait, p.MaxAfter)
			}
		}
		if o.Drop != nil {
			o.Drop()
		}
		if err := p.sleep(ctx, wait); err != nil {
			return &Stopped{What: what, Attempts: attempt, Cause: cause(ctx, err), Last: o.Err}
		}
	}
}

// Delay is the policy's wait after the attempt-th try failed (attempt counts from 1).
func (p Policy) Delay(attempt int) time.Duration {
	d := p.Wait
	for i := 1; i < attempt && d > 0 && (p.MaxWait <= 0 || d < p.MaxWait); i++ {
		d *= 2
	}
	if p.MaxWait > 0 && d > p.MaxWait {
		d = p.MaxWait
	}
	if d <= 0 {
		return 0
	}
	switch p.Jitter {
	case HalfJitter:
		return d/2 + rand.N(d/2+1)
	case QuarterMore:
		return d + rand.N(d/4+1)
	}
	return d
}

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// cause is why ctx ended (its cause when one was given), else the sleep's own error.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	if err == nil {
		err = errors.New("the wait was refused")
	}
	return err
}
