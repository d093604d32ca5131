package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CommentAPI is what the sticky editor needs; *Client implements it.
type CommentAPI interface {
	CreateComment(ctx context.Context, number int, body string) (Comment, error)
	EditComment(ctx context.Context, id int64, body string) (Comment, error)
	GetComment(ctx context.Context, id int64) (Comment, error)
	FindComment(ctx context.Context, number int, marker string) (Comment, bool, error)
}

// ErrSuperseded means a newer run owns the sticky comment: this run must stop editing it.
var ErrSuperseded = errors.New("github: the status comment was updated by a newer run")

// backgroundWriteTimeout bounds a deferred edit, which runs after the Update that asked for it
// has returned.
const backgroundWriteTimeout = 30 * time.Second

var generationRE = regexp.MustCompile(`<!-- pocbot-generation: (\d+) -->`)

// Sticky keeps one status comment per cluster up to date: found by a hidden marker (or an id
// kept in the state), edited in place, the last body winning. Progress callbacks call Update as
// often as they like; GitHub sees a bounded number of edits.
//
// The guarantee, which keeps the bot under GitHub's secondary limit on content creation (80
// content-generating requests a minute; how often to call Update is the caller's budget):
//   - pace: a write (create or edit) starts only once minInterval has passed since the previous
//     write ended, so GitHub applies at most one per minInterval; writes never overlap. This holds
//     for an Update that finds the interval over, for the deferred write, and for Flush (which
//     waits for its turn).
//   - last state: the latest body given is written — by the deferred write, or at the latest by
//     Flush. A body whose write failed stays pending unless a newer one replaced it, so a failed
//     edit is made good by the next write.
//   - rate limits: a write refused for one is not retried with its old body; the next write
//     waits as long as GitHub asked (limitedLocked), and Flush keeps trying the latest body
//     within its context, so the final status is not lost to a secondary limit.
type Sticky struct {
	api    CommentAPI
	number int
	marker string
	min    time.Duration
	gen    int64
	check  func(existing string) bool
	owner  func(Comment) bool
	log    *slog.Logger

	wmu sync.Mutex // serializes writes, so that bodies reach GitHub in order

	mu         sync.Mutex
	id         int64
	url        string
	written    string
	lastWrite  time.Time // when the last write ended
	writing    bool
	pending    string
	hasPending bool
	timer      *time.Timer
	bg         context.Context // the deferred write's context: the first Update's, without its cancel
	err        error
	superseded bool
	writes     int
	notBefore  time.Time // a rate limit's wait: no write before it
	limited    int       // consecutive rate-limit refusals

	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// flushMode says who asks for a write, which decides what happens before the interval is over.
type flushMode int

const (
	fromUpdate flushMode = iota // not due: leave it to the deferred write
	fromTimer                   // the deferred write: not due yet, re-arm
	fromFlush                   // the caller's last word: wait for the turn, then write
)

// NewSticky returns an editor for the comment on issue/PR number that carries marker (e.g.
// "<!-- pocbot:status:acme-web-42 -->"); marker is added to bodies that lack it.
func NewSticky(api CommentAPI, number int, marker string, minInterval time.Duration) *Sticky {
	return &Sticky{api: api, number: number, marker: marker, min: minInterval, log: slog.Default(),
		now: time.Now, sleep: RetryPolicy{}.withDefaults().Sleep}
}

// WithClock replaces the clock the editor paces and backs off by (tests: a minute-long wait of a
// rate limit taken in no time). The deferred write still runs on a real timer.
func (s *Sticky) WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) *Sticky {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now, s.sleep = now, sleep
	return s
}

// WithCommentID starts from a comment id remembered in the state (skips the search).
func (s *Sticky) WithCommentID(id int64) *Sticky {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id = id
	return s
}

// WithGeneration stamps every body with gen (e.g. the run's start time in ns) and refuses to
// overwrite a body stamped by a higher generation: an older run never overwrites a newer one.
func (s *Sticky) WithGeneration(gen int64) *Sticky {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen = gen
	s.check = func(existing string) bool {
		if m := generationRE.FindStringSubmatch(existing); m != nil {
			theirs, _ := strconv.ParseInt(m[1], 10, 64)
			return theirs <= gen
		}
		return true
	}
	return s
}

// WithOverwriteCheck installs the rule deciding whether the comment's current body may be
// replaced (e.g. commands.ShouldOverwrite with the run's serial). When it says no, the editor
// stops and returns ErrSuperseded. It costs one read before each edit.
func (s *Sticky) WithOverwriteCheck(ok func(existing string) bool) *Sticky {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.check = ok
	return s
}

