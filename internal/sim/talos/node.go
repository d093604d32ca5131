package talos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosi-project/runtime/pkg/state"
	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	blockpb "github.com/siderolabs/talos/pkg/machinery/api/resource/definitions/block"
	storageapi "github.com/siderolabs/talos/pkg/machinery/api/storage"
	"github.com/siderolabs/talos/pkg/machinery/cel/celenv"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/validation"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/settings"
)

// Default ports, as on a real node.
const (
	DefaultAPIPort  = netpolicy.PortApid
	DefaultKubePort = netpolicy.PortKubeAPI
)

// NodeOptions describe one node.
type NodeOptions struct {
	// Faults, shared by the nodes of a world, make calls fail or answer late (nil: none).
	Faults *Faults
	// ImagePullBlocked, when set and true, plays register row node-egress=blocked for the CNI:
	// the node cannot pull the Cilium agent's image (quay.io), so its agent pod waits in
	// ImagePullBackOff and is never ready. It is asked at every read (a world may block and open
	// the way while its nodes run). What a block of ghcr.io or registry.k8s.io does to etcd and
	// the kubelet is not modelled.
	ImagePullBlocked func() bool
	// Addr is the node's loopback IPv4 address, e.g. 127.0.0.11.
	Addr string
	// Mode is "cloud" (Instance booted from an image) or "metal" (Elastic Metal; install required).
	Mode string
	// UserData is the config a cloud node finds at boot; empty means maintenance mode.
	UserData []byte
	// UserDataSource, when set instead of UserData, is asked once for the user data when the node
	// boots (after BootDelay), as Talos's platform code does; nil or empty data: maintenance mode.
	UserDataSource func(ctx context.Context) ([]byte, error)
	// BootDelay is how long the node boots before its API answers (and it reads its user data).
	BootDelay time.Duration
	// CRIDelay and TimeSyncDelay are how long, from the moment the node is configured, Bootstrap
	// is refused with "bootstrap is not available yet" and then with "time is not in sync yet".
	CRIDelay, TimeSyncDelay time.Duration
	// VarLibDelay is how long, from the moment the node is configured, /var/lib is not mounted:
	// EtcdRecover answers FailedPrecondition and the etcd service waits (talos v1.13.9
	// v1alpha1_server.go EtcdRecover; services/etcd.go Volumes). /var is mounted before the
	// container runtime starts (containerd keeps its state under /var/lib), so it is at most
	// CRIDelay.
	VarLibDelay time.Duration
	// EtcdJoinTimeout and BootTimeout are Talos's constants.EtcdJoinTimeout (30 min: a control
	// plane's etcd looks that long for a cluster to join, then fails) and constants.BootTimeout
	// (70 min: the boot gives up and the node reboots), as a world scales them; zero: the
	// constants.
	EtcdJoinTimeout, BootTimeout time.Duration
	// Disks are the node's block devices (e.g. /dev/nvme0n1), served by Disks and as block.Disk
	// resources.
	Disks []string
	// SystemDisk is the disk the node booted Talos from (a block.SystemDisk resource), if any.
	SystemDisk string
	// NoResourceAPI leaves out the COSI resource service (its calls answer Unimplemented), as on
	// an API that only has StorageService.Disks: for the clients' compatibility path.
	NoResourceAPI bool
	// APIPort and KubePort default to 50000 and 6443.
	APIPort  int
	KubePort int
	// Latency is the node's own transitions, already scaled (zero: instant).
	Latency Latency
	// JoinRetry is how often a worker that is not trusted yet tries again (default joinRetry).
	// The profile counts no retry: a world at a small time factor keeps it below a modeled second.
	JoinRetry time.Duration
	// TrustdPort and KubeletPort default to 50001 and 10250.
	TrustdPort  int
	KubeletPort int
	// Network is what lies between a client and the node (the world's security group); nil lets
	// everything through. The node's own ingress firewall, from its config, is judged after it.
	Network Network
	// Subnet and Gateway are the node's L3 segment and its default gateway, as the platform
	// gives them (network.go models routing between nodes from them). A zero Subnet is the
	// address's own /32, behind Gateway: no other node is on its segment.
	Subnet  netip.Prefix
	Gateway netip.Addr
	// ManifestFault, when set, is asked before the manifest controller creates each object
	// ("apiVersion/Kind/name"); an error stops that run as a lost connection does (harnesses).
	ManifestFault func(object string) error
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// now is the clock of the readiness delays (CRIDelay, TimeSyncDelay); nil: time.Now. Tests
	// step it instead of waiting for the delays to pass.
	now func() time.Time
}

