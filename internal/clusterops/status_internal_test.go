package clusterops

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

func TestOutsideAdminCIDRs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		admin     []string
		temporary string
		runner    string
		hint      bool
	}{
		{"runner unknown", []string{"198.51.100.0/24"}, "", "", false},
		{"everyone admitted", []string{"0.0.0.0/0"}, "", "203.0.113.7/32", false},
		{"runner inside", []string{"198.51.100.0/24", "203.0.113.0/24"}, "", "203.0.113.7/32", false},
		{"runner as a bare address inside", []string{"203.0.113.0/24"}, "", "203.0.113.7", false},
		{"runner outside", []string{"198.51.100.0/24"}, "", "203.0.113.7/32", true},
		{"runner wider than the admin CIDR", []string{"203.0.113.0/28"}, "", "203.0.113.0/24", true},
		{"a run holds the runner's temporary rule", []string{"198.51.100.0/24"}, "203.0.113.7/32", "203.0.113.7/32", false},
		{"a temporary rule that covers the runner", []string{"198.51.100.0/24"}, "203.0.113.0/24", "203.0.113.7/32", false},
		{"another runner's temporary rule", []string{"198.51.100.0/24"}, "192.0.2.1/32", "203.0.113.7/32", true},
		{"runner that does not parse", []string{"198.51.100.0/24"}, "", "not-a-cidr", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &provision.State{Spec: provision.Spec{AdminCIDRs: tc.admin}, Outputs: map[string]string{}}
			if tc.temporary != "" {
				st.Outputs[scaleway.OutAdminTemporary] = tc.temporary
			}
			got := outsideAdminCIDRs(st, tc.runner)
			if (got != "") != tc.hint {
				t.Fatalf("hint = %q, want one: %v", got, tc.hint)
			}
			if tc.hint && (!strings.Contains(got, tc.runner) || !strings.Contains(got, strings.Join(tc.admin, ", "))) {
				t.Errorf("hint %q does not name the runner %s and the admin CIDRs %v", got, tc.runner, tc.admin)
			}
		})
	}
}
