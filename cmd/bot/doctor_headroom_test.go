package main

import (
	"strings"
	"testing"
	"time"

	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// doctor's quota item fails, naming the quota, where one default cluster would be refused; it
// passes with Scaleway's documented quotas.
func TestDoctorHeadroom(t *testing.T) {
	for _, tc := range []struct {
		name string
		ips  int
		fail bool
		want string
	}{
		{"documented quotas", 20, false, "✓ quota, stock headroom    one default cluster fits"},
		{"no flexible IP left", 0, true, "✗ quota, stock headroom    one default cluster would be refused: Scaleway quota " + scwsim.QuotaIPs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := scwsim.DocumentedQuotas()
			q[scwsim.QuotaIPs] = tc.ips
			ctx, w := startWorld(t, 2*time.Minute, world.Options{OrgQuotas: q})
			out, err := doctorRun(ctx, envMap(w))
			if (err != nil) != tc.fail || !strings.Contains(out, tc.want) {
				t.Fatalf("doctor: %v, want failure %v and %q:\n%s", err, tc.fail, tc.want, out)
			}
		})
	}
}
