package talos

import (
	"context"
	"crypto/tls"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	simclock "github.com/pocbot/pocbot/internal/sim/clock"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func insecureClient(t *testing.T, ctx context.Context, a string) *client.Client {
	t.Helper()

	c, err := client.New(ctx, client.WithEndpoints(a), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close() })

	return c
}

// A node reads its user data once, when it has booted; until then its API does not answer, and
// user data that appears later is never read (the node sits in maintenance mode).
func TestUserDataIsReadOnceAtBoot(t *testing.T) {
	t.Parallel()

	cpAddr, cp, _, _ := clusterAt(t, forms[0], "/dev/sda")

	ctx := testCtx(t, 20*time.Second)

	var reads atomic.Int32

	var data atomic.Pointer[[]byte]

	// The source holds the boot until the test has seen the API silent: the node is booting for
	// as long as the test looks, however slow the machine.
	fetching, release := make(chan struct{}), make(chan struct{})

	n := start(t, NodeOptions{Addr: cpAddr, Mode: "cloud", Disks: []string{"/dev/sda"}, BootDelay: 10 * time.Millisecond,
		UserDataSource: func(ctx context.Context) ([]byte, error) {
			if reads.Add(1) == 1 {
				close(fetching)
			}

			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}

			if d := data.Load(); d != nil {
				return *d, nil
			}

			return nil, nil
		}})

	if _, err := insecureClient(t, ctx, n.APIAddr()).Version(ctx); err == nil {
		t.Error("the API answered while the node was booting (before its boot delay)")
	}

	select {
	case <-fetching:
	case <-ctx.Done():
		t.Fatalf("the node never fetched its user data: %v", ctx.Err())
	}

	if _, err := insecureClient(t, ctx, n.APIAddr()).Version(ctx); err == nil {
		t.Error("the API answered while the node was fetching its user data")
	}

	close(release)

	if err := n.WaitBooted(ctx); err != nil {
		t.Fatal(err)
	}

	data.Store(&cp) // too late: the node booted without it

	if _, err := insecureClient(t, ctx, n.APIAddr()).Version(ctx); err != nil {
		t.Errorf("maintenance-mode API after boot: %v", err)
	}

	if n.Configured() || reads.Load() != 1 {
		t.Errorf("configured=%v after %d user-data reads; want maintenance mode after exactly one read", n.Configured(), reads.Load())
	}

	// User data present at boot: the node comes up configured.
	m := start(t, NodeOptions{Addr: addr(), Mode: "cloud", BootDelay: 50 * time.Millisecond,
		UserDataSource: func(context.Context) ([]byte, error) { return cp, nil }})
	if err := m.WaitBooted(ctx); err != nil || !m.Configured() {
		t.Errorf("node with user data at boot: configured=%v, %v", m.Configured(), err)
	}
}

// Bootstrap is refused with the source's FailedPrecondition messages, in its order, until the
// node is ready; on a worker it is Unimplemented. The node's clock is stepped across the delays.
func TestBootstrapRefusedUntilReady(t *testing.T) {
	t.Parallel()

	cpAddr, cp, worker, tcfg := clusterAt(t, forms[1], "/dev/sda")

	ctx := testCtx(t, 20*time.Second)

	const cri, ntp = 90 * time.Second, 30 * time.Second

	clock := simclock.NewManual(time.Now())
	n := start(t, NodeOptions{Addr: cpAddr, Mode: "cloud", UserData: cp, CRIDelay: cri, TimeSyncDelay: ntp, now: clock.Now})

	tc := trustedTalos(t, ctx, tcfg, n)

	steps := []struct {
		after time.Duration // on the node's clock, since it was configured
		want  string        // the refusal, "" for success
	}{
		{0, "bootstrap is not available yet"},
		{cri - time.Second, "bootstrap is not available yet"},
		{cri, "time is not in sync yet"},
		{cri + ntp - time.Second, "time is not in sync yet"},
		{cri + ntp, ""},
	}

	var at time.Duration

	for _, s := range steps {
		clock.Advance(s.after - at)
		at = s.after

		err := tc.Bootstrap(ctx, &machineapi.BootstrapRequest{})

		switch {
		case s.want == "" && err != nil:
			t.Errorf("Bootstrap %s after the config: %v, want success", s.after, err)
		case s.want != "" && (client.StatusCode(err) != codes.FailedPrecondition || !strings.HasSuffix(err.Error(), "desc = "+s.want)):
			t.Errorf("Bootstrap %s after the config: %v, want FailedPrecondition %q", s.after, err, s.want)
		}
	}

	w := start(t, NodeOptions{Addr: addr(), Mode: "metal", Disks: []string{"/dev/sda"}})
	if _, err := insecureClient(t, ctx, w.APIAddr()).ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: worker}); err != nil {
		t.Fatal(err)
	}

	// The worker joins in the background (kubelet → 6443, trustd → 50001); until it is trusted
	// its handshakes fail.
	wc := joinedWorker(t, ctx, tcfg, w)

	if err := wc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); client.StatusCode(err) != codes.Unimplemented {
		t.Errorf("Bootstrap on a worker = %v, want Unimplemented", err)
	}
}

// In maintenance mode a client without certificate reads the block.Disk resources and the system
// disk; writes and types the node does not serve are refused, as by Talos's access policy.
func TestMaintenanceServesDiskResources(t *testing.T) {
	t.Parallel()

	ctx := testCtx(t, 20*time.Second)

	n := start(t, NodeOptions{Addr: addr(), Mode: "metal", Disks: []string{"/dev/sda", "/dev/nvme0n1"}, SystemDisk: "/dev/sda"})
	c := insecureClient(t, ctx, n.APIAddr())

	disks, err := safe.StateListAll[*block.Disk](ctx, c.COSI)
	if err != nil {
		t.Fatalf("list block.Disk: %v", err)
	}

	var paths []string
	for d := range disks.All() {
		paths = append(paths, d.TypedSpec().DevPath)
	}

	if strings.Join(paths, ",") != "/dev/nvme0n1,/dev/sda" {
		t.Errorf("block.Disk resources = %v", paths)
	}

	sd, err := safe.StateGetByID[*block.SystemDisk](ctx, c.COSI, block.SystemDiskID)
	if err != nil || sd.TypedSpec().DevPath != "/dev/sda" {
		t.Errorf("system disk = %v, %v", sd, err)
	}

	if err := c.COSI.Create(ctx, block.NewDisk(block.NamespaceName, "sdz")); err == nil || !strings.Contains(err.Error(), "code = PermissionDenied desc = write access is not allowed") {
		t.Errorf("create a disk resource = %v, want PermissionDenied", err)
	}

	if _, err := safe.StateListAll[*block.VolumeStatus](ctx, c.COSI); status.Code(err) != codes.PermissionDenied {
		t.Errorf("list a type the node does not serve = %v, want PermissionDenied", err)
	}

	if n.Calls("/cosi.resource.State/List") != 2 {
		t.Errorf("COSI List calls counted: %d, want 2", n.Calls("/cosi.resource.State/List"))
	}
}
