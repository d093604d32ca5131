package talos

import (
	"cmp"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"google.golang.org/grpc/codes"

	"github.com/pocbot/pocbot/internal/settings"
	simloopback "github.com/pocbot/pocbot/internal/sim/loopback"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// loopback returns a fresh address in this test binary's loopback block: parallel test binaries
// and worlds on the machine never listen there, so nothing fights over x:50000.
func loopback() string {
	b, err := simloopback.Shared()
	if err != nil {
		panic(err)
	}

	return b.Next()
}

func startNode(t *testing.T, opts simtalos.NodeOptions) *simtalos.Node {
	t.Helper()

	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))

	// The node outlives t.Context(), which ends before the cleanup below closes it: StartNode's
	// ctx bounds the start only (sim/talos TestNodeOutlivesItsStartContext).
	n, err := simtalos.StartNode(t.Context(), opts)
	if err != nil {
		t.Fatalf("StartNode %s: %v", opts.Addr, err)
	}

	t.Cleanup(func() { _ = n.Close() })

	return n
}

type testCluster struct {
	cfg     *Configs
	cps     []*simtalos.Node
	worker  *simtalos.Node
	in      Input
	cpAddrs []string
}

// newTestCluster generates configs for three control planes and a worker on loopback addresses,
// boots the control planes with their config as user data (cloud) and the worker in maintenance.
func newTestCluster(t *testing.T, talosVersion string) *testCluster {
	t.Helper()

	tc := &testCluster{cpAddrs: []string{loopback(), loopback(), loopback()}}
	tc.in = baseInput(t)
	tc.in.TalosVersion = talosVersion

	// The stand-ins of one process group nodes into clusters by CA: clusters generated in
	// parallel tests need their own bundles, or one's bootstrap shows in the other.
	if talosVersion != "" && talosVersion != DefaultTalosVersion {
		tc.in.Secrets = testSecrets114(t)
	} else {
		// Its own bundle too: TestRefusals bootstraps its cluster, which TestRoundTrip must not see.
		b, err := NewSecrets(DefaultTalosVersion, settings.ServiceAccountKeyECDSA)
		if err != nil {
			t.Fatalf("NewSecrets: %v", err)
		}

		tc.in.Secrets = b
	}
	tc.in.ControlPlaneIPs = tc.cpAddrs
	tc.in.Endpoint = "https://" + tc.cpAddrs[0] + ":6443"

	var err error

	if tc.cfg, err = Generate(t.Context(), tc.in); err != nil {
		t.Fatalf("Generate: %v", err)
	}

	for _, a := range tc.cpAddrs {
		tc.cps = append(tc.cps, startNode(t, simtalos.NodeOptions{Addr: a, Mode: "cloud", UserData: tc.cfg.ControlPlane}))
	}

	tc.worker = startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/sda", "/dev/nvme0n1"}})

	return tc
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()

	// The 1.13 form (default) and the 1.14 multi-document form.
	for _, v := range []string{"", "v1.14.1"} {
		t.Run("talos "+cmp.Or(v, DefaultTalosVersion), func(t *testing.T) {
			t.Parallel()
			testRoundTrip(t, v)
		})
	}
}

