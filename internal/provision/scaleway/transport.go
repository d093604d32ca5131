package scaleway

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// RetryTransport retries 429 answers (every method: the request was refused before taking
// effect), honouring Retry-After, and 5xx answers of methods safe to repeat (not POST: a create
// answered 500 may have happened; the node looks it up by tag instead). Attempts are bounded and
// every wait ends with the request's context.
type RetryTransport struct {
	Base     http.RoundTripper
	Attempts int           // default 5
	MinWait  time.Duration // first backoff; default 50 ms
	MaxWait  time.Duration // cap of backoff and of Retry-After; default 10 s
}

// RoundTrip implements http.RoundTripper.
func (t *RetryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	attempts, minW, maxW := t.Attempts, t.MinWait, t.MaxWait
	if attempts <= 0 {
		attempts = 5
	}
	if minW <= 0 {
		minW = 50 * time.Millisecond
	}
	if maxW <= 0 {
		maxW = 10 * time.Second
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
	for i := 0; ; i++ {
		r := req.Clone(req.Context())
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		resp, err := base.RoundTrip(r)
		if err != nil || i == attempts-1 {
			return resp, err
		}
		retry := resp.StatusCode == http.StatusTooManyRequests ||
			(resp.StatusCode >= 500 && req.Method != http.MethodPost)
		if !retry {
			return resp, nil
		}
		wait := minW << i
		wait = wait/2 + rand.N(wait/2+1)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			if s, err := strconv.Atoi(ra); err == nil {
				wait = max(wait, time.Duration(s)*time.Second)
			}
		}
		wait = min(wait, maxW)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		tm := time.NewTimer(wait)
		select {
		case <-req.Context().Done():
			tm.Stop()
			return nil, req.Context().Err()
		case <-tm.C:
		}
	}
}
