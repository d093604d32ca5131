package clusterops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// A status of a cluster whose up stopped before its IPs says why in its one health entry (no
// error), and one of no cluster is an answer, not a failure: the counted store, no world.
func TestStatusBeforeTheIPs(t *testing.T) {
	f := newFake(t)
	in := intent(func(in *clusterops.Intent) { in.Health = true })
	out, err := f.ops.Run(t.Context(), clusterops.VerbStatus, in, nil)
	if err != nil || out.Exists || out.Status != nil {
		t.Fatalf("status of no cluster: %+v %v, want an answer without a cluster", out, err)
	}
	if _, err := f.ops.Status(t.Context(), in.Cluster, true); !errors.Is(err, clusterops.ErrNoCluster) {
		t.Errorf("an operator's status of no cluster: %v, want ErrNoCluster", err)
	}
	f.put(t, in, lifecycle.PhaseFailed)
	out, err = f.ops.Run(t.Context(), clusterops.VerbStatus, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := out.Status.Health; len(h) != 1 || h[0].OK || !strings.Contains(h[0].Detail, "run up") {
		t.Errorf("health = %+v, want one failed entry telling to run up", h)
	}
}

// TestOutsideAdminCIDRs: the hint a status gives when the runner is outside the admin CIDRs (and
// holds no temporary rule of its own).
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
			got := clusterops.OutsideAdminCIDRs(st, tc.runner)
			if (got != "") != tc.hint {
				t.Fatalf("hint = %q, want one: %v", got, tc.hint)
			}
			if tc.hint && (!strings.Contains(got, tc.runner) || !strings.Contains(got, strings.Join(tc.admin, ", "))) {
				t.Errorf("hint %q does not name the runner %s and the admin CIDRs %v", got, tc.runner, tc.admin)
			}
		})
	}
}