// Node is one running stand-in node.
type Node struct {
	opts   NodeOptions
	mode   runtimeMode
	log    *slog.Logger
	grpc   *grpc.Server
	lis    net.Listener
	maint  *tls.Certificate
	doneCh chan struct{}
	reboot reboot

	bootDone chan struct{}
	stopBoot context.CancelFunc

	mu           sync.Mutex
	booted       bool
	bootErr      error
	configuredAt time.Time
	calls        map[string]int
	cfg          config.Provider
	cfgBytes     []byte
	cluster      *clusterState
	apidCert     *tls.Certificate
	kube         *http.Server
	kubeLis      net.Listener
	trustd       *grpc.Server
	kubelet      *http.Server
	// The raw listeners, closed by Close itself: a server closes its listener only once its
	// Serve goroutine ran, and a node started again on the same address must find it free.
	trustdLis, kubeletLis net.Listener
	recoverySnap          []byte // /var/lib/etcd.snapshot, uploaded by EtcdRecover; nil when none
	joinErr               error
	joinDone              chan struct{} // closed when a worker's join loop ends; nil when none runs
	stop                  chan struct{}
	closed                bool
	bg                    sync.WaitGroup // the reset sequences started by Reset, waited by Close
	failReset             bool
	// kubeSince: a control plane's kube-apiserver started; joinedAt: a worker got trusted. The
	// modeled network counts its readiness from them (network.go).
	kubeSince, joinedAt time.Time
	// manifestRuns counts the manifest controller's complete runs (manifests.go).
	manifestRuns atomic.Int64
	// cosi holds the node's COSI resources (cosi.go); nil without the resource API.
	cosi state.State
}

type runtimeMode string

func (m runtimeMode) String() string        { return string(m) }
func (m runtimeMode) RequiresInstall() bool { return m == "metal" }
func (m runtimeMode) InContainer() bool     { return false }

