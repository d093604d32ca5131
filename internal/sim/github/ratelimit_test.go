package github

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestContentLimit: content-generating requests over the per-minute or per-hour limit are
// refused the way GitHub refuses them (403 or 429, Retry-After, the secondary-limit body), reads
// are not counted, each installation has its own budget, and waiting Retry-After is enough.
func TestContentLimit(t *testing.T) {
	tests := []struct {
		name     string
		limit    ContentLimit
		step     time.Duration // the clock moves this much after each accepted request
		accepted int           // requests admitted before the first refusal
		status   int
		maxWait  time.Duration // the Retry-After of the first refusal is at most this
	}{
		{"per minute", ContentLimit{PerMinute: 3}, time.Second, 3, 403, time.Minute},
		{"per hour", ContentLimit{PerMinute: 100, PerHour: 4}, 2 * time.Minute, 4, 403, time.Hour},
		{"429", ContentLimit{PerMinute: 2, Status: 429}, 0, 2, 429, time.Minute},
		{"x-ratelimit-reset", ContentLimit{PerMinute: 2, Answer: AnswerReset}, time.Second, 2, 403, time.Minute},
		{"no time named", ContentLimit{PerMinute: 2, Answer: AnswerSilent}, time.Second, 2, 403, time.Minute},
		{"documented default", ContentLimit{}, 0, DefaultContentPerMinute, 403, time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu    sync.Mutex
				clock = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
			)
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
			s, url := startWith(t, Options{Now: now, ContentLimit: tc.limit})
			s.AddRepo("acme/web", "main")
			s.AddRepo("zed/far", "main")
			n := s.AddIssue("acme/web", Issue{})
			nFar := s.AddIssue("zed/far", Issue{})
			s.AddToken("tok", "github-actions[bot]")
			post := func(repo string, number int) reply {
				return do(t, "POST", fmt.Sprintf("%s/repos/%s/issues/%d/comments", url, repo, number), "Bearer tok", map[string]string{"body": "x"})
			}
			for i := range tc.accepted {
				if r := post("acme/web", n); r.status != 201 {
					t.Fatalf("request %d: %d %s", i, r.status, r.raw)
				}
				if r := do(t, "GET", fmt.Sprintf("%s/repos/acme/web/issues/%d", url, n), "Bearer tok", nil); r.status != 200 {
					t.Fatalf("a read is never limited: %d", r.status)
				}
				advance(tc.step)
			}
			r := post("acme/web", n)
			if r.status != tc.status || r.body["documentation_url"] != secondaryLimitDocURL || r.body["message"] != secondaryLimitMessage {
				t.Fatalf("over the limit: %d %s", r.status, r.raw)
			}
			secs := retryIn(t, tc.limit.Answer, r, now())
			if secs < 1 || time.Duration(secs)*time.Second > tc.maxWait+time.Second {
				t.Fatalf("retry in %ds (headers %v), want 1s..%v", secs, r.header, tc.maxWait)
			}
			if s.ContentLimitRefusals() != 1 {
				t.Errorf("%d refusals counted, want 1", s.ContentLimitRefusals())
			}
			// The static token is one user: its budget covers every repository.
			if r := post("zed/far", nFar); r.status != tc.status {
				t.Errorf("the same caller on another repository: %d, want %d", r.status, tc.status)
			}
			advance(time.Duration(secs) * time.Second)
			if r := post("acme/web", n); r.status != 201 {
				t.Fatalf("after Retry-After: %d %s", r.status, r.raw)
			}
		})
	}
}

// retryIn reads when a refusal says to retry, in seconds, the way its answer plays it: Retry-After,
// x-ratelimit-reset with x-ratelimit-remaining 0, or nothing (GitHub's "at least one minute").
func retryIn(t *testing.T, a LimitAnswer, r reply, now time.Time) int {
	t.Helper()
	h := r.header
	switch a {
	case AnswerRetryAfter:
		secs, err := strconv.Atoi(h.Get("Retry-After"))
		if err != nil || h.Get("X-RateLimit-Reset") != "" {
			t.Fatalf("Retry-After %q, reset %q", h.Get("Retry-After"), h.Get("X-RateLimit-Reset"))
		}
		return secs
	case AnswerReset:
		reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil || h.Get("X-RateLimit-Remaining") != "0" || h.Get("Retry-After") != "" {
			t.Fatalf("reset %q remaining %q Retry-After %q", h.Get("X-RateLimit-Reset"), h.Get("X-RateLimit-Remaining"), h.Get("Retry-After"))
		}
		return int(time.Unix(reset, 0).Sub(now) / time.Second)
	}
	if h.Get("Retry-After") != "" || h.Get("X-RateLimit-Reset") != "" {
		t.Fatalf("a silent refusal named a time: %v", h)
	}
	return 60
}

