// Package storetest opens a state store for a test, with a Counter of what it reads and locks: the
// counting store that holds an operation to one read of its cluster's document and one cluster
// lock (statestore.WithRequestHook).
package storetest

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/pocbot/pocbot/internal/statestore"
)

// Counter counts, per cluster, the reads of its state document and the takings of its lock, and
// says which locks are held now, and by which goroutine (the one that took them: a store's
// request runs on its caller's goroutine).
type Counter struct {
	mu     sync.Mutex
	reads  map[string]int
	taken  map[statestore.LockKey]int
	holder map[statestore.LockKey]string // the id written last ("" after a release)
	on     map[statestore.LockKey]string // the goroutine that took it
}

// NewCounter returns an empty Counter; Hook is what statestore.WithRequestHook takes.
func NewCounter() *Counter {
	return &Counter{reads: map[string]int{}, taken: map[statestore.LockKey]int{}, holder: map[statestore.LockKey]string{},
		on: map[statestore.LockKey]string{}}
}

// Hook records one request.
func (c *Counter) Hook(r statestore.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cluster, ok := r.DocumentRead(); ok {
		c.reads[cluster]++
	}
	if key, li, ok := r.LockWritten(); ok {
		// A renewal writes the same holder again; a taking writes a new one.
		if li.ID != "" && li.ID != c.holder[key] {
			c.taken[key]++
			c.on[key] = Goroutine()
		}
		c.holder[key] = li.ID
		if li.ID == "" {
			delete(c.on, key)
		}
	}
}

// Reads is how many times cluster's state document was read whole.
func (c *Counter) Reads(cluster string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[cluster]
}

// Locks is how many times the lock key was taken.
func (c *Counter) Locks(key statestore.LockKey) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.taken[key]
}

// Held says whether the lock key is held now (taken and not released).
func (c *Counter) Held(key statestore.LockKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.holder[key] != ""
}

// AnyHeld names a lock held now, "" when none is.
func (c *Counter) AnyHeld() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, id := range c.holder {
		if id != "" {
			return k.String()
		}
	}
	return ""
}

// HeldHere lists the locks the calling goroutine took and holds now.
func (c *Counter) HeldHere() []string {
	g := Goroutine()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, on := range c.on {
		if on == g && c.holder[k] != "" {
			out = append(out, k.String())
		}
	}
	return out
}

// Goroutine is the calling goroutine's id, as its stack names it.
func Goroutine() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(b), "goroutine "), " ")
	return id
}

// Reset forgets what was counted (the locks held are still known).
func (c *Counter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads = map[string]int{}
	c.taken = map[statestore.LockKey]int{}
}

// Open opens a file:// store in a temporary directory of t, with a fresh key, counted by the
// Counter it returns; the store is closed when t ends.
func Open(t testing.TB, opts ...statestore.Option) (*statestore.Store, *Counter) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	c := NewCounter()
	s, err := statestore.Open(t.Context(), statestore.Config{StateURL: (&url.URL{Scheme: "file", Path: t.TempDir()}).String(),
		KeyURL: "base64key://" + base64.URLEncoding.EncodeToString(key)}, append(opts, statestore.WithRequestHook(c.Hook))...)
	if err != nil {
		t.Fatalf("open a counted state store: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, c
}
