// Package schedule keeps the reaper's schedule honest: the workflow's cron is written from an
// interval (Cron), every scheduled run leaves a heartbeat (its time and its cron, from the event),
// and every other run tells from the heartbeat whether the schedule stopped — GitHub disables the
// scheduled workflows of a public repository after 60 days without activity (docs "Events that
// trigger workflows", schedule), which silently stops the reaper (Stale; commands.RenderScheduleStopped says so).
package schedule

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DocName is the shared state document that holds the heartbeat.
const DocName = "schedule-heartbeat"

// Slack is how late GitHub may start a scheduled run ("The schedule event can be delayed during
// periods of high loads"): a run counts as missing only after two intervals plus this.
const Slack = 30 * time.Minute

// Heartbeat is the last scheduled run.
type Heartbeat struct {
	At       time.Time `json:"at"`
	Cron     string    `json:"cron"`
	RunID    string    `json:"run_id,omitempty"`
	Interval string    `json:"interval,omitempty"`
}

// Encode and Decode the heartbeat document.
func (h Heartbeat) Encode() []byte { b, _ := json.Marshal(h); return b }

// Decode reads a heartbeat.
func Decode(b []byte) (Heartbeat, error) {
	var h Heartbeat
	if err := json.Unmarshal(b, &h); err != nil {
		return Heartbeat{}, fmt.Errorf("schedule heartbeat: %w", err)
	}
	return h, nil
}

// Cron is the cron expression that runs every d, at minute `minute` past (d: 5m to 24h, dividing
// an hour or a day evenly).
func Cron(d time.Duration, minute int) (string, error) {
	m := int(d / time.Minute)
	switch {
	case d%time.Minute != 0 || m < 5:
		return "", fmt.Errorf("schedule interval %s: use whole minutes, at least 5m (GitHub's shortest schedule)", d)
	case m < 60 && 60%m == 0:
		var mins []string
		for x := minute % m; x < 60; x += m {
			mins = append(mins, strconv.Itoa(x))
		}
		return strings.Join(mins, ",") + " * * * *", nil
	case m%60 == 0 && 24%(m/60) == 0:
		if m == 60 {
			return fmt.Sprintf("%d * * * *", minute%60), nil
		}
		return fmt.Sprintf("%d */%d * * *", minute%60, m/60), nil
	}
	return "", fmt.Errorf("schedule interval %s: use one that divides an hour or a day (15m, 30m, 1h, 2h, 6h …)", d)
}

// Interval is the interval of a cron expression Cron writes (and of the usual forms); ok false
// when it cannot tell.
func Interval(cron string) (time.Duration, bool) {
	f := strings.Fields(cron)
	if len(f) != 5 || f[2] != "*" || f[3] != "*" || f[4] != "*" {
		return 0, false
	}
	if f[1] == "*" {
		if strings.HasPrefix(f[0], "*/") {
			n, err := strconv.Atoi(f[0][2:])
			return time.Duration(n) * time.Minute, err == nil && n > 0
		}
		n := len(strings.Split(f[0], ","))
		return time.Hour / time.Duration(n), true
	}
	if h, ok := strings.CutPrefix(f[1], "*/"); ok {
		n, err := strconv.Atoi(h)
		return time.Duration(n) * time.Hour, err == nil && n > 0
	}
	if _, err := strconv.Atoi(f[1]); err == nil {
		return 24 * time.Hour, true
	}
	return 0, false
}

// Stale tells whether the schedule has missed its runs: the last heartbeat is older than two
// intervals plus Slack. A repository with no heartbeat yet is not stale (the first run comes).
func Stale(h Heartbeat, now time.Time) bool {
	if h.At.IsZero() {
		return false
	}
	d, ok := Interval(h.Cron)
	if !ok {
		d = time.Hour
	}
	return now.Sub(h.At) > 2*d+Slack
}
