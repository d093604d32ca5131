package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/siderolabs/crypto/x509"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// The bot's nodeAPI replaces machinery's client package (api.go): these tests hold it to that
// client, call for call, on the same replies and the same stand-in nodes.

// TestNodeErrorsAsMachineryFilterMessages: a reply whose parts carry node errors fails as
// client.FilterMessages fails it (same gRPC code, the node named), and passes when it does.
func TestNodeErrorsAsMachineryFilterMessages(t *testing.T) {
	t.Parallel()

	ok := &common.Metadata{Hostname: "cp-1"}
	plain := &common.Metadata{Hostname: "cp-2", Error: "etcd is not running"}
	coded := &common.Metadata{Hostname: "worker-1", Error: "not a control plane", Status: &rpcstatus.Status{Code: int32(codes.FailedPrecondition), Message: "not a control plane"}}

	tests := []struct {
		name  string
		parts []*common.Metadata
	}{
		{name: "no parts"},
		{name: "no metadata", parts: []*common.Metadata{nil}},
		{name: "all answered", parts: []*common.Metadata{ok, ok}},
		{name: "one failed without status", parts: []*common.Metadata{ok, plain}},
		{name: "one failed with a status", parts: []*common.Metadata{coded, ok}},
		{name: "every one failed", parts: []*common.Metadata{plain, coded}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &machineapi.VersionResponse{}
			for _, md := range tt.parts {
				resp.Messages = append(resp.Messages, &machineapi.Version{Metadata: md})
			}

			ours := nodeErrors(resp.GetMessages())
			_, theirs := client.FilterMessages(proto.Clone(resp).(*machineapi.VersionResponse), nil)

			if (ours == nil) != (theirs == nil) {
				t.Fatalf("nodeErrors = %v, machinery's FilterMessages = %v", ours, theirs)
			}

			if ours == nil {
				return
			}

			if status.Code(ours) != client.StatusCode(theirs) {
				t.Errorf("code = %s, machinery's = %s", status.Code(ours), client.StatusCode(theirs))
			}

			for _, md := range tt.parts {
				if md.GetError() != "" && (!strings.Contains(ours.Error(), md.GetHostname()) || !strings.Contains(ours.Error(), md.GetError())) {
					t.Errorf("error %q does not name %s and its error %q", ours, md.GetHostname(), md.GetError())
				}
			}
		})
	}
}

// machineryClient is machinery's own client for the node on route r, with the talosconfig.
func machineryClient(t *testing.T, r Route, talosconfig []byte) *client.Client {
	t.Helper()

	cfg, err := clientconfig.FromBytes(talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	opts := []client.OptionFunc{client.WithConfig(cfg), client.WithEndpoints(r.Endpoint)}

	c, err := client.New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close() })

	return c
}

func ourClient(t *testing.T, r Route, talosconfig []byte) *nodeAPI {
	t.Helper()

	c, err := trustedClient(t.Context(), r, talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close() })

	return c
}

