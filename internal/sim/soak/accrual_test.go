package soak

import (
	"slices"
	"testing"
	"time"
)

// Every phrase the bot writes an accrued cost in is found, in both money forms, and no other
// amount (a daily price, a fee) is taken for one.
func TestAccruedFigures(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
	}{
		{"nothing of this cluster is left. Total cost over its life: 1.43 €.", []string{"1.43"}},
		{"to keep it. It has cost 1.20 € so far.", []string{"1.20"}},
		{"Accrued since creation (2026-10-17 09:00 UTC, 20m ago): **0.06 €**. Until", []string{"0.06"}},
		{"| Cost | 4.30 € per day · 0.18 € so far |", []string{"0.18"}},
		{"| Cost | € 4.30 per day · € 0.54 accrued |", []string{"0.54"}},
		{"| Cost | 4.30 € per day |\nOne-time fees: 12.00 €\n", nil},
		{"Accrued since creation (2026-10-17 09:00 UTC, 8h ago): **€ 1.43**. Until expiry (2026-10-17 17:00 UTC): **€ 0.54** more.", []string{"1.43"}},
	} {
		var got []string
		for _, f := range accruedFigures(tc.body) {
			got = append(got, f.amount)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("accruedFigures(%q) found %v, want %v", tc.body, got, tc.want)
		}
	}
}

// The per-hour rule: every started hour is billed.
func TestPerHour(t *testing.T) {
	const daily = 4_300_000_000 // 4.30 € a day: 0.179… € an hour
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{time.Minute, "0.18"}, {time.Hour, "0.18"}, {time.Hour + time.Second, "0.36"}, {90 * time.Minute, "0.36"}, {24 * time.Hour, "4.30"}} {
		if got := perHour(daily, tc.d); got != tc.want {
			t.Errorf("perHour(4.30 €/day, %s) = %s, want %s", tc.d, got, tc.want)
		}
	}
}
