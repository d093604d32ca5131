// Package clock is a clock a test moves by hand: the stand-ins take their time from a
// func() time.Time (Options.Clock, NodeOptions.now), and a test that steps through their
// latencies passes Manual.Now.
package clock

import (
	"sync"
	"time"
)

// Manual is a clock that moves only when told; safe for concurrent use.
type Manual struct {
	mu sync.Mutex
	t  time.Time
}

// NewManual is a Manual clock reading t.
func NewManual(t time.Time) *Manual { return &Manual{t: t} }

// Now is the clock's time.
func (c *Manual) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Manual) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set sets the clock to t (a replay starting at a recording's first Date).
func (c *Manual) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