func TestNodeAPIAnswersAsMachineryClient(t *testing.T) {
	t.Parallel()

	tc := newTestCluster(t, "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	cp := Direct(tc.cpAddrs[0])
	workerIP, _, _ := net.SplitHostPort(tc.worker.APIAddr())

	// In maintenance mode, insecure: the disks, through StorageService and COSI.
	mach, err := client.New(ctx, client.WithEndpoints(tc.worker.APIAddr()), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}
	defer mach.Close() //nolint:errcheck

	ours, _, err := insecureClient(ctx, tc.worker.APIAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close() //nolint:errcheck

	theirDisks, err := mach.Disks(ctx)
	if err != nil {
		t.Fatalf("machinery Disks: %v", err)
	}

	ourDisks, err := ours.Disks(ctx)
	if err != nil {
		t.Fatalf("Disks: %v", err)
	}

	if !proto.Equal(ourDisks, theirDisks) || len(ourDisks.GetMessages()) == 0 {
		t.Errorf("Disks = %v, machinery's = %v", ourDisks, theirDisks)
	}

	theirCOSI, err := safe.StateListAll[*block.Disk](ctx, mach.COSI)
	if err != nil {
		t.Fatalf("machinery COSI: %v", err)
	}

	ourCOSI, err := safe.StateListAll[*block.Disk](ctx, ours.COSI)
	if err != nil {
		t.Fatalf("COSI: %v", err)
	}

	if ourCOSI.Len() != theirCOSI.Len() || ourCOSI.Len() != 2 {
		t.Errorf("COSI lists %d disks, machinery's %d, want 2", ourCOSI.Len(), theirCOSI.Len())
	}

	// Bootstrap the cluster, then compare the trusted calls.
	if _, err := ApplyInsecure(ctx, tc.worker.APIAddr(), tc.cfg.Worker); err != nil {
		t.Fatalf("ApplyInsecure worker: %v", err)
	}

	if err := WaitTrusted(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig); err != nil {
		t.Fatalf("WaitTrusted: %v", err)
	}

	// Before the bootstrap: the same refusal, with the same code.
	theirs := machineryClient(t, cp, tc.cfg.Talosconfig)
	our := ourClient(t, cp, tc.cfg.Talosconfig)

	_, errTheirs := theirs.Kubeconfig(ctx)
	_, errOurs := our.Kubeconfig(ctx)

	if (errTheirs == nil) != (errOurs == nil) || client.StatusCode(errTheirs) != status.Code(errOurs) {
		t.Errorf("Kubeconfig before bootstrap: %v, machinery's %v", errOurs, errTheirs)
	}

	if err := Bootstrap(ctx, tc.cpAddrs[0], tc.cfg.Talosconfig); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	errTheirs = theirs.Bootstrap(ctx, &machineapi.BootstrapRequest{})
	errOurs = our.Bootstrap(ctx, &machineapi.BootstrapRequest{})

	if client.StatusCode(errTheirs) != codes.AlreadyExists || status.Code(errOurs) != codes.AlreadyExists {
		t.Errorf("second Bootstrap: %v, machinery's %v; want AlreadyExists from both", errOurs, errTheirs)
	}

	if err := WaitTrustedAt(ctx, Through(tc.cpAddrs[0]+":50000", workerIP), tc.cfg.Talosconfig); err != nil {
		t.Fatalf("WaitTrusted worker through a control plane: %v", err)
	}

	vTheirs, err := theirs.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}

	vOurs, err := our.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if !proto.Equal(vOurs, vTheirs) {
		t.Errorf("Version = %v, machinery's = %v", vOurs, vTheirs)
	}

	// Through a control plane, to the worker: machinery's WithNode against our route. The worker
	// runs no etcd, its control plane does: the services tell whose answer came back.
	through := Through(tc.cpAddrs[0]+":50000", workerIP)

	svcTheirs, err := theirs.ServiceList(client.WithNode(ctx, workerIP))
	if err != nil {
		t.Fatal(err)
	}

	svcOurs, err := ourClient(t, through, tc.cfg.Talosconfig).ServiceList(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if ids := serviceIDs(svcOurs); ids != serviceIDs(svcTheirs) || strings.Contains(ids, "etcd") || !strings.Contains(serviceIDs(mustServices(t, our)), "etcd") {
		t.Errorf("services through the control plane = %s, machinery's = %s, the control plane's own = %s", ids, serviceIDs(svcTheirs), serviceIDs(mustServices(t, our)))
	}

	kTheirs, err := theirs.Kubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}

	kOurs, err := our.Kubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Each call signs a new admin certificate: everything else is the same.
	if !bytes.Equal(withoutCredentials(kOurs), withoutCredentials(kTheirs)) || !bytes.Contains(kOurs, []byte("client-key-data: ")) {
		t.Errorf("Kubeconfig = %q, machinery's = %q", kOurs, kTheirs)
	}

	snapTheirs := readAll(t, func() (io.ReadCloser, error) {
		return theirs.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{})
	})
	snapOurs := readAll(t, func() (io.ReadCloser, error) { return our.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{}) })

	for name, snap := range map[string][]byte{"ours": snapOurs, "machinery's": snapTheirs} {
		check := newSnapshotCheck()
		_, _ = check.Write(snap)

		if _, err := check.result(); err != nil {
			t.Errorf("%s snapshot (%d bytes): %v", name, len(snap), err)
		}
	}

	// On the worker, no etcd: both streams fail, with the same code.
	worker := Through(tc.cpAddrs[0]+":50000", workerIP)
	_, errTheirs = io.ReadAll(must(theirs.EtcdSnapshot(client.WithNode(ctx, workerIP), &machineapi.EtcdSnapshotRequest{})))

	rd, err := ourClient(t, worker, tc.cfg.Talosconfig).EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{})
	if err == nil {
		_, err = io.ReadAll(rd)
	}

	if errTheirs == nil || err == nil || client.StatusCode(errTheirs) != status.Code(err) {
		t.Errorf("EtcdSnapshot on a worker: %v, machinery's %v; want the same failure", err, errTheirs)
	}
}