// StartNode starts a node's Talos API on Addr:APIPort. ctx bounds the start only.
func StartNode(ctx context.Context, opts NodeOptions) (*Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start Talos stand-in: %w", err)
	}

	addr, err := netip.ParseAddr(opts.Addr)
	if err != nil || !addr.Is4() || !addr.IsLoopback() {
		return nil, fmt.Errorf("start Talos stand-in: address %q must be a loopback IPv4 address (127.0.0.0/8)", opts.Addr)
	}

	if opts.Mode != "cloud" && opts.Mode != "metal" {
		return nil, fmt.Errorf("start Talos stand-in on %s: mode %q must be \"cloud\" or \"metal\"", opts.Addr, opts.Mode)
	}

	if opts.APIPort == 0 {
		opts.APIPort = DefaultAPIPort
	}

	if opts.KubePort == 0 {
		opts.KubePort = DefaultKubePort
	}

	if opts.TrustdPort == 0 {
		opts.TrustdPort = DefaultTrustdPort
	}

	if opts.KubeletPort == 0 {
		opts.KubeletPort = DefaultKubeletPort
	}

	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}

	if opts.now == nil {
		opts.now = time.Now
	}

	n := &Node{
		opts:     opts,
		mode:     runtimeMode(opts.Mode),
		log:      opts.Logger.With("component", "sim-talos", "node", opts.Addr, "mode", opts.Mode),
		doneCh:   make(chan struct{}),
		bootDone: make(chan struct{}),
		stop:     make(chan struct{}),
	}

	if n.maint, err = selfSigned(opts.Addr); err != nil {
		return nil, fmt.Errorf("start Talos stand-in on %s: maintenance certificate: %w", opts.Addr, err)
	}

	if (len(opts.UserData) > 0 || opts.UserDataSource != nil) && opts.Mode != "cloud" {
		return nil, fmt.Errorf("start Talos stand-in on %s: user data is read in cloud mode only", opts.Addr)
	}

	if len(opts.UserData) > 0 && opts.UserDataSource != nil {
		return nil, fmt.Errorf("start Talos stand-in on %s: give UserData or UserDataSource, not both", opts.Addr)
	}

	// Static user data is checked now, so a bad config fails the start with its reason.
	if len(opts.UserData) > 0 {
		if err := n.configure(opts.UserData); err != nil {
			return nil, fmt.Errorf("start Talos stand-in on %s: user data config refused: %w", opts.Addr, err)
		}
	}

	var lc net.ListenConfig

	hostPort := net.JoinHostPort(opts.Addr, strconv.Itoa(opts.APIPort))

	n.lis, err = lc.Listen(ctx, "tcp", hostPort)
	if err != nil {
		n.abortStart()

		return nil, fmt.Errorf("start Talos stand-in: listen on %s: %w (set APIPort if the port is taken)", hostPort, err)
	}

	// WaitForHandlers: Stop returns only once no handler runs. grpc-go's Stop alone cancels the
	// calls' contexts and returns, and a handler that went on (an ApplyConfiguration starting
	// the kubelet and trustd) would open ports for a node already closed.
	n.grpc = grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		MinVersion:         tls.VersionTLS12,
		GetConfigForClient: n.tlsForClient,
	})), grpc.ChainUnaryInterceptor(n.forwardUnary, n.countUnary, n.faultUnary), grpc.ChainStreamInterceptor(n.forwardStream, n.countStream, n.faultStream),
		grpc.WaitForHandlers(true))
	machineapi.RegisterMachineServiceServer(n.grpc, &machineServer{n: n})
	storageapi.RegisterStorageServiceServer(n.grpc, &storageServer{n: n})

	if err := n.registerResources(ctx, n.grpc); err != nil {
		_ = n.lis.Close()
		n.abortStart()

		return nil, fmt.Errorf("start Talos stand-in on %s: %w", opts.Addr, err)
	}

	// The boot outlives StartNode's ctx (which bounds the start only): Close ends it.
	bootCtx, stopBoot := context.WithCancel(context.Background())
	n.stopBoot = stopBoot

	go n.boot(bootCtx)

	if opts.BootDelay == 0 && opts.UserDataSource == nil {
		<-n.bootDone // nothing to wait for or fetch: the API answers when StartNode returns
	}

	go func() {
		defer close(n.doneCh)

		if err := n.grpc.Serve(n.guard(n.lis, opts.APIPort)); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			n.log.Error("Talos API stand-in stopped", "err", err)
		}
	}()

	n.log.Info("Talos stand-in started", "api", hostPort, "configured", len(opts.UserData) > 0)

	return n, nil
}

// APIAddr is host:port of the Talos API.
func (n *Node) APIAddr() string { return n.lis.Addr().String() }

// KubeAddr is host:port of the Kubernetes API (served once the cluster is bootstrapped).
func (n *Node) KubeAddr() string {
	return net.JoinHostPort(n.opts.Addr, strconv.Itoa(n.opts.KubePort))
}

// Configured reports whether a config was accepted.
func (n *Node) Configured() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.cfg != nil
}

// Config returns the accepted config, nil in maintenance mode.
func (n *Node) Config() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()

	return slices.Clone(n.cfgBytes)
}

// Close stops the node's servers and forgets it. Nothing of the node runs once it returns: the
// boot, every gRPC handler and the reset sequence have ended, and every port it listened on is
// free, so a node started again on the address (a server the world reboots) finds them free.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()

		return nil
	}

	n.closed = true
	close(n.stop)
	n.mu.Unlock()

	n.stopBoot()
	<-n.bootDone

	// First the API and what its handlers started (a reset's sequence), and only then what
	// the config started: a handler still running could configure the node again.
	if n.grpc != nil {
		n.grpc.Stop()
		<-n.doneCh
	}

	n.bg.Wait()

	n.teardownConfig()

	return nil
}

