package main

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/sim/world"
)

// TestUpDetectsARunnerOutsideTheAdminCIDR: POC_RUNNER_CIDR unset, as the shipped workflow leaves
// it, and admin_cidrs restricted to a range the runner is not in. The bot asks the world's echo
// endpoint (POC_RUNNER_ECHO_URL) for its address, admits it for the run, and the up succeeds;
// before detection this up retried for minutes and failed (issue 21). A status's checks admit it
// for their read. With no echo endpoint it says what to set.
func TestUpDetectsARunnerOutsideTheAdminCIDR(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the bot and runs a whole cluster: not in -short")
	}
	_, w := startWorld(t, procBound, world.Options{})
	b := newBotProc(t, w)
	delete(b.env, "POC_RUNNER_CIDR")

	up := b.mustRun(t, nil, "up", "--cluster", "r1", "--admin-cidr", "203.0.113.0/24")
	if !strings.Contains(up.stdout, "cluster r1 is ready") || !strings.Contains(up.stderr, "runner address detected") ||
		!strings.Contains(up.stderr, world.RunnerCIDR) {
		t.Errorf("up from an undeclared runner outside admin_cidrs:\nstdout:\n%s\nstderr:\n%s", up.stdout, up.stderr)
	}

	// The status from the same runner, its run over: its checks open the security group to the
	// runner for their read (issue 31; before, they failed at the group), and all pass.
	st := b.run(t, nil, "status", "--cluster", "r1")
	if st.code != 0 || strings.Contains(st.stdout, "✗") || strings.Contains(st.stdout, "outside the cluster's admin_cidrs") {
		t.Errorf("status from a runner outside admin_cidrs after the up (exit %d):\nstdout:\n%s\nstderr:\n%s", st.code, st.stdout, st.stderr)
	}
	// Told not to open the group for reads, it fails at once, and says why: the runner it
	// detected, the admin CIDRs, and the variable.
	st = b.run(t, map[string]string{"POC_READ_RUNNER_ACCESS": "false"}, "status", "--cluster", "r1")
	if st.code == 0 || !strings.Contains(st.stdout, "outside the cluster's admin_cidrs") || !strings.Contains(st.stdout, world.RunnerCIDR) ||
		!strings.Contains(st.stdout, "203.0.113.0/24") || !strings.Contains(st.stdout, "POC_READ_RUNNER_ACCESS") {
		t.Errorf("status with POC_READ_RUNNER_ACCESS=false from a runner outside admin_cidrs (exit %d):\nstdout:\n%s\nstderr:\n%s", st.code, st.stdout, st.stderr)
	}

	// A down needs no API of the cluster: a failed detection is a warning that says what to set.
	down := b.mustRun(t, map[string]string{"POC_RUNNER_ECHO_URL": "http://127.0.0.1:1/none"}, "down", "--cluster", "r1")
	if !strings.Contains(down.stderr, "set POC_RUNNER_CIDR") {
		t.Errorf("a failed detection does not say what to set:\n%s", down.stderr)
	}
}
