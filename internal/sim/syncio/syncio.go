// Package syncio owns the writers that several goroutines share in the emulated world: the
// demo's, the soak's and the tests' log sinks, which the handler, the engine and parallel
// histories write at once.
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Buffer is a bytes.Buffer that many goroutines may write while another reads it. Every write
// also goes to Tee when it is set (a test's verbose output).
type Buffer struct {
	Tee io.Writer

	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Tee != nil {
		_, _ = b.Tee.Write(p) // a mirror only: what was written is in the buffer either way
	}
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Writer serializes the writes to w.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