// teardownConfig shuts what the config started and waits for a worker's join to end.
func (n *Node) teardownConfig() {
	n.deconfigure()

	n.mu.Lock()
	joinDone := n.joinDone
	n.mu.Unlock()

	if joinDone != nil {
		<-joinDone
	}
}

// abortStart undoes what StartNode did before it failed: the static user data's configuration
// (kubelet, trustd, the cluster registration, a worker's join).
func (n *Node) abortStart() {
	n.mu.Lock()
	n.closed = true
	close(n.stop)
	n.mu.Unlock()

	n.teardownConfig()
}

// tlsForClient picks the maintenance or the configured TLS setup at each handshake, so a node
// switches from one to the other without closing its listener, as a real node does on reboot.
func (n *Node) tlsForClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	if n.reboot.down() {
		return nil, errors.New("node is rebooting")
	}

	if err := n.bootState(); err != nil {
		return nil, err
	}

	n.mu.Lock()
	cfg, cl := n.cfg, n.cluster
	n.mu.Unlock()

	if cfg == nil {
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*n.maint}}, nil
	}

	cert, err := n.apidCertificate(cl)
	if err != nil {
		return nil, err
	}

	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{*cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    cl.osPool,
	}, nil
}

// apidCertificate returns the node's Talos API certificate, signed by the OS CA: by the node's own
// key on a control plane, by a control plane of the cluster (the trustd role) on a worker.
func (n *Node) apidCertificate(cl *clusterState) (*tls.Certificate, error) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.apidCert != nil {
		return n.apidCert, nil
	}

	if !n.cfg.Machine().Type().IsControlPlane() {
		// A worker's certificate comes from trustd over the network (join); none yet.
		if n.joinErr != nil {
			return nil, fmt.Errorf("worker %s not trusted yet: %w", n.opts.Addr, n.joinErr)
		}

		return nil, fmt.Errorf("worker %s not trusted yet: no certificate from trustd", n.opts.Addr)
	}

	ca, err := cl.issuer(n.cfg.Machine().Security().Token())
	if err != nil {
		return nil, err
	}

	ips := []net.IP{net.ParseIP(n.opts.Addr)}
	var dns []string

	for _, san := range n.cfg.Machine().Security().CertSANs() {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, san)
		}
	}

	kp, err := x509.NewKeyPair(ca, x509.CommonName(n.opts.Addr), x509.IPAddresses(ips), x509.DNSNames(dns),
		x509.NotAfter(time.Now().Add(24*time.Hour)), x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}))
	if err != nil {
		return nil, fmt.Errorf("issue Talos API certificate for %s: %w", n.opts.Addr, err)
	}

	n.apidCert = kp.Certificate

	return n.apidCert, nil
}

// validate checks a config the way the node would before accepting it.
func (n *Node) validate(data []byte) (config.Provider, []string, error) {
	cfg, err := configloader.NewFromBytes(data)
	if err != nil {
		return nil, nil, fmt.Errorf("failed to parse config: %w", err)
	}

	warnings, err := cfg.Validate(n.mode, validation.WithLocal())
	if err != nil {
		return nil, warnings, fmt.Errorf("configuration validation failed: %w", err)
	}

	if n.mode.RequiresInstall() {
		if err := n.checkInstallDisk(cfg); err != nil {
			return nil, warnings, err
		}
	}

	if cfg.Machine().Security().IssuingCA() == nil || len(cfg.Machine().Security().IssuingCA().Crt) == 0 {
		return nil, warnings, errors.New("config carries no Talos OS CA certificate (.machine.ca.crt)")
	}

	return cfg, warnings, nil
}

// checkInstallDisk refuses a config whose install target is not among the machine's disks, as the
// installer would: .machine.install.disk (up to the 1.13 form) or, in the 1.14 form, the
// UnattendedInstallConfig document's CEL disk selector, evaluated against each disk's path.
func (n *Node) checkInstallDisk(cfg config.Provider) error {
	if u := cfg.UnattendedInstallConfig(); u != nil && !u.VolumeSelector().IsZero() {
		sel := u.VolumeSelector()

		for _, d := range n.opts.Disks {
			ok, err := sel.EvalBool(celenv.DiskLocator(), map[string]any{"disk": &blockpb.DiskSpec{DevPath: d}, "system_disk": false})
			if err != nil {
				return fmt.Errorf("install disk selector %q: %w", sel.String(), err)
			}

			if ok {
				return nil
			}
		}

		return fmt.Errorf("install disk selector %q matches no disk on this machine (disks: %v)", sel.String(), n.opts.Disks)
	}

	disk := cfg.Machine().Install().Disk()
	if disk != "" && !slices.Contains(n.opts.Disks, disk) {
		return fmt.Errorf("install disk %q not found on this machine (disks: %v)", disk, n.opts.Disks)
	}

	return nil
}

