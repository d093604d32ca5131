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
		{"scaled world", ContentLimit{PerMinute: 2, Scale: 0.01}, 0, 2, 403, time.Second},
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
			secs, err := strconv.Atoi(r.header.Get("Retry-After"))
			if err != nil || secs < 1 || time.Duration(secs)*time.Second > tc.maxWait+time.Second {
				t.Fatalf("Retry-After %q, want 1s..%v", r.header.Get("Retry-After"), tc.maxWait)
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

// TestContentLimitPerInstallation: two installations have separate budgets.
func TestContentLimitPerInstallation(t *testing.T) {
	s, url := start(t)
	s.SetContentLimit(ContentLimit{PerMinute: 1})
	s.AddRepo("acme/web", "main")
	s.AddRepo("zed/far", "main")
	n, nFar := s.AddIssue("acme/web", Issue{}), s.AddIssue("zed/far", Issue{})
	mint := func(owner string, repo string) string {
		now := time.Now()
		jwt := "Bearer " + signJWT(t, s.key, map[string]any{"iss": s.AppID(), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()})
		r := do(t, "POST", fmt.Sprintf("%s/app/installations/%d/access_tokens", url, s.InstallationID(owner+"/"+repo)), jwt, nil)
		if r.status != 201 {
			t.Fatalf("mint: %d %s", r.status, r.raw)
		}
		return "token " + r.body["token"].(string)
	}
	acme, zed := mint("acme", "web"), mint("zed", "far")
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
