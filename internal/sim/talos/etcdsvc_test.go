package talos

import (
	"bytes"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"

	simclock "github.com/pocbot/pocbot/internal/sim/clock"
)

// TestEtcdServiceStates steps a control plane's clock through the etcd service's life as Talos
// v1.13.9 runs it (etcdsvc.go): Waiting until its volumes are mounted (EtcdRecover refused with
// FailedPrecondition before /var/lib is), Preparing while it looks for a cluster to join, Failed
// with an empty data directory at the join timeout (Bootstrap still allowed), Waiting again after
// the boot timeout's reboot. A peer that is Preparing joins a running cluster; a Bootstrap on a
// node with no data while a peer runs etcd starts a second cluster.
func TestEtcdServiceStates(t *testing.T) {
	t.Parallel()

	a, cp, _, tcfg := clusterAt(t, forms[0], "/dev/sda")
	ctx := testCtx(t, 30*time.Second)

	const (
		cri, ntp, varLib = 20 * time.Second, 5 * time.Second, 10 * time.Second
		join, boot       = 30 * time.Minute, 70 * time.Minute
	)

	clock := simclock.NewManual(time.Now())
	opts := func(addr string) NodeOptions {
		return NodeOptions{Addr: addr, Mode: "cloud", UserData: cp, CRIDelay: cri, TimeSyncDelay: ntp, VarLibDelay: varLib,
			EtcdJoinTimeout: join, BootTimeout: boot, Latency: Latency{EtcdJoin: 10 * time.Second}, now: clock.Now}
	}
	n := start(t, opts(a))
	c := trustedTalos(t, ctx, tcfg, n)

	var at time.Duration

	step := func(to time.Duration) {
		clock.Advance(to - at)
		at = to
	}
	state := func(c *client.Client, want string) {
		t.Helper()

		if s := etcdService(t, ctx, c); s.GetState() != want {
			t.Fatalf("at %v: etcd is %s (%v), want %s", at, s.GetState(), s.GetHealth().GetLastMessage(), want)
		}
	}

	state(c, "Waiting")

	if _, err := c.EtcdRecover(ctx, bytes.NewReader([]byte("x"))); client.StatusCode(err) != codes.FailedPrecondition {
		t.Fatalf("EtcdRecover before /var/lib is mounted = %v, want FailedPrecondition", err)
	}

	step(varLib)

	if _, err := c.EtcdRecover(ctx, bytes.NewReader([]byte("x"))); err != nil {
		t.Fatalf("EtcdRecover once /var/lib is mounted: %v", err)
	}

	state(c, "Waiting") // the container runtime and the time sync still to come

	step(cri + ntp)
	state(c, "Preparing")

	step(cri + ntp + join - time.Second)
	state(c, "Preparing")

	step(cri + ntp + join)
	state(c, "Failed")

	step(boot)
	state(c, "Waiting") // the boot gave up: the node rebooted

	step(boot + cri + ntp + join)
	state(c, "Failed")

	// Failed with an empty data directory: Bootstrap stops the service and starts etcd anew.
	if err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatalf("Bootstrap on a node whose etcd failed to find a cluster: %v", err)
	}

	state(c, "Running")

	// A peer that boots now joins once it is Preparing, after the join's latency.
	p := start(t, opts(addr()))
	pc := trustedTalos(t, ctx, tcfg, p)
	start0 := at

	step(start0 + cri + ntp)
	state(pc, "Preparing")
	step(start0 + cri + ntp + 10*time.Second)
	state(pc, "Running")

	if got := n.EtcdClusters(); got != 1 {
		t.Fatalf("after the peer joined: %d etcd clusters, want 1", got)
	}

	if err := pc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); client.StatusCode(err) != codes.AlreadyExists {
		t.Fatalf("Bootstrap on a member = %v, want AlreadyExists", err)
	}

	// A node still looking for its cluster (its join not done yet) takes a Bootstrap: a second
	// etcd cluster beside the first.
	q := start(t, opts(addr()))
	qc := trustedTalos(t, ctx, tcfg, q)
	start1 := at

	step(start1 + cri + ntp)
	state(qc, "Preparing")

	if err := qc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	if got := n.EtcdClusters(); got != 2 {
		t.Fatalf("after a Bootstrap beside a running cluster: %d etcd clusters, want 2", got)
	}
}
