package scaleway

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Hooks reach their consumers one at a time, in the order their transitions happened, whichever
// goroutine takes them. Hook A is collected first and its runner is held inside it; hook B is
// collected next and another goroutine comes to run hooks. B must wait for A. Before, each
// goroutine ran what it took at once: B ran while A was held, as a worker's rescue boot reached
// the world before the delivery that preceded it and the late delivery stopped the rescue system.
func TestHooksRunOneAtATimeInTheirOrder(t *testing.T) {
	e := New(Options{})
	var mu sync.Mutex
	var ran []string
	record := func(name string) {
		mu.Lock()
		ran = append(ran, name)
		mu.Unlock()
	}
	inA, releaseA := make(chan struct{}), make(chan struct{})
	e.mu.Lock()
	e.pending = append(e.pending, func() { close(inA); <-releaseA; record("A") })
	e.mu.Unlock()
	doneA := make(chan struct{})
	go func() { defer close(doneA); e.advanceAndRunHooks() }()
	select {
	case <-inA:
	case <-time.After(10 * time.Second):
		t.Fatal("hook A never ran")
	}

	e.mu.Lock()
	e.pending = append(e.pending, func() { record("B") })
	e.mu.Unlock()
	doneB := make(chan struct{})
	go func() { defer close(doneB); e.advanceAndRunHooks() }()

	// B must not run while A is held. Nothing can signal that it did not: give it time to run
	// (it did within microseconds on the old code), then let A finish.
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		mu.Lock()
		early := len(ran) > 0
		mu.Unlock()
		if early {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(releaseA)
	for _, done := range []chan struct{}{doneA, doneB} {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a hook runner never returned")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(ran, []string{"A", "B"}) {
		t.Fatalf("hooks ran in the order %v, want [A B]: B ran beside A, before it", ran)
	}
}