// configure validates data and moves the node out of maintenance mode.
func (n *Node) configure(data []byte) error {
	cfg, warnings, err := n.validate(data)
	if err != nil {
		return err
	}

	cl, err := join(cfg, n)
	if err != nil {
		return err
	}

	n.mu.Lock()
	n.cfg, n.cfgBytes, n.cluster, n.configuredAt = cfg, slices.Clone(data), cl, n.opts.now()
	n.mu.Unlock()

	n.holdMachineConfig(cfg)

	n.log.Info("config applied, leaving maintenance mode", "type", cfg.Machine().Type().String(), "warnings", len(warnings))

	if err := n.startKubelet(); err != nil {
		return err
	}

	if !cfg.Machine().Type().IsControlPlane() {
		n.mu.Lock()
		n.joinDone = make(chan struct{})
		n.mu.Unlock()

		go n.join(cfg, cl)

		return nil
	}

	if err := n.startTrustd(cl); err != nil {
		return err
	}

	if cl.isBootstrapped() {
		if err := n.startKube(); err != nil {
			return err
		}

		n.runManifests()
	}

	return nil
}

func (n *Node) configured() (config.Provider, *clusterState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.cfg == nil {
		return nil, nil, status.Error(codes.Unimplemented, "API is not implemented in maintenance mode")
	}

	return n.cfg, n.cluster, nil
}

type machineServer struct {
	machineapi.UnimplementedMachineServiceServer

	n *Node
}

