package clusterops_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/spare"
)

// poolIdleFigures are #33's idle cost figures: what a pool of size 1 nobody claims from costs per
// day, all day and on weekday working hours, from its own plan played over a week (spare.Idle: a
// pass every hour, a 12-minute build, every started hour billed) and the seed cluster's hourly
// price from the dated price table.
func poolIdleFigures(t *testing.T) (hourly cost.Money, allDay, working cost.Money) {
	t.Helper()
	q, err := clusterops.Quote(t.Context(), cost.NewQuoter(cost.TableSource{}), seedSpec(), 24*time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	hours, err := settings.ParseHours("weekdays 08:00-19:00 Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	monday := time.Date(2026, 12, 7, 0, 7, 0, 0, hours.Loc)
	pins := spare.Pins{Talos: "v1.13.11", Kubernetes: "1.33.6"}
	perDay := func(p repoconfig.Pool) cost.Money {
		h := spare.IdleHours(spare.Idle(p, pins, 12*time.Minute, time.Hour, nil, monday, 7), spare.KeepSpares)
		return cost.Money{Currency: q.Hourly.Currency, Nanos: q.Hourly.Nanos * h / 7}
	}
	return q.Hourly, perDay(repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour}),
		perDay(repoconfig.Pool{Size: 1, MaxAge: 24 * time.Hour, Hours: hours})
}

// The figures docs/pool.md states are the ones the plan and the price table give.
func TestPoolIdleCostFiguresInTheDocs(t *testing.T) {
	hourly, allDay, working := poolIdleFigures(t)
	t.Logf("a spare: %s per hour; size 1 all day: %s per day; weekday working hours: %s per day", hourly.Format(3), allDay.Format(2), working.Format(2))
	doc, err := os.ReadFile("../../docs/pool.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{hourly.Format(3) + " per hour", allDay.Format(2) + " per day", working.Format(2) + " per day"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("docs/pool.md does not state %q", want)
		}
	}
}
