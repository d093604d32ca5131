package talos

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"google.golang.org/grpc/codes"

	"github.com/pocbot/pocbot/internal/sim/loopback"
)

// addr returns a fresh address in this test binary's loopback block: no other test binary or
// world listens there (a node on an address taken elsewhere fails to start or talks to a stranger).
func addr() string {
	b, err := loopback.Shared()
	if err != nil {
		panic(err)
	}

	return b.Next()
}

func start(t *testing.T, o NodeOptions) *Node {
	t.Helper()

	o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	n, err := StartNode(t.Context(), o)
	if err != nil {
		t.Fatalf("StartNode: %v", err)
	}

	t.Cleanup(func() { _ = n.Close() })

	return n
}

// testCtx is the test's context, ending after d at the latest.
func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)

	return ctx
}

// clusterAt picks a control plane address and generates the configs (form f, install disk) of a
// cluster whose Kubernetes endpoint is on it.
func clusterAt(t *testing.T, f form, disk string) (a string, cp, worker, talosconfig []byte) {
	t.Helper()

	a = addr()
	cp, worker, talosconfig = configs(t, f, "https://"+net.JoinHostPort(a, fmt.Sprint(DefaultKubePort)), disk)

	return a, cp, worker, talosconfig
}

// configs generates plain machinery configs (no pocbot patches): the stand-in must hold up
// whatever produced the config. The service-account key is ECDSA: the stand-in never signs a
// token with it, and the contract's RSA-4096 key took 0.3 to 3 s to generate under -race (more
// under load), a random cost that ate the deadline of the tests generating inside it.
func configs(t *testing.T, f form, endpoint, disk string) (cp, worker, talosconfig []byte) {
	t.Helper()

	bundle, err := secrets.NewBundle(secrets.NewClock(), f.contract, secrets.WithECDSAServiceAccountKey())
	if err != nil {
		t.Fatal(err)
	}

	in, err := generate.NewInput("sim", endpoint, f.kubernetes, generate.WithVersionContract(f.contract), generate.WithInstallDisk(disk),
		generate.WithSecretsBundle(bundle))
	if err != nil {
		t.Fatal(err)
	}

	enc := func(tp machine.Type) []byte {
		c, err := in.Config(tp)
		if err != nil {
			t.Fatal(err)
		}

		b, err := c.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
		if err != nil {
			t.Fatal(err)
		}

		return b
	}

	tc, err := in.Talosconfig()
	if err != nil {
		t.Fatal(err)
	}

	tcb, err := tc.Bytes()
	if err != nil {
		t.Fatal(err)
	}

	return enc(machine.TypeControlPlane), enc(machine.TypeWorker), tcb
}

// form is a Talos config form the stand-in must accept: the 1.13 contract (v1alpha1 cluster
// section, .machine.install) and the 1.14 multi-document one (Kube* documents,
// UnattendedInstallConfig), each with a Kubernetes version its Talos runs.
type form struct {
	name       string
	contract   *config.VersionContract
	kubernetes string
}

var forms = []form{
	{"1.13", config.TalosVersion1_13, "1.36.3"},
	{"1.14", config.TalosVersion1_14, "1.37.0"},
}

func TestNodeLifecycle(t *testing.T) {
	t.Parallel()

	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			testNodeLifecycle(t, f)
		})
	}
}

