package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	// pause_schedule names an IANA zone; the bot must parse it on a runner or container without
	// a system tz database, so the database is linked in (about 450 KB).
	_ "time/tzdata"
)

// DefaultMaxPaused is how long a paused cluster is kept by default (max_paused).
const DefaultMaxPaused = 7 * 24 * time.Hour

// PauseSchedule is a repository's pause_schedule: windows that start at Start on each of Days
// (local time in Loc) and end at End — the next day when End is not after Start — plus, for
// `weekdays`, the whole weekend (Friday's window runs on to Monday's End).
type PauseSchedule struct {
	Days       [7]bool // indexed by time.Weekday
	Start, End int     // minutes after midnight
	Weekends   bool    // Saturday and Sunday paused all day (the `weekdays` form)
	Loc        *time.Location
	text       string
}

func (s *PauseSchedule) String() string { return s.text }

var dayNames = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
}

// maxScheduleLen bounds the text (a time zone name is at most a few dozen characters).
const maxScheduleLen = 200

// ParsePauseSchedule reads `DAYS HH:MM-HH:MM TIMEZONE`: DAYS is `weekdays` (Monday to Friday,
// and the weekends whole), `daily`, or a comma list of days and day ranges (`mon-thu,sat`);
// TIMEZONE an IANA name (`Europe/Paris`, `UTC`). Start and end must differ.
func ParsePauseSchedule(v string) (*PauseSchedule, error) {
	if len(v) > maxScheduleLen {
		return nil, fmt.Errorf("pause_schedule of %d characters, at most %d", len(v), maxScheduleLen)
	}
	f := strings.Fields(v)
	if len(f) != 3 {
		return nil, fmt.Errorf("pause_schedule %q: want three words, `DAYS HH:MM-HH:MM TIMEZONE`, e.g. `weekdays 19:00-08:00 Europe/Paris`", v)
	}
	s := &PauseSchedule{text: strings.Join(f, " ")}
	switch days := strings.ToLower(f[0]); days {
	case "weekdays":
		for d := time.Monday; d <= time.Friday; d++ {
			s.Days[d] = true
		}
		s.Weekends = true
	case "daily":
		for d := range s.Days {
			s.Days[d] = true
		}
	default:
		for _, part := range strings.Split(days, ",") {
			from, to, isRange := strings.Cut(part, "-")
			a, ok1 := dayNames[from]
			b, ok2 := dayNames[to]
			if !isRange {
				b, ok2 = a, ok1
			}
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("pause_schedule %q: %q is not weekdays, daily, or days like mon-fri,sun", v, part)
			}
			for d := a; ; d = (d + 1) % 7 {
				s.Days[d] = true
				if d == b {
					break
				}
			}
		}
	}
	start, end, ok := strings.Cut(f[1], "-")
	var err1, err2 error
	s.Start, err1 = clock(start)
	s.End, err2 = clock(end)
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("pause_schedule %q: %q is not HH:MM-HH:MM (%w)", v, f[1], errors.Join(err1, err2))
	}
	if s.Start == s.End {
		return nil, fmt.Errorf("pause_schedule %q: the window starts and ends at the same time", v)
	}
	if strings.EqualFold(f[2], "local") {
		return nil, fmt.Errorf("pause_schedule %q: name a time zone (e.g. Europe/Paris, UTC), not Local", v)
	}
	loc, err := time.LoadLocation(f[2])
	if err != nil {
		return nil, fmt.Errorf("pause_schedule %q: time zone %q: %w", v, f[2], err)
	}
	s.Loc = loc
	return s, nil
}

// ParseHours reads pool.hours: the windows in which the warm pool is kept full, in
// ParsePauseSchedule's grammar. One word reads differently: `weekdays` is Monday to Friday only
// (a pause schedule's `weekdays` also pauses the weekends whole; warm hours do not spread over
// them). Paused(t) then tells whether t is inside warm hours, NextPause the next window's start.
func ParseHours(v string) (*PauseSchedule, error) {
	s, err := ParsePauseSchedule(v)
	if err != nil {
		return nil, errors.New("pool.hours" + strings.TrimPrefix(err.Error(), "pause_schedule"))
	}
	s.Weekends = false
	return s, nil
}

// CheckHours accepts what ParseHours reads.
func CheckHours(v string) error {
	_, err := ParseHours(v)
	return err
}

func clock(s string) (int, error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || strings.ContainsAny(s, "+- ") {
		return 0, fmt.Errorf("%q is not a time of day from 00:00 to 23:59", s)
	}
	return hh*60 + mm, nil
}

// CheckPauseSchedule accepts what ParsePauseSchedule reads.
func CheckPauseSchedule(v string) error {
	_, err := ParsePauseSchedule(v)
	return err
}

// Paused tells whether t falls in a pause window.
func (s *PauseSchedule) Paused(t time.Time) bool {
	lt := t.In(s.Loc)
	day, min := lt.Weekday(), lt.Hour()*60+lt.Minute()
	yesterday := (day + 6) % 7
	overnight := s.End <= s.Start
	switch {
	case s.Weekends && (day == time.Saturday || day == time.Sunday):
		return true
	case s.Weekends && overnight && day == time.Monday && min < s.End:
		return true
	case s.Days[day] && min >= s.Start && (overnight || min < s.End):
		return true
	case overnight && s.Days[yesterday] && min < s.End:
		return true
	}
	return false
}

// NextPause is the first minute after t at which a window starts (t itself excluded); zero when
// none within eight days (cannot happen for a valid schedule).
func (s *PauseSchedule) NextPause(t time.Time) time.Time { return s.next(t, true) }

// NextResume is the first minute after t at which a window ends.
func (s *PauseSchedule) NextResume(t time.Time) time.Time { return s.next(t, false) }

func (s *PauseSchedule) next(t time.Time, paused bool) time.Time {
	m := t.Truncate(time.Minute)
	prev := s.Paused(m)
	for range 8 * 24 * 60 {
		m = m.Add(time.Minute)
		cur := s.Paused(m)
		if cur == paused && prev != paused {
			return m
		}
		prev = cur
	}
	return time.Time{}
}

// WeeklyPausedFraction is the share of a week in pause windows (measured minute by minute over
// the week from weekStart).
func (s *PauseSchedule) WeeklyPausedFraction(weekStart time.Time) float64 {
	paused := 0
	const week = 7 * 24 * 60
	m := weekStart.Truncate(time.Minute)
	for range week {
		if s.Paused(m) {
			paused++
		}
		m = m.Add(time.Minute)
	}
	return float64(paused) / week
}