// WithOwner installs the rule saying whether a comment is the bot's own: a comment reached by
// the remembered id that is not (an id pointing at someone else's comment) is neither read for
// its serial nor edited; a new status comment is started instead.
func (s *Sticky) WithOwner(own func(Comment) bool) *Sticky {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner = own
	return s
}

// WithLogger sets the logger for errors of deferred edits.
func (s *Sticky) WithLogger(l *slog.Logger) *Sticky {
	s.log = l
	return s
}

// ID is the comment's id (0 before the first write).
func (s *Sticky) ID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// URL is the comment's link ("" before the first write).
func (s *Sticky) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Writes counts the creates and edits sent to GitHub.
func (s *Sticky) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *Sticky) decorate(body string) string {
	if !strings.Contains(body, s.marker) {
		body = s.marker + "\n" + body
	}
	if s.gen != 0 {
		body = generationRE.ReplaceAllString(body, "")
		body = strings.TrimRight(body, "\n") + fmt.Sprintf("\n<!-- pocbot-generation: %d -->", s.gen)
	}
	return body
}

// Update sets the body. It is written at once when the interval since the last write is over,
// otherwise by the deferred write when it is (coalescing intermediate bodies). It returns the
// error of a previous deferred write, if any, and ErrSuperseded once a newer run owns the comment.
func (s *Sticky) Update(ctx context.Context, body string) error {
	s.mu.Lock()
	if s.superseded {
		s.mu.Unlock()
		return ErrSuperseded
	}
	s.pending, s.hasPending = s.decorate(body), true
	if s.bg == nil {
		s.bg = context.WithoutCancel(ctx)
	}
	err := s.err
	s.err = nil
	if s.untilDueLocked() > 0 {
		s.armLocked()
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	if werr := s.flush(ctx, fromUpdate); werr != nil {
		return werr
	}
	return err
}

// Flush writes the pending body, waiting (within ctx) for the interval and for any rate limit's
// wait to be over, and returns the write's error; a write refused by a rate limit is tried again
// as GitHub asks, up to maxLimitedTries times. Earlier deferred failures are not reported: their
// bodies were pending, and this write replaces them.
func (s *Sticky) Flush(ctx context.Context) error {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.err = nil
	superseded := s.superseded
	s.mu.Unlock()
	if superseded {
		return ErrSuperseded
	}
	return s.flush(ctx, fromFlush)
}

// untilDueLocked is how long until a write may start (0: now; a write in flight: the interval):
// the pace since the last write, and the wait a rate-limit refusal asked for.
func (s *Sticky) untilDueLocked() time.Duration {
	if s.writing {
		return max(s.min, s.notBefore.Sub(s.now()))
	}
	wait := s.notBefore.Sub(s.now())
	if !s.lastWrite.IsZero() {
		wait = max(wait, s.min-s.now().Sub(s.lastWrite))
	}
	return max(wait, 0)
}

// armLocked schedules the deferred write, once.
func (s *Sticky) armLocked() {
	if s.timer != nil {
		return
	}
	bg := s.bg
	s.timer = time.AfterFunc(max(s.untilDueLocked(), time.Millisecond), func() {
		bctx, cancel := context.WithTimeout(bg, backgroundWriteTimeout)
		defer cancel()
		if err := s.flush(bctx, fromTimer); err != nil {
			s.log.Warn("github: deferred edit of the status comment failed; its body stays pending", "issue", s.number, "err", err)
		}
	})
}

// Rate limits: a write refused for one is not sent again by the client (WithoutRateLimitWait);
// its body stays pending and the next write waits as GitHub's "Rate limits for the REST API"
// (Exceeding the rate limit) says: the retry-after it named, or until its x-ratelimit-reset;
// otherwise at least a minute, doubling while the refusals go on. Flush tries up to
// maxLimitedTries times, within its context, then reports the refusal.
const (
	maxLimitedTries = 8
	maxBackoff      = 16 * time.Minute
)

// limitedLocked records the outcome of a write for the rate-limit back-off; it reports whether
// err was a rate-limit refusal.
func (s *Sticky) limitedLocked(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) || !ae.RateLimited {
		if err == nil {
			s.limited = 0
		}
		return false
	}
	s.limited++
	switch {
	case ae.RetryAfter > 0:
		s.notBefore = s.now().Add(ae.RetryAfter)
	case !ae.ResetAt.IsZero():
		s.notBefore = ae.ResetAt.Add(time.Second) // x-ratelimit-reset is in whole seconds
	default:
		s.notBefore = s.now().Add(min(secondaryMinWait<<min(s.limited-1, 5), maxBackoff))
	}
	return true
}

