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
// kept in the state), edited in place at most once per minInterval, the last body winning.
// Progress callbacks call Update as often as they like; GitHub sees a bounded number of edits.
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
	lastWrite  time.Time
	pending    string
	hasPending bool
	timer      *time.Timer
	err        error
	superseded bool
	writes     int
}

// NewSticky returns an editor for the comment on issue/PR number that carries marker (e.g.
// "<!-- pocbot:status:acme-web-42 -->"); marker is added to bodies that lack it.
func NewSticky(api CommentAPI, number int, marker string, minInterval time.Duration) *Sticky {
	return &Sticky{api: api, number: number, marker: marker, min: minInterval, log: slog.Default()}
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

// Update sets the body. It is written at once if the last write is older than minInterval,
// otherwise when the interval has passed (coalescing intermediate bodies). It returns the error
// of a previous deferred write, if any, and ErrSuperseded once a newer run owns the comment.
func (s *Sticky) Update(ctx context.Context, body string) error {
	s.mu.Lock()
	if s.superseded {
		s.mu.Unlock()
		return ErrSuperseded
	}
	s.pending, s.hasPending = s.decorate(body), true
	err := s.err
	s.err = nil
	wait := s.min - time.Since(s.lastWrite)
	if !s.lastWrite.IsZero() && wait > 0 {
		if s.timer == nil {
			s.timer = time.AfterFunc(max(wait, 0), func() {
				bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backgroundWriteTimeout)
				defer cancel()
				if err := s.flush(bctx, true); err != nil {
					s.log.Warn("github: deferred edit of the status comment failed", "issue", s.number, "err", err)
				}
			})
		}
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	if werr := s.flush(ctx, false); werr != nil {
		return werr
	}
	return err
}

// Flush writes the pending body now, if any, and returns the last error.
func (s *Sticky) Flush(ctx context.Context) error {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	err := s.err
	s.err = nil
	s.mu.Unlock()
	if werr := s.flush(ctx, false); werr != nil {
		return werr
	}
	return err
}

func (s *Sticky) flush(ctx context.Context, fromTimer bool) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if fromTimer {
		s.timer = nil
	}
	if !s.hasPending || s.superseded {
		s.mu.Unlock()
		return nil
	}
	body := s.pending
	s.hasPending = false
	// Stamped before the I/O so that concurrent Updates during a slow write are throttled too.
	s.lastWrite = time.Now()
	s.mu.Unlock()

	err := s.write(ctx, body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastWrite = time.Now()
	if errors.Is(err, ErrSuperseded) {
		s.superseded = true
	}
	if err != nil && fromTimer {
		s.err = err
	}
	return err
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
		c, err = s.api.EditComment(ctx, id, body)
		if errors.Is(err, ErrNotFound) {
			id = 0 // someone deleted it: start a new one
		} else if err != nil {
			return fmt.Errorf("github: edit the status comment %d on #%d: %w", id, s.number, err)
		}
	}
	if id == 0 {
		c, err = s.api.CreateComment(ctx, s.number, body)
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
