package spare

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/repoconfig"
)

// What a pool nobody claims from is billed over a week, from its own plan: size 1 all day, and
// size 1 on weekday working hours (a pass every hour at :07, a build of 12 min).
func TestIdle(t *testing.T) {
	pins := Pins{Talos: "v1.13.11", Kubernetes: "1.33.6"}
	paris := hours(t, "weekdays 08:00-19:00 Europe/Paris")
	monday := time.Date(2026, 12, 7, 0, 7, 0, 0, paris.Loc)
	options := Options(246*time.Second, 726*time.Second, 4_300_000_000, 2_900_000_000)
	for _, tc := range []struct {
		name         string
		pool         repoconfig.Pool
		spares, park int64 // billed hours in the week
		lives        int
	}{
		// A spare lives from its build until the pass after its replacement is ready: 26 billed
		// hours every 25 (the pass that finds it stale builds, the next destroys); the week's last
		// life is cut at its end (18 h).
		{"all day", repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour}, 6*26 + 18, 0, 7},
		// Built at 07:07 (08:00 is 53 min ahead ≤ 12 min + 1 h), destroyed at 19:07: 12 hours, five days.
		{"weekday working hours", repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour, Hours: paris}, 60, 0, 5},
		// Off hours within 5 min: the worker is parked from 19:07 until the next morning's build
		// adopts it at 07:07 (12 h, four nights) or the week ends (Friday 19:07 to Monday 00:07, 53 h).
		{"working hours, parked off hours", repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour, Hours: paris, OffHours: 5 * time.Minute}, 60, 4*12 + 53, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lives := Idle(tc.pool, pins, 12*time.Minute, time.Hour, options, monday, 7)
			if got := IdleHours(lives, KeepSpares); got != tc.spares {
				t.Errorf("spares billed %d h, want %d (%+v)", got, tc.spares, lives)
			}
			if got := IdleHours(lives, KeepParked); got != tc.park {
				t.Errorf("parked workers billed %d h, want %d", got, tc.park)
			}
			if len(lives) != tc.lives {
				t.Errorf("%d lives, want %d", len(lives), tc.lives)
			}
		})
	}
}