func testNodeLifecycle(t *testing.T, f form) {
	// The configs are made before the deadline starts: it bounds what the nodes do.
	cpAddr, wAddr := addr(), addr()
	cp, worker, tcfg := configs(t, f, "https://"+cpAddr+":6443", "/dev/nvme0n1")
	cpWrongDisk, _, _ := configs(t, f, "https://"+cpAddr+":6443", "/dev/sdz")

	ctx := testCtx(t, 30*time.Second)

	w := start(t, NodeOptions{Addr: wAddr, Mode: "metal", Disks: []string{"/dev/nvme0n1"}})

	insecure := func(a string) *client.Client {
		c, err := client.New(ctx, client.WithEndpoints(a), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
		if err != nil {
			t.Fatal(err)
		}

		t.Cleanup(func() { _ = c.Close() })

		return c
	}

	wc := insecure(w.APIAddr())

	disks, err := wc.Disks(ctx)
	if err != nil || len(disks.GetMessages()) != 1 || disks.GetMessages()[0].GetDisks()[0].GetDeviceName() != "/dev/nvme0n1" {
		t.Fatalf("Disks in maintenance = %v, %v", disks, err)
	}

	if err := wc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); client.StatusCode(err) != codes.Unimplemented {
		t.Errorf("Bootstrap in maintenance = %v, want Unimplemented", err)
	}

	// A control-plane config in metal mode with a disk the machine lacks is refused.
	if _, err := wc.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: cpWrongDisk}); client.StatusCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "/dev/sdz") {
		t.Errorf("apply with missing disk = %v", err)
	}

	if _, err := wc.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: worker}); err != nil {
		t.Fatalf("apply worker config: %v", err)
	}

	// No control plane yet: the worker has no certificate (trustd) and every handshake fails.
	tcParsed := trustedTalos(t, ctx, tcfg, w)

	shortCtx, c := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, err := tcParsed.Version(shortCtx); err == nil {
		t.Error("worker answered before any control plane could sign its certificate")
	}
	c()

	cpNode := start(t, NodeOptions{Addr: cpAddr, Mode: "cloud", UserData: cp})

	if _, err := insecure(cpNode.APIAddr()).Version(ctx); err == nil {
		t.Error("configured control plane answered a client without certificate")
	}

	cpc := trustedTalos(t, ctx, tcfg, cpNode)

	if err := cpc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	if err := cpc.Bootstrap(ctx, &machineapi.BootstrapRequest{}); client.StatusCode(err) != codes.AlreadyExists {
		t.Errorf("second Bootstrap = %v, want AlreadyExists", err)
	}

	// A worker finds trustd through the Kubernetes API, so it is trusted only after bootstrap.
	// It joins in the background (kubelet → 6443, then trustd → 50001): wait until it holds its
	// certificate, then it must answer over mutual TLS (a fresh client: gRPC keeps a failed
	// channel in backoff).
	wTrusted := joinedWorker(t, ctx, tcfg, w)

	if _, err := wTrusted.Version(ctx); err != nil {
		t.Errorf("trusted worker over mutual TLS after the cluster was bootstrapped: %v", err)
	}

	kc, err := cpc.Kubeconfig(ctx)
	if err != nil || !strings.Contains(string(kc), "https://"+cpAddr+":6443") || !strings.Contains(string(kc), "client-certificate-data") {
		t.Errorf("Kubeconfig = %q, %v", kc, err)
	}
}

func mustTalosconfig(t *testing.T, b []byte) *clientconfig.Config {
	t.Helper()

	c, err := clientconfig.FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}

	return c
}

// joinedWorker waits until the worker w holds its certificate from trustd (it joins in the
// background: kubelet → 6443, then trustd → 50001), then is a client of it over mutual TLS (a
// fresh one: gRPC keeps a failed channel in backoff), closed when the test ends.
func joinedWorker(t *testing.T, ctx context.Context, tcfg []byte, w *Node) *client.Client {
	t.Helper()

	waitFor(t, ctx, "the worker to get its certificate from trustd", func() error {
		if w.Trusted() {
			return nil
		}

		return fmt.Errorf("join: %v", w.JoinError())
	})

	return trustedTalos(t, ctx, tcfg, w)
}

// A worker configured once the cluster runs joins from its booted self: the apply answers first,
// then the node reboots (Latency.ApplyReboot), and only after that do its kubelet and its CSR
// reach the control plane. A worker trusted during its reboot made the emulated world's cold
// resume beat its own latency profile (BenchmarkPauseResume, wall ÷ bound 0.93).
func TestWorkerJoinsAfterItsApplyReboot(t *testing.T) {
	t.Parallel()

	f := forms[len(forms)-1]
	cpAddr, wAddr := addr(), addr()
	cp, worker, tcfg := configs(t, f, "https://"+cpAddr+":6443", "/dev/sda")
	ctx := testCtx(t, 30*time.Second)

	cpNode := start(t, NodeOptions{Addr: cpAddr, Mode: "cloud", UserData: cp})
	if err := trustedTalos(t, ctx, tcfg, cpNode).Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	const rebootFor = 1500 * time.Millisecond
	w := start(t, NodeOptions{Addr: wAddr, Mode: "metal", Disks: []string{"/dev/sda"}, JoinRetry: 10 * time.Millisecond,
		Latency: Latency{ApplyReboot: rebootFor}})
	c, err := client.New(ctx, client.WithEndpoints(w.APIAddr()), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	applied := time.Now()
	if _, err := c.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: worker}); err != nil {
		t.Fatalf("apply worker config: %v", err)
	}

	for time.Since(applied) < rebootFor-200*time.Millisecond {
		if w.Trusted() {
			t.Fatalf("worker trusted %v after its apply, during its %v reboot", time.Since(applied).Round(time.Millisecond), rebootFor)
		}
		time.Sleep(20 * time.Millisecond)
	}
	joinedWorker(t, ctx, tcfg, w)
	if took := time.Since(applied); took < rebootFor {
		t.Errorf("worker trusted %v after its apply, before its %v reboot ended", took, rebootFor)
	}
}
