package clock

import (
	"testing"
	"time"
)

func TestManualMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	c := NewManual(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	c.Advance(90 * time.Second)
	if got := c.Now(); !got.Equal(start.Add(90 * time.Second)) {
		t.Fatalf("after Advance(90s), Now = %v, want %v", got, start.Add(90*time.Second))
	}
	c.Set(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("after Set, Now = %v, want %v", got, start)
	}
}
