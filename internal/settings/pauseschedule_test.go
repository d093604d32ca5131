package settings

import (
	"strings"
	"testing"
	"time"
)

func paris(t testing.TB) *time.Location {
	t.Helper()
	l, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatalf("time.LoadLocation(Europe/Paris): %v (time/tzdata is linked into the package: this cannot depend on the machine)", err)
	}
	return l
}

func TestParsePauseSchedule(t *testing.T) {
	loc := paris(t)
	at := func(day, hhmm string) time.Time {
		// 2026-11-30 is a Monday.
		d := map[string]int{"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}[day]
		tm, err := time.ParseInLocation("2006-01-02 15:04", "2026-11-30 "+hhmm, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm.AddDate(0, 0, d)
	}
	for _, tc := range []struct {
		sched string
		at    time.Time
		want  bool
	}{
		{"weekdays 19:00-08:00 Europe/Paris", at("mon", "18:59"), false},
		{"weekdays 19:00-08:00 Europe/Paris", at("mon", "19:00"), true},
		{"weekdays 19:00-08:00 Europe/Paris", at("tue", "07:59"), true},
		{"weekdays 19:00-08:00 Europe/Paris", at("tue", "08:00"), false},
		{"weekdays 19:00-08:00 Europe/Paris", at("sat", "12:00"), true},
		{"weekdays 19:00-08:00 Europe/Paris", at("sun", "23:59"), true},
		{"weekdays 19:00-08:00 Europe/Paris", at("mon", "07:00"), true},
		{"weekdays 19:00-08:00 Europe/Paris", at("mon", "09:00"), false},
		{"weekdays 19:00-08:00 Europe/Paris", at("fri", "21:00"), true},
		{"daily 12:00-13:00 UTC", at("sat", "13:30"), true}, // 12:30 UTC
		{"daily 12:00-13:00 UTC", at("sat", "14:30"), false},
		{"mon,wed-thu 22:00-06:00 Europe/Paris", at("tue", "05:00"), true},
		{"mon,wed-thu 22:00-06:00 Europe/Paris", at("tue", "23:00"), false},
		{"mon,wed-thu 22:00-06:00 Europe/Paris", at("fri", "05:59"), true},
		{"fri-mon 22:00-06:00 UTC", at("sun", "23:30"), true}, // 22:30 UTC, wrapping range
	} {
		s, err := ParsePauseSchedule(tc.sched)
		if err != nil {
			t.Fatalf("%s: %v", tc.sched, err)
		}
		if got := s.Paused(tc.at); got != tc.want {
			t.Errorf("%s at %s: paused %v, want %v", tc.sched, tc.at.Format("Mon 15:04 MST"), got, tc.want)
		}
	}
	for _, bad := range []string{"", "weekdays", "weekdays 19:00 Europe/Paris", "weekdays 19:00-19:00 UTC", "weekdays 25:00-08:00 UTC",
		"weekdays 19:00-08:00 Mars/Olympus", "someday 19:00-08:00 UTC", "mon-funday 19:00-08:00 UTC", "weekdays 19:00-8:0 UTC",
		"weekdays 19:00-08:00 Local", "weekdays +9:00-08:00 UTC", strings.Repeat("x", 300)} {
		if _, err := ParsePauseSchedule(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestWeekdayScheduleSaving: weekday nights 19:00–08:00 and the weekends are 113 of a week's 168
// hours (67 %), and the next pause and resume are where they should be.
func TestWeekdayScheduleSaving(t *testing.T) {
	loc := paris(t)
	s, err := ParsePauseSchedule("weekdays 19:00-08:00 Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	monday := time.Date(2026, 11, 30, 0, 0, 0, 0, loc)
	if f := s.WeeklyPausedFraction(monday); f < 113.0/168-1e-9 || f > 113.0/168+1e-9 {
		t.Errorf("paused fraction %.4f, want 113/168", f)
	}
	wed := monday.AddDate(0, 0, 2).Add(10 * time.Hour)
	if got, want := s.NextPause(wed), monday.AddDate(0, 0, 2).Add(19*time.Hour); !got.Equal(want) {
		t.Errorf("next pause after Wed 10:00 = %s, want %s", got, want)
	}
	fri := monday.AddDate(0, 0, 4).Add(20 * time.Hour)
	if got, want := s.NextResume(fri), monday.AddDate(0, 0, 7).Add(8*time.Hour); !got.Equal(want) {
		t.Errorf("next resume after Fri 20:00 = %s, want %s", got, want)
	}
}

func FuzzParsePauseSchedule(f *testing.F) {
	for _, s := range []string{"weekdays 19:00-08:00 Europe/Paris", "daily 00:00-23:59 UTC", "mon,wed-fri 1:30-02:00 UTC", "sat-mon 22:00-06:00 Asia/Tokyo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParsePauseSchedule(v)
		if err != nil {
			return
		}
		if s.Loc == nil || s.Start == s.End || s.Start < 0 || s.Start >= 24*60 || s.End < 0 || s.End >= 24*60 {
			t.Fatalf("%q parsed into %+v", v, s)
		}
		any := false
		for _, d := range s.Days {
			any = any || d
		}
		if !any {
			t.Fatalf("%q: no day", v)
		}
		// What it prints parses into the same schedule.
		again, err := ParsePauseSchedule(s.String())
		if err != nil || again.Days != s.Days || again.Start != s.Start || again.End != s.End || again.Weekends != s.Weekends {
			t.Fatalf("%q → %q → %+v, %v", v, s.String(), again, err)
		}
	})
}

// pool.hours reads pause_schedule's grammar, but its `weekdays` is Monday to Friday only: warm
// hours spread over no weekend (a pause schedule's weekdays pauses the weekends whole).
func TestParseHours(t *testing.T) {
	h, err := ParseHours("weekdays 08:00-19:00 Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	paris := paris(t)
	for _, tc := range []struct {
		at   time.Time
		warm bool
	}{
		{time.Date(2026, 12, 7, 9, 0, 0, 0, paris), true},    // Monday morning
		{time.Date(2026, 12, 7, 19, 0, 0, 0, paris), false},  // Monday, the window's end
		{time.Date(2026, 12, 7, 7, 59, 0, 0, paris), false},  // before it
		{time.Date(2026, 12, 12, 10, 0, 0, 0, paris), false}, // Saturday
		{time.Date(2026, 12, 13, 10, 0, 0, 0, paris), false}, // Sunday
	} {
		if got := h.Paused(tc.at); got != tc.warm {
			t.Errorf("%s: warm %v, want %v", tc.at.Format(time.RFC1123), got, tc.warm)
		}
	}
	if next := h.NextPause(time.Date(2026, 12, 11, 20, 0, 0, 0, paris)); !next.Equal(time.Date(2026, 12, 14, 8, 0, 0, 0, paris)) {
		t.Errorf("the next warm window after Friday evening starts %s, want Monday 08:00", next)
	}
	if _, err := ParseHours("weekdays 8-19 Europe/Paris"); err == nil || !strings.HasPrefix(err.Error(), "pool.hours") {
		t.Errorf("a bad pool.hours is refused naming pool.hours, got %v", err)
	}
}
