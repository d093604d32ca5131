package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/pocbot/pocbot/internal/retry"
	"github.com/pocbot/pocbot/internal/settings"
)

// DefaultPollInterval is the poll interval of waits when POC_POLL_INTERVAL is unset. The SDK's
// own waiters poll every 5-15 s, too coarse for the emulator and for the critical-path benchmark.
const DefaultPollInterval = 2 * time.Second

// PollIntervalFromEnv reads POC_POLL_INTERVAL (a duration in the settings' one grammar, like
// "50ms", or milliseconds).
func PollIntervalFromEnv() (time.Duration, error) {
	v := settings.Env(os.Getenv).String("poll-interval")
	if v == "" {
		return DefaultPollInterval, nil
	}
	if d, err := settings.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	if ms, err := strconv.Atoi(v); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond, nil
	}
	return 0, fmt.Errorf("%s=%q: give a positive duration such as 2s or 100ms", settings.Lookup("poll-interval").Env, v)
}

// transientError marks an error worth retrying (5xx, 429, a resource in a transient state).
type transientError struct {
	err   error
	after time.Duration
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// Transient marks err as retryable; after > 0 is the server's Retry-After.
func Transient(err error, after time.Duration) error {
	if err == nil {
		return nil
	}
	return &transientError{err: err, after: after}
}

// IsTransient reports whether err is marked retryable, with the wait the server asked for.
func IsTransient(err error) (bool, time.Duration) {
	var t *transientError
	if errors.As(err, &t) {
		return true, t.after
	}
	return false, 0
}

// Backoff is the engine's retry policy of transient errors: exponential from Min to Max, each
// wait between half and the whole of it.
type Backoff struct {
	Min, Max time.Duration
}

// policy is b as internal/retry runs it: until the context ends, a Retry-After carried by the
// error taken when longer.
func (b Backoff) policy() retry.Policy {
	lo := b.Min
	if lo <= 0 {
		lo = 10 * time.Millisecond
	}
	return retry.Policy{Wait: lo, MaxWait: max(b.Max, lo), Jitter: retry.HalfJitter}
}

// Retry calls fn until it succeeds, returns a non-transient error, or ctx ends. Transient errors
// are retried with backoff and jitter, honouring a Retry-After carried by the error.
func Retry(ctx context.Context, b Backoff, what string, fn func(ctx context.Context) error) error {
	return b.policy().Do(ctx, what, func(ctx context.Context, _ int) retry.Outcome {
		err := fn(ctx)
		ok, after := IsTransient(err)
		return retry.Outcome{Err: err, Retry: ok, After: after}
	})
}

// Poll calls check every interval until it reports done, returns a non-transient error, or ctx
// ends. Transient errors from check count as "not yet".
func Poll(ctx context.Context, interval time.Duration, what string, check func(ctx context.Context) (bool, error)) error {
	var last error
	for {
		done, err := check(ctx)
		if err == nil && done {
			return nil
		}
		if err != nil {
			if ok, _ := IsTransient(err); !ok {
				return err
			}
			last = err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			if last != nil {
				return fmt.Errorf("wait for %s: %w (last error: %w)", what, context.Cause(ctx), last)
			}
			return fmt.Errorf("wait for %s: %w", what, context.Cause(ctx))
		case <-t.C:
		}
	}
}