func (s *machineServer) ApplyConfiguration(ctx context.Context, req *machineapi.ApplyConfigurationRequest) (*machineapi.ApplyConfigurationResponse, error) {
	n := s.n

	if n.Configured() {
		// A configured node takes a new config over mutual TLS from an admin (adopting a
		// parked worker); see reconfigure.
		return s.reapply(ctx, req)
	}

	if err := n.configure(req.GetData()); err != nil {
		n.log.Warn("config refused", "err", err)

		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	return n.appliedWithReboot(), nil
}

// appliedWithReboot starts the reboot that applies a new config and is the apply's answer.
func (n *Node) appliedWithReboot() *machineapi.ApplyConfigurationResponse {
	n.reboot.start(n.opts.Latency.ApplyReboot)

	return &machineapi.ApplyConfigurationResponse{Messages: []*machineapi.ApplyConfiguration{{
		Mode:        machineapi.ApplyConfigurationRequest_REBOOT,
		ModeDetails: "Applied configuration with a reboot",
	}}}
}

func (s *machineServer) Version(context.Context, *emptypb.Empty) (*machineapi.VersionResponse, error) {
	return &machineapi.VersionResponse{Messages: []*machineapi.Version{{
		Version: &machineapi.VersionInfo{Tag: settings.DefaultTalosVersion, Arch: "amd64", Os: "linux"},
	}}}, nil
}

// admin is the node's config and cluster, for a call with the os:admin role; the node's answer
// otherwise (not configured, not admin).
func (s *machineServer) admin(ctx context.Context) (config.Provider, *clusterState, error) {
	cfg, cl, err := s.n.configured()
	if err != nil {
		return nil, nil, err
	}

	if err := requireAdmin(ctx); err != nil {
		return nil, nil, err
	}

	return cfg, cl, nil
}

func (s *machineServer) Bootstrap(ctx context.Context, req *machineapi.BootstrapRequest) (*machineapi.BootstrapResponse, error) {
	cfg, cl, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}

	// In the order of the source: container runtime, machine type, time sync, etcd data.
	if !s.n.criReady() {
		return nil, status.Error(codes.FailedPrecondition, "bootstrap is not available yet")
	}

	if !cfg.Machine().Type().IsControlPlane() {
		return nil, status.Error(codes.Unimplemented, "bootstrap is only available on control plane nodes")
	}

	if !s.n.timeSynced() {
		return nil, status.Error(codes.FailedPrecondition, "time is not in sync yet")
	}

	// Bootstrap stops the etcd service whatever its state (Preparing, or Failed after its join
	// timeout) and starts it in bootstrap mode on an empty data directory.
	_ = cl.etcdOf(s.n, s.n.etcdTimeline())

	if !cl.claim(s.n) {
		return nil, status.Error(codes.AlreadyExists, "etcd data directory is not empty")
	}

	// etcd starts in bootstrap mode: empty, or restored from the snapshot EtcdRecover uploaded.
	// The call has answered by then on a real node too: a failed recovery is the etcd
	// service's failure (ServiceList), never Bootstrap's error.
	data := newEtcdData()
	seedNamespaces(data, s.n.opts.now())

	if req.GetRecoverEtcd() {
		restored, err := restoreSnapshot(s.n.takeRecoverySnapshot(), req.GetRecoverSkipHashCheck())
		if err != nil {
			s.n.log.Warn("etcd recovery failed", "err", err)
			cl.failEtcd(s.n, err, errors.Is(err, errSnapshotStatus))

			return &machineapi.BootstrapResponse{Messages: []*machineapi.Bootstrap{{}}}, nil
		}

		data = restored
	}

	if cl.startEtcd(s.n, data, s.n.opts.now()) {
		s.n.log.Warn("a second etcd cluster: another control plane already runs etcd, and this Bootstrap started a new one beside it")
	}

	s.n.log.Info("cluster bootstrapped", "recovered", req.GetRecoverEtcd())

	// etcd and the static pods take their time before /readyz answers; a recovery first
	// restores the snapshot (Latency.EtcdRestore).
	ready := s.n.opts.Latency.KubeReady
	if req.GetRecoverEtcd() {
		ready += s.n.opts.Latency.EtcdRestore
	}

	time.AfterFunc(ready, func() {
		for _, cp := range cl.controlPlanes() {
			if err := cp.startKube(); err != nil {
				s.n.log.Error("kube-apiserver stand-in did not start", "node", cp.opts.Addr, "err", err)
			}

			cp.runManifests()
		}
	})

	return &machineapi.BootstrapResponse{Messages: []*machineapi.Bootstrap{{}}}, nil
}

func (s *machineServer) Kubeconfig(_ *emptypb.Empty, stream grpc.ServerStreamingServer[common.Data]) error {
	cfg, _, err := s.admin(stream.Context())
	if err != nil {
		return err
	}

	if err := controlPlaneOnly(cfg.Machine().Type().IsControlPlane(), "kubeconfig"); err != nil {
		return err
	}

	kc, err := adminKubeconfig(cfg)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}

	var buf bytes.Buffer

	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)

	if err := tw.WriteHeader(&tar.Header{Name: "kubeconfig", Mode: 0o600, Size: int64(len(kc)), ModTime: time.Now()}); err != nil {
		return status.Error(codes.Internal, err.Error())
	}

	if _, err := tw.Write(kc); err != nil {
		return status.Error(codes.Internal, err.Error())
	}

	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return status.Error(codes.Internal, err.Error())
	}

	return stream.Send(&common.Data{Bytes: buf.Bytes()})
}

type storageServer struct {
	storageapi.UnimplementedStorageServiceServer

	n *Node
}

func (s *storageServer) Disks(ctx context.Context, _ *emptypb.Empty) (*storageapi.DisksResponse, error) {
	if s.n.Configured() {
		if err := requireAdmin(ctx); err != nil {
			return nil, err
		}
	}

	disks := make([]*storageapi.Disk, 0, len(s.n.opts.Disks))
	for i, d := range s.n.opts.Disks {
		disks = append(disks, &storageapi.Disk{
			DeviceName: d,
			Size:       480 << 30,
			Model:      "SIM-SSD",
			Serial:     fmt.Sprintf("SIM%04d", i),
			Type:       storageapi.Disk_SSD,
			SystemDisk: d == s.n.opts.SystemDisk,
		})
	}

	return &storageapi.DisksResponse{Messages: []*storageapi.Disks{{Disks: disks}}}, nil
}

