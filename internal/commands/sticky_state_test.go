package commands

import (
	"strings"
	"testing"
)

func TestStickyStateSerial(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want int64
		ok   bool
	}{
		{"rendered", RenderSticky(StickyView{Cluster: "c", Serial: 7, StateSerial: 46, Phase: "ready"}), 46, true},
		{"none recorded", RenderSticky(StickyView{Cluster: "c", Serial: 7, Phase: "destroyed"}), 0, false},
		{"zero is none", "<!-- pocbot:state-serial=0 -->", 0, false},
		{"negative is not a serial", "<!-- pocbot:state-serial=-5 -->", 0, false},
		{"too long", "<!-- pocbot:state-serial=" + strings.Repeat("9", 20) + " -->", 0, false},
		{"out of range", "<!-- pocbot:state-serial=9999999999999999999 -->", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := StickyStateSerial(tc.body)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("StickyStateSerial = %d, %v; want %d, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
