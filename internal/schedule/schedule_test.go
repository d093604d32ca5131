package schedule

import (
	"testing"
	"time"
)

func TestCronAndInterval(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Minute, "7,37 * * * *"}, {15 * time.Minute, "7,22,37,52 * * * *"}, {time.Hour, "7 * * * *"},
		{2 * time.Hour, "7 */2 * * *"}, {6 * time.Hour, "7 */6 * * *"},
	} {
		got, err := Cron(tc.d, 7)
		if err != nil || got != tc.want {
			t.Errorf("Cron(%s) = %q, %v; want %q", tc.d, got, err, tc.want)
		}
		if back, ok := Interval(got); !ok || back != tc.d {
			t.Errorf("Interval(%q) = %s, %v; want %s", got, back, ok, tc.d)
		}
	}
	for _, bad := range []time.Duration{time.Minute, 7 * time.Minute, 90 * time.Second, 5 * time.Hour} {
		if _, err := Cron(bad, 7); err == nil {
			t.Errorf("Cron(%s) accepted", bad)
		}
	}
	if _, ok := Interval("0 0 1 * *"); ok {
		t.Error("a monthly cron read as an interval")
	}
}

func TestStale(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h := Heartbeat{At: now.Add(-2 * time.Hour), Cron: "7 * * * *"}
	if Stale(h, now) {
		t.Error("two hours on an hourly schedule is within the slack")
	}
	h.At = now.Add(-3 * time.Hour)
	if !Stale(h, now) {
		t.Error("three hours on an hourly schedule is not stale")
	}
	if Stale(Heartbeat{}, now) {
		t.Error("no heartbeat yet counts as stale")
	}
	b := h.Encode()
	back, err := Decode(b)
	if err != nil || !back.At.Equal(h.At) || back.Cron != h.Cron {
		t.Errorf("round trip: %+v, %v", back, err)
	}
}