func mustServices(t *testing.T, c *nodeAPI) *machineapi.ServiceListResponse {
	t.Helper()

	s, err := c.ServiceList(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	return s
}

func serviceIDs(resp *machineapi.ServiceListResponse) string {
	var ids []string

	for _, m := range resp.GetMessages() {
		for _, s := range m.GetServices() {
			ids = append(ids, s.GetId())
		}
	}

	return strings.Join(ids, ",")
}

// withoutCredentials is a kubeconfig without its client certificate and key lines.
func withoutCredentials(kc []byte) []byte {
	var out [][]byte

	for line := range bytes.Lines(kc) {
		if !bytes.Contains(line, []byte("client-certificate-data:")) && !bytes.Contains(line, []byte("client-key-data:")) {
			out = append(out, line)
		}
	}

	return bytes.Join(out, nil)
}

func must(rd io.ReadCloser, err error) io.Reader {
	if err != nil {
		return iotest.ErrReader(err)
	}

	return rd
}

func readAll(t *testing.T, open func() (io.ReadCloser, error)) []byte {
	t.Helper()

	rd, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close() //nolint:errcheck

	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}

	return b
}

// recordingMachine is a MachineService that records the metadata of every call it gets.
type recordingMachine struct {
	machineapi.UnimplementedMachineServiceServer

	mu  sync.Mutex
	mds []metadata.MD
}

func (r *recordingMachine) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mds = append(r.mds, md)
}

func (r *recordingMachine) Version(ctx context.Context, _ *emptypb.Empty) (*machineapi.VersionResponse, error) {
	r.record(ctx)

	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{Version: &machineapi.VersionInfo{Tag: "v1.14.1"}}}}, nil
}

func (r *recordingMachine) Kubeconfig(_ *emptypb.Empty, srv grpc.ServerStreamingServer[common.Data]) error {
	r.record(srv.Context())

	return status.Error(codes.FailedPrecondition, "recorded")
}

// last is the metadata of the last call, without what each connection sets on its own.
func (r *recordingMachine) last() metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	md := r.mds[len(r.mds)-1].Copy()
	md.Delete(":authority")

	return md
}

// TestNodeAPISendsWhatMachineryClientSends: on every call, direct or forwarded, unary or
// streamed, the node gets the same gRPC metadata from nodeAPI as from machinery's client with the
// same talosconfig ("runtime", the talosconfig context's "context", "node", the user agent).
func TestNodeAPISendsWhatMachineryClientSends(t *testing.T) {
	t.Parallel()

	bundle, err := LoadSecrets(testSecrets(t))
	if err != nil {
		t.Fatal(err)
	}

	in := baseInput(t)
	addr := loopback()
	in.ControlPlaneIPs = []string{addr}

	cfgs, err := Generate(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}

	// A talosconfig whose context names a cluster, as Omni's do: machinery sends it as "context".
	tc, err := clientconfig.FromBytes(cfgs.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	tc.Contexts[tc.Context].Cluster = "acme-web"

	talosconfig, err := tc.Bytes()
	if err != nil {
		t.Fatal(err)
	}

	ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(bundle.Certs.OS)
	if err != nil {
		t.Fatal(err)
	}

	kp, err := x509.NewKeyPair(ca, x509.CommonName(addr), x509.IPAddresses([]net.IP{net.ParseIP(addr)}),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}))
	if err != nil {
		t.Fatal(err)
	}

	cert, err := tls.X509KeyPair(kp.CrtPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}

	rec := &recordingMachine{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}})))
	machineapi.RegisterMachineServiceServer(srv, rec)

	lis, err := net.Listen("tcp", net.JoinHostPort(addr, "50000"))
	if err != nil {
		t.Fatal(err)
	}

	go srv.Serve(lis) //nolint:errcheck
	t.Cleanup(srv.Stop)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	for _, r := range []Route{Direct(lis.Addr().String()), Through(lis.Addr().String(), "10.0.0.9")} {
		theirs := machineryClient(t, r, talosconfig)
		ours := ourClient(t, r, talosconfig)

		tctx := ctx
		if r.Node != "" {
			tctx = client.WithNode(ctx, r.Node)
		}

		calls := []struct {
			name         string
			theirs, ours func() error
		}{
			{"Version", func() error { _, err := theirs.Version(tctx); return err }, func() error { _, err := ours.Version(ctx); return err }},
			{"Kubeconfig", func() error { _, err := theirs.Kubeconfig(tctx); return err }, func() error { _, err := ours.Kubeconfig(ctx); return err }},
		}

		for _, c := range calls {
			if err := c.theirs(); c.name == "Version" && err != nil {
				t.Fatalf("%s %s with machinery's client: %v", r, c.name, err)
			}

			want := rec.last()

			if err := c.ours(); c.name == "Version" && err != nil {
				t.Fatalf("%s %s: %v", r, c.name, err)
			}

			got := rec.last()

			if !maps.EqualFunc(got, want, slices.Equal) || got.Get("runtime") == nil || got.Get("context") == nil || (r.Node != "") != (got.Get("node") != nil) {
				t.Errorf("%s %s: the node got metadata %v, from machinery's client %v", r, c.name, got, want)
			}
		}
	}
}
