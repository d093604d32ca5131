package github

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pocbot/pocbot/internal/retry"
)

// RetryPolicy bounds the retries on GitHub's transient answers: 5xx, 429 and rate limits (403 or
// 429 with Retry-After, x-ratelimit-remaining 0, or the "secondary rate limit" message). The loop
// is internal/retry's (retryPolicy); what is transient, and how long GitHub asks to wait, is
// decided here (classify).
//
// Rate limits follow GitHub's "Rate limits for the REST API" (Exceeding the rate limit): wait
// Retry-After seconds when it is sent; else, when x-ratelimit-remaining is 0, until
// x-ratelimit-reset; else at least a minute, doubling while the refusals go on. A wait longer
// than MaxDelay is not made: the request fails with GitHub's answer, which says how long.
type RetryPolicy struct {
	Attempts  int           // total tries, default 4
	BaseDelay time.Duration // first back-off of a 5xx, doubled each time (with jitter); default 1 s
	// MaxDelay is the longest single wait (default 2 min: a secondary limit's minute, with room);
	// a primary limit resetting in 40 minutes is not waited for.
	MaxDelay time.Duration
	// Sleep waits d or until ctx ends; tests replace it to run instantly.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now reads the clock against which x-ratelimit-reset and HTTP-date Retry-After are taken;
	// nil = time.Now.
	Now func() time.Time
	// AttemptTimeout bounds one attempt until GitHub's response headers (default 1 min); an
	// attempt without an answer by then is retried as a network error is.
	AttemptTimeout time.Duration
}

// secondaryMinWait is GitHub's "wait for at least one minute before retrying" after a secondary
// limit that names no time.
const secondaryMinWait = time.Minute

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.AttemptTimeout <= 0 {
		p.AttemptTimeout = time.Minute
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 2 * time.Minute
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Sleep == nil {
		p.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	return p
}

// retryPolicy is p as internal/retry runs it: a 5xx's wait doubles from BaseDelay with up to a
// quarter more (so that parallel runs do not retry in lockstep); a wait GitHub names (Retry-After,
// a rate limit's reset) is taken as it is, and one over MaxDelay is not made.
func (p RetryPolicy) retryPolicy() retry.Policy {
	return retry.Policy{Attempts: p.Attempts, Wait: p.BaseDelay, Jitter: retry.QuarterMore,
		MaxAfter: p.MaxDelay, GiveUpOverMaxAfter: true, Sleep: p.Sleep}
}

type retryTransport struct {
	next   http.RoundTripper
	policy RetryPolicy
	// gate is when (Unix ns) the last rate-limit refusal of a write said writes may resume: GitHub
	// asks not to retry before then, and "continuing to make requests while you are rate limited
	// may result in the banning of your integration", so every write of the process waits for it.
	gate atomic.Int64
}

type noWaitKey struct{}

// WithoutRateLimitWait marks the requests made with ctx as not to be waited for on a rate limit:
// a refusal (or a write while an earlier refusal's wait runs) comes back at once as an *APIError
// with RateLimited and RetryAfter, for a caller that keeps its own latest state to write (Sticky)
// rather than have an older body sent again a minute later. 5xx answers are still retried.
func WithoutRateLimitWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

func noWait(ctx context.Context) bool { return ctx.Value(noWaitKey{}) != nil }

// GateError is a write not sent because GitHub asked, in an earlier refusal, to wait until Until.
type GateError struct{ Until time.Time }

func (e *GateError) Error() string {
	return "github: a secondary rate limit holds writes until " + e.Until.UTC().Format(time.RFC3339) + "; not sent"
}

// gated says whether req waits for the gate: a write, other than minting a token (an App call,
// no content).
func gated(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return !strings.HasSuffix(req.URL.Path, "/access_tokens")
}

// awaitGate waits until the gate lets req through, or says why it does not: the wait is longer
// than MaxDelay, or req's context asks not to wait. waited is the hold req itself has just waited
// out (its own refusal's): the gate that refusal set is then open.
func (t *retryTransport) awaitGate(req *http.Request, waited time.Time) error {
	if !gated(req) {
		return nil
	}
	until := time.Unix(0, t.gate.Load())
	if !until.After(waited) {
		return nil
	}
	d := until.Sub(t.policy.Now())
	if d <= 0 {
		return nil
	}
	if noWait(req.Context()) || d > t.policy.MaxDelay {
		return &GateError{Until: until}
	}
	return t.policy.Sleep(req.Context(), d)
}

// closeGate holds writes until until (never shortening a longer hold).
func (t *retryTransport) closeGate(until time.Time) {
	for u := until.UnixNano(); ; {
		cur := t.gate.Load()
		if cur >= u || t.gate.CompareAndSwap(cur, u) {
			return
		}
	}
}

// safeOn5xx says whether a request may be replayed after a 5xx: a 502 on "create comment" may
// still have created it, and a duplicate comment is worse than a failed run; reactions, labels
// and token minting are idempotent on GitHub's side.
func safeOn5xx(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	case http.MethodPost:
		p := req.URL.Path
		return strings.HasSuffix(p, "/access_tokens") || strings.HasSuffix(p, "/reactions") || strings.HasSuffix(p, "/labels")
	}
	return false
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	limited := 0         // consecutive rate-limit refusals of this request
	var waited time.Time // the hold this request's own refusal set, which it waits out
	var last *http.Response
	err := t.policy.retryPolicy().Do(ctx, req.Method+" "+req.URL.Path, func(ctx context.Context, attempt int) retry.Outcome {
		last = nil
		r := req
		if attempt > 1 {
			r = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				if req.GetBody == nil {
					return retry.Outcome{Err: errNoReplay}
				}
				b, err := req.GetBody()
				if err != nil {
					return retry.Outcome{Err: err}
				}
				r.Body = b
			}
		}
		if err := t.awaitGate(r, waited); err != nil {
			return retry.Outcome{Err: err}
		}
		resp, err := t.attempt(r)
		if err != nil {
			return retry.Outcome{Err: err, Retry: ctx.Err() == nil && safeOn5xx(req)}
		}
		last = resp
		before := limited
		delay, again := t.classify(req, resp, &limited)
		if rateLimited := limited > before; rateLimited {
			if gated(req) {
				// Every write of the process waits for it, this one's retry included.
				waited = t.policy.Now().Add(delay)
				t.closeGate(waited)
			}
			// A caller that keeps its own latest state hears of the limit at once.
			again = again && !noWait(ctx)
		}
		return retry.Outcome{Retry: again, After: delay, Drop: func() {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
		}}
	})
	if err != nil {
		return nil, err
	}
	return last, nil
}

