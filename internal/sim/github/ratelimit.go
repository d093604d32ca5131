package github

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// The content-creation limits of GitHub's secondary rate limits ("Rate limits for the REST
// API", https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits;
// github/docs data/reusables/rest-api/secondary-rate-limit-rest-graphql.md): "no more than 80
// content-generating requests per minute and no more than 500 content-generating requests per
// hour".
const (
	DefaultContentPerMinute = 80
	DefaultContentPerHour   = 500
)

// secondaryLimitDocURL is the documentation_url of a secondary-limit refusal; go-github (v88,
// github.go CheckResponse) recognizes an AbuseRateLimitError by its "secondary-rate-limits" suffix.
const secondaryLimitDocURL = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"

// secondaryLimitMessage is the message GitHub sends with the refusal.
const secondaryLimitMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."

// ContentLimit is the secondary rate limit on content-generating requests (every POST, PATCH,
// PUT and DELETE made with an installation or user token), counted per installation (per user for
// a static token) over sliding windows. A refused request is answered with Status, a Retry-After
// header (seconds until the window lets one more through) and GitHub's secondary-limit body; it
// is not counted.
type ContentLimit struct {
	PerMinute int  // default DefaultContentPerMinute
	PerHour   int  // default DefaultContentPerHour
	Status    int  // 403 (default) or 429: the docs name both
	Disabled  bool // no limit
	// Scale shrinks the windows (a minute becomes Scale minutes), for emulated worlds whose
	// latencies are scaled the same way; 0 means 1.
	Scale float64
}

func (l ContentLimit) withDefaults() ContentLimit {
	if l.PerMinute <= 0 {
		l.PerMinute = DefaultContentPerMinute
	}
	if l.PerHour <= 0 {
		l.PerHour = DefaultContentPerHour
	}
	if l.Status == 0 {
		l.Status = http.StatusForbidden
	}
	if l.Scale <= 0 {
		l.Scale = 1
	}
	return l
}

// contentLimiter holds the accepted content-generating requests of each caller, oldest first.
type contentLimiter struct {
	cfg     ContentLimit
	seen    map[string][]time.Time
	refused int
}

// admit records a request at now, or refuses it and says how long until one would be admitted.
func (l *contentLimiter) admit(key string, now time.Time) (time.Duration, bool) {
	if l.cfg.Disabled {
		return 0, true
	}
	minute := time.Duration(float64(time.Minute) * l.cfg.Scale)
	hour := time.Duration(float64(time.Hour) * l.cfg.Scale)
	times := l.seen[key]
	for len(times) > 0 && !now.Before(times[0].Add(hour)) {
		times = times[1:]
	}
	var wait time.Duration
	if len(times) >= l.cfg.PerHour {
		wait = times[len(times)-l.cfg.PerHour].Add(hour).Sub(now)
	}
	inMinute := 0
	for i := len(times) - 1; i >= 0 && now.Before(times[i].Add(minute)); i-- {
		inMinute++
	}
	if inMinute >= l.cfg.PerMinute {
		wait = max(wait, times[len(times)-l.cfg.PerMinute].Add(minute).Sub(now))
	}
	if wait > 0 {
		l.seen[key] = times
		l.refused++
		return wait, false
	}
	l.seen[key] = append(times, now)
	return 0, true
}

// limitContent refuses a content-generating request over the limit; it reports whether it did.
func (s *Server) limitContent(c *call) bool {
	switch c.r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	if c.auth != "token" || c.tok == nil {
		return false // App JWT calls (token minting) and refused credentials create nothing
	}
	key := "user:" + lower(c.tok.login)
	if c.tok.installationID != 0 {
		key = "installation:" + strconv.FormatInt(c.tok.installationID, 10)
	}
	wait, ok := s.limiter.admit(key, s.now())
	if ok {
		return false
	}
	secondaryLimited(c, s.limiter.cfg.Status, wait)
	return true
}

// secondaryLimited answers the way GitHub refuses a request over a secondary limit, with a
// Retry-After header when retryAfter > 0 (GitHub may also send none: then clients wait at least a
// minute, says the same page).
func secondaryLimited(c *call, status int, retryAfter time.Duration) {
	if retryAfter > 0 {
		secs := int((retryAfter + time.Second - 1) / time.Second)
		c.w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	c.status = status
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(status)
	_ = json.NewEncoder(c.w).Encode(map[string]string{"message": secondaryLimitMessage, "documentation_url": secondaryLimitDocURL})
}

// SetContentLimit replaces the secondary limit on content-generating requests (and forgets the
// requests counted so far).
func (s *Server) SetContentLimit(l ContentLimit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limiter = &contentLimiter{cfg: l.withDefaults(), seen: map[string][]time.Time{}}
}

// ContentLimitRefusals counts the requests refused by the content limit.
func (s *Server) ContentLimitRefusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiter.refused
}
