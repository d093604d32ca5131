package scaleway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/pocbot/pocbot/internal/retry"
)

// RetryTransport retries 429 answers (every method: the request was refused before taking
// effect), honouring Retry-After, and 5xx answers of methods safe to repeat (not POST: a create
// answered 500 may have happened; the node looks it up by tag instead). Attempts are bounded and
// every wait ends with the request's context; the loop is internal/retry's (policy).
type RetryTransport struct {
	Base     http.RoundTripper
	Attempts int           // default 5
	MinWait  time.Duration // first backoff; default 50 ms
	MaxWait  time.Duration // cap of backoff and of Retry-After; default 10 s
}

// policy is the transport's retry.Policy: from MinWait doubling up to MaxWait, each wait between
// half and the whole of it; a longer Retry-After is cut to MaxWait.
func (t *RetryTransport) policy() retry.Policy {
	p := retry.Policy{Attempts: t.Attempts, Wait: t.MinWait, MaxWait: t.MaxWait, Jitter: retry.HalfJitter}
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.Wait <= 0 {
		p.Wait = 50 * time.Millisecond
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 10 * time.Second
	}
	p.MaxAfter = p.MaxWait
	return p
}

// RoundTrip implements http.RoundTripper.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body of %s %s: %w", req.Method, req.URL.Path, err)
		}
		body = b
	}
	var last *http.Response
	err := t.policy().Do(req.Context(), req.Method+" "+req.URL.Path, func(ctx context.Context, _ int) retry.Outcome {
		r := req.Clone(ctx)
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		resp, err := base.RoundTrip(r)
		last = resp
		if err != nil {
			return retry.Outcome{Err: err} // an answer never came: it may have taken effect
		}
		o := retry.Outcome{Retry: resp.StatusCode == http.StatusTooManyRequests || (resp.StatusCode >= 500 && req.Method != http.MethodPost),
			Drop: func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }}
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			o.After = time.Duration(s) * time.Second
		}
		return o
	})
	if err != nil {
		return nil, err
	}
	return last, nil
}