// attempt sends r once, abandoned when no response headers came within AttemptTimeout; the
// body of a response that came is read under r's own context.
func (t *retryTransport) attempt(r *http.Request) (*http.Response, error) {
	actx, cancel := context.WithCancel(r.Context())
	var timedOut atomic.Bool
	timer := time.AfterFunc(t.policy.AttemptTimeout, func() { timedOut.Store(true); cancel() })
	resp, err := t.next.RoundTrip(r.WithContext(actx))
	timer.Stop()
	if err != nil {
		cancel()
		if timedOut.Load() && r.Context().Err() == nil {
			return nil, fmt.Errorf("%s %s: GitHub gave no answer within %s: %w", r.Method, r.URL.Path, t.policy.AttemptTimeout, err)
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends an attempt's context once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

type replayError struct{}

func (replayError) Error() string {
	return "github: cannot retry a request whose body cannot be replayed"
}

var errNoReplay error = replayError{}

// classify decides whether resp is transient, and how long GitHub asks to wait before the next
// try (0: the policy's back-off). limited counts the consecutive rate-limit refusals, for the doubling of unspecified waits.
func (t *retryTransport) classify(req *http.Request, resp *http.Response, limited *int) (time.Duration, bool) {
	retryAfter := func() (time.Duration, bool) {
		v := resp.Header.Get("Retry-After")
		if v == "" {
			return 0, false
		}
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(t.policy.Now()), 0), true
		}
		return 0, false
	}
	switch {
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		if !safeOn5xx(req) {
			return 0, false
		}
		if d, ok := retryAfter(); ok {
			return d, true
		}
		return 0, true // the policy's back-off
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden:
		if d, ok := retryAfter(); ok {
			*limited++
			return d, true
		}
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				*limited++
				return max(time.Unix(reset, 0).Sub(t.policy.Now()), 0) + time.Second, true
			}
		}
		if resp.StatusCode == http.StatusForbidden {
			// Peek at the message without consuming it for the caller.
			head, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			if !bytes.Contains(bytes.ToLower(head), []byte("secondary rate limit")) {
				return 0, false // a permission refusal
			}
		}
		// A secondary limit (or a 429) that names no time: at least a minute, doubling while
		// the refusals go on; MaxDelay ends it.
		*limited++
		return secondaryMinWait << (*limited - 1), true
	}
	return 0, false
}
