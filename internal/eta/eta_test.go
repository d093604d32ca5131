package eta

import (
	"testing"
	"time"
)

func TestHistory(t *testing.T) {
	cold, parked := Path{}, Path{Parked: true, SharedImage: true}
	h := History{}
	if e := h.Of(cold, 11*time.Minute); e.D != 11*time.Minute || e.From != "the latency profile" {
		t.Fatalf("no history: %+v", e)
	}
	for _, m := range []int{9, 14, 10} {
		h.Add(cold, time.Duration(m)*time.Minute)
	}
	if e := h.Of(cold, 11*time.Minute); e.D != 10*time.Minute || e.From != "this project's last 3 ups of this path" {
		t.Errorf("three cold ups: %+v, want their median 10 min", e)
	}
	if e := h.Of(parked, 3*time.Minute); e.D != 3*time.Minute {
		t.Errorf("another path reads the profile: %+v", e)
	}
	for i := range 2 * Keep {
		h.Add(cold, time.Duration(i)*time.Second)
	}
	if n := len(h[cold.String()]); n != Keep {
		t.Errorf("kept %d durations, want %d", n, Keep)
	}
}