func (s *Sticky) flush(ctx context.Context, mode flushMode) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if mode == fromTimer {
		s.timer = nil
	}
	for tries := 1; ; tries++ {
		if err := s.awaitTurnLocked(ctx, mode); err != nil || !s.hasPending || s.superseded || s.untilDueLocked() > 0 {
			s.mu.Unlock()
			return err // nothing to write, or not due (the deferred write is armed)
		}
		body := s.pending
		s.hasPending, s.writing = false, true
		s.mu.Unlock()

		err := s.write(ctx, body)
		s.mu.Lock()
		s.lastWrite, s.writing = s.now(), false
		limited := s.limitedLocked(err)
		switch {
		case errors.Is(err, ErrSuperseded):
			s.superseded = true
		case err != nil && !s.hasPending:
			s.pending, s.hasPending = body, true // the last state must still reach GitHub
		}
		switch {
		case limited && mode == fromFlush && tries < maxLimitedTries && ctx.Err() == nil:
			s.log.Info("github: a rate limit refused the status comment's final body; waiting as GitHub asks", "issue", s.number,
				"until", s.notBefore.UTC().Format(time.RFC3339), "try", tries)
			continue
		case limited && mode != fromFlush:
			// The latest body goes once the wait is over, whoever updates it meanwhile.
			s.log.Info("github: a rate limit refused a status comment edit; the latest body waits", "issue", s.number,
				"until", s.notBefore.UTC().Format(time.RFC3339))
			s.armLocked()
			s.mu.Unlock()
			return nil
		case err != nil && mode == fromTimer:
			s.err = err
		}
		s.mu.Unlock()
		return err
	}
}

// awaitTurnLocked waits, for Flush only, until a write may start (s.mu held, released while it
// waits); other modes leave an early write to the deferred one, armed here.
func (s *Sticky) awaitTurnLocked(ctx context.Context, mode flushMode) error {
	for s.hasPending && !s.superseded {
		wait := s.untilDueLocked()
		if wait <= 0 {
			return nil
		}
		if mode != fromFlush {
			s.armLocked()
			return nil
		}
		s.mu.Unlock()
		err := s.sleep(ctx, wait)
		s.mu.Lock()
		if err != nil {
			return fmt.Errorf("github: waiting for the status comment's turn on #%d: %w", s.number, err)
		}
	}
	return nil
}

// write runs under wmu.
func (s *Sticky) write(ctx context.Context, body string) error {
	s.mu.Lock()
	id, written, check, owner := s.id, s.written, s.check, s.owner
	s.mu.Unlock()
	var current *Comment
	if id == 0 {
		c, ok, err := s.api.FindComment(ctx, s.number, s.marker)
		if err != nil {
			return fmt.Errorf("github: find the status comment on #%d: %w", s.number, err)
		}
		if ok {
			id, current = c.ID, &c
		}
	}
	if id != 0 && (check != nil || owner != nil) {
		if current == nil {
			c, err := s.api.GetComment(ctx, id)
			if err != nil && !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("github: read the status comment %d: %w", id, err)
			}
			if err == nil {
				current = &c
			}
		}
		if current != nil && owner != nil && !owner(*current) {
			s.log.Warn("github: the remembered status comment is not the bot's own; starting a new one", "comment", id, "author", current.Author)
			id, current, written = 0, nil, ""
		}
		if current != nil && check != nil && !check(current.Body) {
			return ErrSuperseded
		}
	}
	if id != 0 && body == written {
		return nil
	}
	var (
		c   Comment
		err error
	)
	if id != 0 {
		c, err = s.api.EditComment(WithoutRateLimitWait(ctx), id, body)
		if errors.Is(err, ErrNotFound) {
			id = 0 // someone deleted it: start a new one
		} else if err != nil {
			return fmt.Errorf("github: edit the status comment %d on #%d: %w", id, s.number, err)
		}
	}
	if id == 0 {
		c, err = s.api.CreateComment(WithoutRateLimitWait(ctx), s.number, body)
		if err != nil {
			return fmt.Errorf("github: create the status comment on #%d: %w", s.number, err)
		}
	}
	s.mu.Lock()
	s.id, s.url, s.written = c.ID, c.URL, body
	s.writes++
	s.mu.Unlock()
	return nil
}
