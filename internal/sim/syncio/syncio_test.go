package syncio

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var tee bytes.Buffer
	b := &Buffer{Tee: Writer(&tee)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("line\n"))
			}
		})
	}
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != 800 {
		t.Fatalf("buffer holds %d lines, want 800", n)
	}
	if tee.String() != b.String() {
		t.Fatal("the tee did not get what the buffer got")
	}
}
