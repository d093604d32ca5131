package github

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	simgh "github.com/pocbot/pocbot/internal/sim/github"
)

// fakeClock is the stand-in's clock; the retry policy's Sleep moves it instead of sleeping, so a
// test waits out a minute-long Retry-After in no time.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept []time.Duration
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	return ctx.Err()
}

func (c *fakeClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// TestStickySurvivesSecondaryLimit: GitHub's secondary limit on content creation refuses the
// status comment's writes, saying when to retry in each way GitHub's page names (Retry-After,
// x-ratelimit-reset, nothing); the editor waits as asked (a minute, doubling, when nothing is
// named), never sends a write before then, and the last body is written. The clock is fake: the
// stand-in, the client and the editor read it, and every wait moves it.
func TestStickySurvivesSecondaryLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer simgh.LimitAnswer
	}{{"Retry-After", simgh.AnswerRetryAfter}, {"x-ratelimit-reset", simgh.AnswerReset}, {"nothing named", simgh.AnswerSilent}} {
		t.Run(tc.name, func(t *testing.T) {
			sim, clock, ctx, s := onFakeClock(t, simgh.Options{ContentLimit: simgh.ContentLimit{PerMinute: 3, Answer: tc.answer}}, time.Millisecond)
			n := s.number
			for i := range 12 {
				if err := s.Update(ctx, "step "+string(rune('a'+i))); err != nil {
					t.Fatalf("update %d: %v", i, err)
				}
				if err := s.Flush(ctx); err != nil {
					t.Fatalf("flush %d: %v", i, err)
				}
			}
			cs := sim.Comments(testRepo, n)
			if len(cs) != 1 || !strings.HasSuffix(cs[0].Body, "step l") {
				t.Fatalf("comments %+v, want one with the last step", cs)
			}
			if sim.ContentLimitRefusals() == 0 {
				t.Fatal("the secondary limit was never reached: the test proves nothing")
			}
			// No write was sent in a refusal's wait: after each refusal, the next write comes
			// when the limit lets it through, not before.
			var refusedAt time.Time
			for _, r := range sim.Requests() {
				if r.Method != "PATCH" && r.Method != "POST" {
					continue
				}
				if !refusedAt.IsZero() && r.At.Sub(refusedAt) < time.Second {
					t.Errorf("%s %s sent %v after a refusal", r.Method, r.Path, r.At.Sub(refusedAt))
				}
				refusedAt = time.Time{}
				if r.Status == 403 {
					refusedAt = r.At
				}
			}
			for _, d := range clock.waits() {
				if d <= 0 || d > 2*time.Minute {
					t.Errorf("waited %v; GitHub's window is a minute", d)
				}
			}
			t.Logf("%d refusals waited out: %v", sim.ContentLimitRefusals(), clock.waits())
		})
	}
}

// TestStickyFinalOutlastsRefusals: the final body is refused more often than the client's
// retries (4 tries) would take: Flush keeps the latest body and tries again as GitHub asks, so
// the final status arrives (before, it was lost with the fourth refusal).
func TestStickyFinalOutlastsRefusals(t *testing.T) {
	t.Parallel()
	sim, _, ctx, s := onFakeClock(t, simgh.Options{}, time.Second)
	n := s.number
	if err := s.Update(ctx, "running"); err != nil {
		t.Fatal(err)
	}
	sim.Inject(simgh.Fault{Method: "PATCH", PathContains: "/comments/", SecondaryRateLimit: true, RetryAfter: 30 * time.Second, Times: 6})
	if err := s.Update(ctx, "final"); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("the final body was lost: %v", err)
	}
	if cs := sim.Comments(testRepo, n); len(cs) != 1 || !strings.HasSuffix(cs[0].Body, "final") {
		t.Fatalf("comments %+v", cs)
	}
	patches := 0
	for _, r := range sim.Requests() {
		if r.Method == "PATCH" {
			patches++
		}
	}
	if patches != 7 {
		t.Errorf("%d edits sent, want 7 (six refused, each after the 30 s asked, then the final)", patches)
	}
}

