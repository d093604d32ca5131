package github

import (
	"context"
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
// status comment's edits with a Retry-After of up to a minute; the client waits it out (the
// default policy, no test-only bound) and the last body is written.
func TestStickySurvivesSecondaryLimit(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	sim, url := startSim(t, simgh.Options{Now: clock.now, ContentLimit: simgh.ContentLimit{PerMinute: 3}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	sim.AddRepo(testRepo, "main")
	n := sim.AddIssue(testRepo, simgh.Issue{})
	c, err := NewClient(ctx, Auth{AppID: sim.AppID(), PrivateKeyPEM: sim.AppPrivateKeyPEM(), Owner: "acme", Repo: "web",
		BaseURL: url, Logger: slog.New(slog.DiscardHandler), Retry: RetryPolicy{Sleep: clock.sleep}})
	if err != nil {
		t.Fatal(err)
	}
	s := NewSticky(c, n, marker, time.Millisecond)
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
	for _, d := range clock.waits() {
		if d <= 0 || d > time.Minute {
			t.Errorf("waited %v; GitHub asked for at most a minute", d)
		}
	}
	t.Logf("%d refusals waited out: %v", sim.ContentLimitRefusals(), clock.waits())
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
