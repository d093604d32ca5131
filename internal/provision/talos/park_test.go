package talos

import (
	"context"
	"crypto/tls"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"net"
	"strings"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc"

	simloop "github.com/pocbot/pocbot/internal/sim/loopback"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// applyFrom sends cfg without client authentication (what anyone can do to a node in
// maintenance mode) from the loopback address src.
func applyFrom(ctx context.Context, src, addr string, cfg []byte) error {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := client.New(ctx, client.WithEndpoints(addr), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}), //nolint:gosec
		client.WithGRPCDialOptions(grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a)
		})))
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck
	_, err = c.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: cfg})
	return err
}

// A worker only reset sits in maintenance mode and takes a config from anyone who reaches it;
// a parked worker (park configuration under the pool's CA) refuses the same insecure apply from
// anyone without the park CA's certificate (its firewall admits everyone), takes a Reset and an adoption only with the park CA's admin
// certificate, and after the reset is back in maintenance mode with nothing of its config.
func TestParkedWorkerRefusesInsecureApply(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ctx = WithRetryInterval(ctx, 20*time.Millisecond)
	ip := loopback()
	stranger := loopback() // holds no certificate of the park CA
	node := startNode(t, simtalos.NodeOptions{Addr: ip, Mode: "metal", Disks: []string{"/dev/sda"},
		Latency: simtalos.Latency{ApplyReboot: 50 * time.Millisecond, ResetWipe: 200 * time.Millisecond, ResetReboot: 100 * time.Millisecond}})
	addr := net.JoinHostPort(ip, "50000")

	// As the bot parks a worker: its Talos API open to everyone, mutual TLS under the park CA the
	// only gate (cluster's park; docs/architecture.md, "The runner").
	park, err := ParkConfig(ctx, ParkInput{IP: ip, Disk: "/dev/sda", SchematicID: testSchematic, AdminCIDRs: []string{"0.0.0.0/0"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := ParkConfig(ctx, ParkInput{IP: ip, Disk: "/dev/sda", SchematicID: testSchematic, AdminCIDRs: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}

	// Maintenance mode (what a bare reset leaves): the stranger's apply is taken. This is the
	// exposure parking closes.
	if err := applyFrom(ctx, stranger, addr, other.Config); err != nil {
		t.Fatalf("maintenance mode refused an insecure apply (the stand-in no longer plays maintenance): %v", err)
	}
	if err := WaitTrusted(ctx, addr, other.Talosconfig); err != nil {
		t.Fatal(err)
	}
	if err := Reset(ctx, addr, other.Talosconfig); err != nil {
		t.Fatal(err)
	}
	// Until its reset sequence reboots it, the node answers as configured: the park waits for
	// the maintenance mode the reboot brings.
	if _, err := ApplyInsecureAfterReset(ctx, addr, park.Config); err != nil {
		t.Fatalf("park after reset: %v", err)
	}
	if err := WaitTrusted(ctx, addr, park.Talosconfig); err != nil {
		t.Fatal(err)
	}

	// Parked: the same insecure apply from the stranger, whom the firewall lets through, is
	// refused at the TLS handshake, and the node keeps the park.
	err = applyFrom(ctx, stranger, addr, other.Config)
	if err == nil {
		t.Fatal("a parked worker took an unauthenticated config from a non-admin address")
	}
	// Whether the gRPC error reads as a reset or as a TLS alert depends on who writes first once
	// the server aborts the handshake; what tells the firewall apart is that it resets at accept,
	// before the client's side of a TLS 1.3 handshake can finish.
	if herr := simloop.Reach(stranger, addr); herr != nil {
		t.Fatalf("refused by the firewall, want the TLS handshake (the park firewall admits everyone): %v (apply: %v)", herr, err)
	}
	t.Logf("refused as expected: %v", err)
	if !strings.Contains(string(node.Config()), "pocbot-parked") {
		t.Fatal("the parked worker's config changed after a refused apply")
	}
	// Another CA's admin cannot reset it either.
	rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer rcancel()
	if err := Reset(rctx, addr, other.Talosconfig); err == nil {
		t.Fatal("a parked worker took a Reset from another CA's certificate")
	}

	// Adoption: an authenticated apply with the park CA; then the park CA is no longer trusted.
	if err := ApplyTrusted(ctx, addr, park.Talosconfig, other.Config); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if err := WaitTrusted(ctx, addr, other.Talosconfig); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer wcancel()
	if err := WaitTrusted(wctx, addr, park.Talosconfig); err == nil {
		t.Fatal("the adopted node still answers the park CA")
	}
}

// Reset as machined validates it: unknown partition labels and a maintenance-mode node refuse.
func TestResetRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ip := loopback()
	node := startNode(t, simtalos.NodeOptions{Addr: ip, Mode: "metal", Disks: []string{"/dev/sda"}})
	addr := net.JoinHostPort(ip, "50000")
	park, err := ParkConfig(ctx, ParkInput{IP: ip, Disk: "/dev/sda", SchematicID: testSchematic, AdminCIDRs: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyInsecure(ctx, addr, park.Config); err != nil {
		t.Fatal(err)
	}
	err = withTrusted(ctx, addr, park.Talosconfig, func(c *nodeAPI) error {
		return c.ResetGeneric(ctx, &machineapi.ResetRequest{Reboot: true,
			SystemPartitionsToWipe: []*machineapi.ResetPartitionSpec{{Label: "NOPE", Wipe: true}}})
	})
	if err == nil || !strings.Contains(err.Error(), `label "NOPE"`) {
		t.Fatalf("reset of an unknown label: %v", err)
	}
	node.FailReset(true)
	if err := Reset(ctx, addr, park.Talosconfig); err == nil {
		t.Fatal("an injected reset failure was not reported")
	}
	if !node.Configured() {
		t.Fatal("a failed reset wiped the node")
	}
}

// TestParkConfigNamesTheMetalInstaller: the parked worker is Elastic Metal; its configuration's
// installer is the metal one of its schematic (issue 21: it named the Scaleway installer).
func TestParkConfigNamesTheMetalInstaller(t *testing.T) {
	t.Parallel()
	park, err := ParkConfig(t.Context(), ParkInput{IP: "51.15.0.9", Disk: "/dev/sda", SchematicID: testSchematic, AdminCIDRs: []string{"203.0.113.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := configloader.NewFromBytes(park.Config)
	if err != nil {
		t.Fatal(err)
	}
	if img := cfg.Machine().Install().Image(); !strings.Contains(img, "/metal-installer/"+testSchematic+":") {
		t.Errorf("park install image = %q, want the metal installer of %s", img, testSchematic)
	}
}