// onFakeClock starts a stand-in of opts with an issue, and a status editor of minInterval on it,
// the stand-in, the client and the editor all on one fake clock that every wait moves.
func onFakeClock(t *testing.T, opts simgh.Options, minInterval time.Duration) (*simgh.Server, *fakeClock, context.Context, *Sticky) {
	t.Helper()
	clock := &fakeClock{t: time.Now()} // the App's JWT is signed on the real clock
	opts.Now = clock.now
	sim, url := startSim(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	sim.AddRepo(testRepo, "main")
	n := sim.AddIssue(testRepo, simgh.Issue{})
	c, err := NewClient(ctx, Auth{AppID: sim.AppID(), PrivateKeyPEM: sim.AppPrivateKeyPEM(), Owner: "acme", Repo: "web",
		BaseURL: url, Logger: slog.New(slog.DiscardHandler), Retry: RetryPolicy{Sleep: clock.sleep, Now: clock.now}, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	return sim, clock, ctx, NewSticky(c, n, marker, minInterval).WithClock(clock.now, clock.sleep)
}

// scripted answers a fixed sequence of responses, then 200s.
type scripted struct {
	mu    sync.Mutex
	resps []func() *http.Response
	tries int
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if len(s.resps) == 0 {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
	}
	r := s.resps[0]()
	s.resps = s.resps[1:]
	r.Request = req
	return r, nil
}

func answer(status int, body string, headers ...string) func() *http.Response {
	return func() *http.Response {
		h := http.Header{}
		for i := 0; i+1 < len(headers); i += 2 {
			h.Set(headers[i], headers[i+1])
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}
	}
}

// TestRateLimitWaits: the waits follow GitHub's "Exceeding the rate limit": Retry-After; else
// x-ratelimit-reset when x-ratelimit-remaining is 0; else a minute, doubling; never past MaxDelay.
func TestRateLimitWaits(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	reset := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) }
	const secondary = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`
	tests := []struct {
		name   string
		resps  []func() *http.Response
		waits  []time.Duration
		status int
	}{
		{"Retry-After", []func() *http.Response{answer(403, secondary, "Retry-After", "60")}, []time.Duration{time.Minute}, 200},
		{"429 with Retry-After", []func() *http.Response{answer(429, "{}", "Retry-After", "45")}, []time.Duration{45 * time.Second}, 200},
		{"remaining 0: until the reset", []func() *http.Response{answer(429, "{}", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset(90*time.Second))},
			[]time.Duration{91 * time.Second}, 200},
		{"no time named: a minute, doubling, up to the bound", []func() *http.Response{answer(403, secondary), answer(403, secondary), answer(403, secondary)},
			[]time.Duration{time.Minute, 2 * time.Minute}, 403},
		{"over the bound: not waited", []func() *http.Response{answer(403, secondary, "Retry-After", "600")}, nil, 403},
		{"primary limit resetting in 40 min", []func() *http.Response{answer(403, "{}", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", reset(40*time.Minute))}, nil, 403},
		{"a permission refusal", []func() *http.Response{answer(403, `{"message":"Resource not accessible by integration"}`)}, nil, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: now}
			rt := &retryTransport{next: &scripted{resps: tc.resps}, policy: RetryPolicy{Sleep: clock.sleep, Now: func() time.Time { return now }}.withDefaults()}
			req, _ := http.NewRequestWithContext(t.Context(), "PATCH", "http://127.0.0.1/repos/acme/web/issues/comments/1", nil)
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status || !slices.Equal(clock.waits(), tc.waits) {
				t.Fatalf("status %d after waits %v, want %d after %v", resp.StatusCode, clock.waits(), tc.status, tc.waits)
			}
		})
	}
}

// TestStickyLiveEditUnderLimit: a live edit refused by a secondary limit is not sent again with
// its old body: the bodies given during the wait are coalesced and only the latest is written,
// once the Retry-After is over, without a Flush.
func TestStickyLiveEditUnderLimit(t *testing.T) {
	t.Parallel()
	w, c, ctx, n := onNewIssue(t)
	s := NewSticky(c, n, marker, 10*time.Millisecond)
	if err := s.Update(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	w.sim.Inject(simgh.Fault{Method: "PATCH", PathContains: "/comments/", SecondaryRateLimit: true, RetryAfter: time.Second})
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	for _, b := range []string{"two", "three", "four"} {
		if err := s.Update(ctx, b); err != nil {
			t.Fatalf("update %s: %v", b, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, "the latest body arrives after the wait", func() bool {
		cs := w.sim.Comments(testRepo, n)
		return len(cs) == 1 && strings.HasSuffix(cs[0].Body, "four")
	})
	var bodies []string
	for _, r := range w.sim.Requests() {
		if r.Method == "PATCH" {
			bodies = append(bodies, strconv.Itoa(r.Status))
		}
	}
	if !slices.Equal(bodies, []string{"403", "200"}) || time.Since(start) < time.Second {
		t.Fatalf("edits answered %v after %v; want one refusal, then the latest body once the second asked for is over", bodies, time.Since(start))
	}
}

// TestWriteGate: after a write is refused with a time named, the process's other writes wait
// for it (GitHub asks not to retry before, and warns that requests made while limited may get
// an integration banned); a request that may not wait gets the refusal at once, unsent; reads
// and token minting are not held.
func TestWriteGate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := &fakeClock{t: now}
	next := &scripted{resps: []func() *http.Response{answer(403, `{"message":"You have exceeded a secondary rate limit."}`, "Retry-After", "30")}}
	rt := &retryTransport{next: next, policy: RetryPolicy{Sleep: clock.sleep, Now: clock.now, MaxDelay: 10 * time.Second}.withDefaults()}
	send := func(ctx context.Context, method, path string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, method, "http://127.0.0.1"+path, nil)
		return rt.RoundTrip(req)
	}
	resp, err := send(t.Context(), "PATCH", "/repos/acme/web/issues/comments/1")
	if err != nil || resp.StatusCode != 403 {
		t.Fatalf("a 30 s wait over MaxDelay is not waited: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, c := range []struct {
		name, method, path string
		ctx                context.Context
		sent               bool
	}{
		{"a read", "GET", "/repos/acme/web", t.Context(), true},
		{"minting a token", "POST", "/app/installations/1/access_tokens", t.Context(), true},
		{"a write that may not wait", "POST", "/repos/acme/web/issues/1/comments", WithoutRateLimitWait(t.Context()), false},
		{"a write over MaxDelay", "POST", "/repos/acme/web/issues/1/reactions", t.Context(), false},
	} {
		before := next.tries
		resp, err := send(c.ctx, c.method, c.path)
		var gate *GateError
		switch {
		case c.sent && (err != nil || next.tries != before+1):
			t.Errorf("%s: err %v, sent %d", c.name, err, next.tries-before)
		case !c.sent && (!errors.As(err, &gate) || next.tries != before || !gate.Until.Equal(now.Add(30*time.Second))):
			t.Errorf("%s: err %v, sent %d; want a GateError until the refusal's 30 s, unsent", c.name, err, next.tries-before)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
	clock.sleep(t.Context(), 25*time.Second)
	if resp, err := send(t.Context(), "PATCH", "/repos/acme/web/issues/comments/1"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a write 5 s before the end: %v %v", resp, err)
	}
	if w := clock.waits(); !slices.Equal(w, []time.Duration{25 * time.Second, 5 * time.Second}) {
		t.Errorf("waits %v, want the test's 25 s then the gate's last 5 s", w)
	}
}
