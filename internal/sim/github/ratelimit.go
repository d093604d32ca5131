package github

import (
	"encoding/json"
	"net/http"
	"slices"
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

// LimitAnswer is how a secondary-limit refusal says when to try again. GitHub's page names three
// cases ("Exceeding the rate limit": a retry-after header; else x-ratelimit-remaining 0 and
// x-ratelimit-reset; "Otherwise, wait for at least one minute"), and is silent on which one a
// content-creation refusal carries: the stand-in plays each.
type LimitAnswer int

const (
	AnswerRetryAfter LimitAnswer = iota // Retry-After: seconds until the window admits one more
	AnswerReset                         // x-ratelimit-remaining: 0 and x-ratelimit-reset: that moment (epoch seconds)
	AnswerSilent                        // neither: the client must wait at least a minute
)

// ContentLimit is the secondary rate limit on content-generating requests (every POST, PATCH,
// PUT and DELETE made with an installation or user token), counted per installation (per user for
// a static token) over sliding windows of the stand-in's clock: real minutes and hours, whatever
// the time factor of an emulated world (a scaled window would let a test pass that GitHub would
// refuse). A refused request is answered with Status, the when-to-retry headers of Answer and
// GitHub's secondary-limit body; it is not counted.
type ContentLimit struct {
	PerMinute int         // default DefaultContentPerMinute
	PerHour   int         // default DefaultContentPerHour
	Status    int         // 403 (default) or 429: the docs name both
	Answer    LimitAnswer // default AnswerRetryAfter
	Disabled  bool        // no limit
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
	return l
}

// contentLimiter holds the accepted content-generating requests of each caller, oldest first.
type contentLimiter struct {
	cfg      ContentLimit
	seen     map[string][]time.Time
	refused  int
	accepted int
}

// admit records a request at now, or refuses it and says how long until one would be admitted.
func (l *contentLimiter) admit(key string, now time.Time) (time.Duration, bool) {
	if l.cfg.Disabled {
		return 0, true
	}
	times := l.seen[key]
	for len(times) > 0 && !now.Before(times[0].Add(time.Hour)) {
		times = times[1:]
	}
	var wait time.Duration
	if len(times) >= l.cfg.PerHour {
		wait = times[len(times)-l.cfg.PerHour].Add(time.Hour).Sub(now)
	}
	inMinute := 0
	for i := len(times) - 1; i >= 0 && now.Before(times[i].Add(time.Minute)); i-- {
		inMinute++
	}
	if inMinute >= l.cfg.PerMinute {
		wait = max(wait, times[len(times)-l.cfg.PerMinute].Add(time.Minute).Sub(now))
	}
	if wait > 0 {
		l.seen[key] = times
		l.refused++
		return wait, false
	}
	l.seen[key] = append(times, now)
	l.accepted++
	return 0, true
}

// isContentWrite says whether a request generates content: every write, the stricter reading
// (GitHub does not list them).
func isContentWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// limitKey is the budget a token's writes count against.
func limitKey(t *token) string {
	if t.installationID != 0 {
		return "installation:" + strconv.FormatInt(t.installationID, 10)
	}
	return "user:" + lower(t.login)
}

// limitContent refuses a content-generating request over the limit; it reports whether it did.
func (s *Server) limitContent(c *call) bool {
	if !isContentWrite(c.r.Method) {
		return false
	}
	if c.auth != "token" || c.tok == nil {
		return false // App JWT calls (token minting) and refused credentials create nothing
	}
	now := s.now()
	wait, ok := s.limiter.admit(limitKey(c.tok), now)
	if ok {
		return false
	}
	secondaryLimited(c, s.limiter.cfg.Status, s.limiter.cfg.Answer, now, wait)
	return true
}

// secondaryLimited answers the way GitHub refuses a request over a secondary limit, saying when
// to retry the way answer plays (retryAfter > 0 is the wait).
func secondaryLimited(c *call, status int, answer LimitAnswer, now time.Time, retryAfter time.Duration) {
	secs := max(int((retryAfter+time.Second-1)/time.Second), 1)
	switch {
	case retryAfter <= 0:
	case answer == AnswerRetryAfter:
		c.w.Header().Set("Retry-After", strconv.Itoa(secs))
	case answer == AnswerReset:
		c.w.Header().Set("X-RateLimit-Remaining", "0")
		c.w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(now.Add(time.Duration(secs)*time.Second).Unix(), 10))
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

// SpendContent counts n content-generating requests at at against the budget of the
// installation covering fullName, as if other runs had made them (a test device, not GitHub
// behaviour): a test brings the installation near its limit without making the requests.
func (s *Server) SpendContent(fullName string, at time.Time, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := "installation:" + strconv.FormatInt(s.installedOn(s.mustRepo(fullName)), 10)
	times := s.limiter.seen[key]
	for range n {
		times = append(times, at)
	}
	// The window is oldest first: the seeded times may be older than what was counted already.
	slices.SortStableFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	s.limiter.seen[key] = times
}

// ContentLimitRefusals counts the requests refused by the content limit.
func (s *Server) ContentLimitRefusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiter.refused
}

// ContentWrites counts the content-generating requests the limit admitted (those SpendContent
// seeded excluded).
func (s *Server) ContentWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limiter.accepted
}