// TestContentLimitCountsRealTime: the windows are real minutes and hours of the stand-in's
// clock. A world's time factor does not shrink them (it did: a "minute" was 1.2 s at 0.02, and
// no test could see the bot pass GitHub's limit); SpendContent brings an installation to the edge.
func TestContentLimitCountsRealTime(t *testing.T) {
	var (
		mu    sync.Mutex
		clock = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); clock = clock.Add(d) }
	s, url := startWith(t, Options{Now: now})
	s.AddRepo("acme/web", "main")
	n := s.AddIssue("acme/web", Issue{})
	tok := mintFor(t, s, url, "acme/web")
	post := func() reply {
		return do(t, "POST", fmt.Sprintf("%s/repos/acme/web/issues/%d/comments", url, n), tok, map[string]string{"body": "x"})
	}
	s.SpendContent("acme/web", now().Add(-2*time.Second), DefaultContentPerMinute-1)
	if r := post(); r.status != 201 {
		t.Fatalf("the 80th request of the minute: %d %s", r.status, r.raw)
	}
	r := post()
	if r.status != 403 || r.header.Get("Retry-After") != "58" {
		t.Fatalf("the 81st: %d, Retry-After %q; want 403 after 58 s (the minute of the oldest, 2 s ago)", r.status, r.header.Get("Retry-After"))
	}
	advance(1200 * time.Millisecond) // a scaled "minute" of old: still refused
	if r := post(); r.status != 403 {
		t.Fatalf("1.2 s later: %d, want still refused", r.status)
	}
	advance(58 * time.Second)
	if r := post(); r.status != 201 {
		t.Fatalf("a minute after the oldest: %d %s", r.status, r.raw)
	}
	// The hour: 500, however they spread over it.
	s.SpendContent("acme/web", now().Add(-59*time.Minute), DefaultContentPerHour-81)
	if r := post(); r.status != 403 || r.header.Get("Retry-After") != "60" {
		t.Fatalf("over the hour: %d, Retry-After %q; want 403 for 60 s", r.status, r.header.Get("Retry-After"))
	}
	if got := s.ContentWrites(); got != 2 {
		t.Errorf("%d writes counted as admitted, want 2 (seeded ones excluded)", got)
	}
}

// TestContentLimitPerInstallation: two installations have separate budgets.
func TestContentLimitPerInstallation(t *testing.T) {
	s, url := start(t)
	s.SetContentLimit(ContentLimit{PerMinute: 1})
	s.AddRepo("acme/web", "main")
	s.AddRepo("zed/far", "main")
	n, nFar := s.AddIssue("acme/web", Issue{}), s.AddIssue("zed/far", Issue{})
	acme, zed := mintFor(t, s, url, "acme/web"), mintFor(t, s, url, "zed/far")
	for _, c := range []struct {
		tok, path string
		status    int
	}{
		{acme, fmt.Sprintf("/repos/acme/web/issues/%d/comments", n), 201},
		{zed, fmt.Sprintf("/repos/zed/far/issues/%d/comments", nFar), 201},
		{acme, fmt.Sprintf("/repos/acme/web/issues/%d/comments", n), 403},
	} {
		if r := do(t, "POST", url+c.path, c.tok, map[string]string{"body": "x"}); r.status != c.status {
			t.Errorf("POST %s: %d, want %d", c.path, r.status, c.status)
		}
	}
}

// mintFor mints an installation token for the installation covering fullName; it returns the
// Authorization header's value.
func mintFor(t *testing.T, s *Server, url, fullName string) string {
	t.Helper()
	now := s.now()
	jwt := "Bearer " + signJWT(t, s.key, map[string]any{"iss": s.AppID(), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()})
	r := do(t, "POST", fmt.Sprintf("%s/app/installations/%d/access_tokens", url, s.InstallationID(fullName)), jwt, nil)
	if r.status != 201 {
		t.Fatalf("mint: %d %s", r.status, r.raw)
	}
	return "token " + r.body["token"].(string)
}