// requireAdmin checks the caller has the os:admin role: in its client certificate's O= (Talos
// puts roles there), or, for a call another apid forwarded, in the metadata (callerRoles).
func requireAdmin(ctx context.Context) error {
	roles, err := callerRoles(ctx)
	if err != nil {
		return err
	}

	if !slices.Contains(roles, string(role.Admin)) {
		return status.Errorf(codes.PermissionDenied, "role %s required", role.Admin)
	}

	return nil
}

// selfSigned makes the maintenance-mode certificate: untrusted by design, as on a real node.
func selfSigned(addr string) (*tls.Certificate, error) {
	ca, err := x509.NewSelfSignedCertificateAuthority(x509.CommonName("maintenance-service"), x509.IPAddresses([]net.IP{net.ParseIP(addr)}),
		x509.NotAfter(time.Now().Add(24*time.Hour)))
	if err != nil {
		return nil, err
	}

	cert, err := tls.X509KeyPair(ca.CrtPEM, ca.KeyPEM)
	if err != nil {
		return nil, err
	}

	return &cert, nil
}

// kubeconfigFile is the subset of the kubeconfig format the stand-in writes.
type kubeconfigFile struct {
	APIVersion     string         `yaml:"apiVersion"`
	Kind           string         `yaml:"kind"`
	CurrentContext string         `yaml:"current-context"`
	Clusters       []namedCluster `yaml:"clusters"`
	Contexts       []namedContext `yaml:"contexts"`
	Users          []namedUser    `yaml:"users"`
}

type namedCluster struct {
	Name    string `yaml:"name"`
	Cluster struct {
		Server string `yaml:"server"`
		CAData string `yaml:"certificate-authority-data"`
	} `yaml:"cluster"`
}

type namedContext struct {
	Name    string `yaml:"name"`
	Context struct {
		Cluster   string `yaml:"cluster"`
		User      string `yaml:"user"`
		Namespace string `yaml:"namespace"`
	} `yaml:"context"`
}

type namedUser struct {
	Name string `yaml:"name"`
	User struct {
		CertData string `yaml:"client-certificate-data"`
		KeyData  string `yaml:"client-key-data"`
	} `yaml:"user"`
}

// adminKubeconfig mirrors Talos's admin kubeconfig: a system:masters client certificate signed
// by the Kubernetes CA, pointing at the cluster endpoint.
func adminKubeconfig(cfg config.Provider) ([]byte, error) {
	ca, err := kubeCA(cfg)
	if err != nil {
		return nil, fmt.Errorf("load Kubernetes CA: %w", err)
	}

	name, endpoint, err := kubeCluster(cfg)
	if err != nil {
		return nil, err
	}

	kp, err := x509.NewKeyPair(ca, x509.CommonName("admin"), x509.Organization("system:masters"),
		x509.NotAfter(time.Now().Add(24*time.Hour)), x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}))
	if err != nil {
		return nil, fmt.Errorf("issue admin client certificate: %w", err)
	}

	ctxName := "admin@" + name

	var (
		cl  namedCluster
		cx  namedContext
		usr namedUser
	)

	cl.Name = name
	cl.Cluster.Server = endpoint.String()
	cl.Cluster.CAData = base64.StdEncoding.EncodeToString(ca.CrtPEM)
	cx.Name = ctxName
	cx.Context.Cluster, cx.Context.User, cx.Context.Namespace = name, ctxName, "default"
	usr.Name = ctxName
	usr.User.CertData = base64.StdEncoding.EncodeToString(kp.CrtPEM)
	usr.User.KeyData = base64.StdEncoding.EncodeToString(kp.KeyPEM)

	return yaml.Marshal(&kubeconfigFile{
		APIVersion: "v1", Kind: "Config", CurrentContext: ctxName,
		Clusters: []namedCluster{cl}, Contexts: []namedContext{cx}, Users: []namedUser{usr},
	})
}