func testRoundTrip(t *testing.T, talosVersion string) {
	tc := newTestCluster(t, talosVersion)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	start := time.Now()

	// Readyz before bootstrap fails: nothing serves the Kubernetes API yet.
	kcEarly, err := Kubeconfig(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig)
	if err != nil {
		t.Fatalf("Kubeconfig before bootstrap: %v", err)
	}

	shortCtx, c := context.WithTimeout(ctx, 700*time.Millisecond)
	if err := Readyz(shortCtx, kcEarly); err == nil {
		t.Error("Readyz succeeded before bootstrap")
	}
	c()

	disks, err := ApplyInsecure(ctx, tc.worker.APIAddr(), tc.cfg.Worker)
	if err != nil {
		t.Fatalf("ApplyInsecure worker: %v", err)
	}

	if strings.Join(DiskPaths(disks), ",") != "/dev/nvme0n1,/dev/sda" { // COSI lists by ID
		t.Errorf("disks = %v", disks)
	}

	for _, a := range tc.cpAddrs {
		if err := WaitTrusted(ctx, a, tc.cfg.Talosconfig); err != nil {
			t.Fatalf("WaitTrusted %s: %v", a, err)
		}
	}

	if err := Bootstrap(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	// A worker is trusted only once the Kubernetes API answers: its kubelet finds trustd there.
	if err := WaitTrusted(ctx, tc.worker.APIAddr(), tc.cfg.Talosconfig); err != nil {
		t.Fatalf("WaitTrusted worker %s: %v", tc.worker.APIAddr(), err)
	}

	// Idempotent: a rerun (on any control plane) sees AlreadyExists and calls it done.
	for _, a := range tc.cpAddrs {
		if err := Bootstrap(ctx, a, tc.cfg.Talosconfig); err != nil {
			t.Errorf("second Bootstrap on %s: %v", a, err)
		}
	}

	kc, err := Kubeconfig(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig)
	if err != nil {
		t.Fatalf("Kubeconfig: %v", err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatalf("Readyz: %v", err)
	}

	// Through another control plane, dialling it while verifying the endpoint's name.
	if err := ReadyzVia(ctx, kc, tc.cpAddrs[2]+":6443"); err != nil {
		t.Errorf("ReadyzVia cp3: %v", err)
	}

	t.Logf("apply+trust+bootstrap+kubeconfig+readyz: %s", time.Since(start))
}

func TestRefusals(t *testing.T) {
	t.Parallel()

	tc := newTestCluster(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	// A client without the talosconfig certificate is refused by a configured node.
	insecure, err := client.New(ctx, client.WithEndpoints(tc.cpAddrs[0]), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	defer insecure.Close() //nolint:errcheck

	if _, err := insecure.Version(ctx); err == nil {
		t.Error("configured node answered a client without a certificate")
	}

	// A client with another cluster's talosconfig is refused too.
	otherSecrets, err := NewSecrets(DefaultTalosVersion, settings.ServiceAccountKeyECDSA)
	if err != nil {
		t.Fatalf("NewSecrets: %v", err)
	}

	other := tc.in
	other.Secrets = otherSecrets

	otherCfg, err := Generate(ctx, other)
	if err != nil {
		t.Fatalf("Generate other: %v", err)
	}

	shortCtx, c := context.WithTimeout(ctx, time.Second)
	if err := WaitTrusted(shortCtx, tc.cpAddrs[0], otherCfg.Talosconfig); err == nil {
		t.Error("node trusted another cluster's talosconfig")
	}
	c()

	// Maintenance-mode apply refuses what the validator refuses, in its words; the node stays
	// in maintenance.
	fresh := startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/nvme0n1"}})

	tests := []struct {
		name    string
		cfg     []byte
		wantErr string
	}{
		// A control-plane config carries a /dev/sda install disk this machine lacks: the client
		// refuses before sending.
		{name: "disk not on node", cfg: tc.cfg.ControlPlane, wantErr: ".machine.install.disk /dev/sda is not among [/dev/nvme0n1]"},
		{name: "garbage", cfg: []byte("machine: ["), wantErr: "does not parse"},
	}

	for _, tt := range tests {
		if _, err := ApplyInsecure(ctx, fresh.APIAddr(), tt.cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: ApplyInsecure error = %v, want %q", tt.name, err, tt.wantErr)
		}
	}

	// Server side: a config the metal validator refuses is refused by the node itself.
	noDisk := tc.in
	noDisk.WorkerInstallDisk = ""
	noDiskInput, _, _ := normalize(noDisk)

	wp, err := workerPatches(noDiskInput)
	if err != nil {
		t.Fatal(err)
	}

	genIn := mustGenInput(t, tc.in)

	unvalidated, err := render(genIn, machine.TypeWorker, wp)
	if err != nil {
		t.Fatalf("render: %v", err)
	}

	raw, err := client.New(ctx, client.WithEndpoints(fresh.APIAddr()), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close() //nolint:errcheck

	if _, err := raw.ApplyConfiguration(ctx, applyReq(unvalidated)); err == nil ||
		client.StatusCode(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "either install disk or diskSelector should be defined") {
		t.Errorf("node accepted or misreported an unvalidated config: %v", err)
	}

	if fresh.Configured() {
		t.Error("node left maintenance mode after a refused config")
	}

	// Bootstrap on a worker, kubeconfig from maintenance mode.
	if _, err := ApplyInsecure(ctx, tc.worker.APIAddr(), tc.cfg.Worker); err != nil {
		t.Fatalf("ApplyInsecure worker: %v", err)
	}

	// The worker gets its certificate from trustd once the cluster is bootstrapped.
	if err := Bootstrap(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	if err := WaitTrusted(ctx, tc.worker.APIAddr(), tc.cfg.Talosconfig); err != nil {
		t.Fatalf("WaitTrusted worker: %v", err)
	}

	shortCtx, c = context.WithTimeout(ctx, 5*time.Second)
	if err := Bootstrap(shortCtx, tc.worker.APIAddr(), tc.cfg.Talosconfig); err == nil || !strings.Contains(err.Error(), "only available on control plane nodes") {
		t.Errorf("Bootstrap on worker = %v", err)
	}
	c()

	shortCtx, c = context.WithTimeout(ctx, time.Second)
	if _, err := Kubeconfig(shortCtx, fresh.APIAddr(), tc.cfg.Talosconfig); err == nil {
		t.Error("Kubeconfig from a maintenance-mode node succeeded")
	}
	c()
}

func TestSimRefusesInvalidUserData(t *testing.T) {
	t.Parallel()

	_, err := simtalos.StartNode(t.Context(), simtalos.NodeOptions{Addr: loopback(), Mode: "cloud", UserData: []byte("version: v1alpha1\nmachine:\n  type: controlplane\n")})
	if err == nil || !strings.Contains(err.Error(), "configuration validation failed") {
		t.Errorf("StartNode with invalid user data = %v", err)
	}
}

func mustGenInput(t *testing.T, in Input) *generate.Input {
	t.Helper()

	bundle, err := LoadSecrets(in.Secrets)
	if err != nil {
		t.Fatal(err)
	}

	contract, err := Contract(in.TalosVersion)
	if err != nil {
		t.Fatal(err)
	}

	k8s, err := DefaultKubernetesVersion(in.TalosVersion)
	if err != nil {
		t.Fatal(err)
	}

	g, err := generate.NewInput(in.ClusterName, in.Endpoint, k8s,
		generate.WithVersionContract(contract), generate.WithSecretsBundle(bundle))
	if err != nil {
		t.Fatal(err)
	}

	return g
}

func applyReq(cfg []byte) *machineapi.ApplyConfigurationRequest {
	return &machineapi.ApplyConfigurationRequest{Data: cfg, Mode: machineapi.ApplyConfigurationRequest_AUTO}
}

func TestBadTalosconfigFailsFast(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	start := time.Now()

	if err := WaitTrusted(ctx, "127.0.0.1:1", []byte("context: [")); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Errorf("WaitTrusted with a broken talosconfig = %v", err)
	}

	if _, err := Kubeconfig(ctx, "127.0.0.1:1", nil); err == nil {
		t.Error("Kubeconfig with no talosconfig succeeded")
	}

	// A retried call would run into the context's 5 s deadline; a refused one returns at once.
	if time.Since(start) > 4*time.Second {
		t.Errorf("broken talosconfig took %s to fail; it must not be retried", time.Since(start))
	}
}
