package cluster

import (
	"strings"
	"testing"
	"time"
)

// Register row em-stock: a scheduled pause keeps the worker parked while its offer is not
// available (low, empty, or a stock it cannot read), and gives it back once it is; park_for wins.
func TestParkPlan(t *testing.T) {
	const night = 14 * time.Hour
	for _, tc := range []struct {
		parkFor, scarce time.Duration
		stock           string
		want            time.Duration
		why             string
	}{
		{0, 0, "low", 0, ""},
		{2 * time.Hour, 0, "available", 2 * time.Hour, "park_for"},
		{2 * time.Hour, night, "low", 2 * time.Hour, "park_for"},
		{0, night, "available", 0, ""},
		{0, night, "low", night, "EM-A116X-SSD is low on stock"},
		{0, night, "empty", night, "EM-A116X-SSD is empty on stock"},
		{0, night, "", night, "could not be read"},
	} {
		d, why := parkPlan(tc.parkFor, tc.scarce, "EM-A116X-SSD", tc.stock)
		if d != tc.want || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("parkPlan(%v, %v, %q) = %v %q, want %v %q", tc.parkFor, tc.scarce, tc.stock, d, why, tc.want, tc.why)
		}
	}
}
