package talos

import (
	"cmp"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/siderolabs/crypto/x509"
	securityapi "github.com/siderolabs/talos/pkg/machinery/api/security"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/pocbot/pocbot/internal/provision/netpolicy"
)

// Default ports of the node's other services, as on a real node (machinery constants).
const (
	DefaultTrustdPort  = netpolicy.PortTrustd
	DefaultKubeletPort = netpolicy.PortKubelet
)

// joinRetry is how often a worker tries again to reach the control planes unless
// NodeOptions.JoinRetry says otherwise (Talos retries with an exponential back-off up to a
// minute; the stand-in keeps it short for tests).
const joinRetry = 100 * time.Millisecond

// startTrustd serves machinery's SecurityService on a control plane's TrustdPort, as trustd does:
// gRPC over TLS with the node's OS-CA-signed certificate, the machine token in the "token"
// metadata, and Certificate signing a worker's CSR for server use only.
func (n *Node) startTrustd(cl *clusterState) error {
	cert, err := n.apidCertificate(cl)
	if err != nil {
		return err
	}

	hostPort := net.JoinHostPort(n.opts.Addr, strconv.Itoa(n.opts.TrustdPort))

	lis, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("trustd stand-in: listen on %s: %w (set TrustdPort if the port is taken)", hostPort, err)
	}

	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}})))
	securityapi.RegisterSecurityServiceServer(srv, &trustdServer{n: n})

	n.mu.Lock()
	n.trustd, n.trustdLis = srv, lis
	n.mu.Unlock()

	go func() { _ = srv.Serve(n.guard(lis, n.opts.TrustdPort)) }()

	return nil
}

type trustdServer struct {
	securityapi.UnimplementedSecurityServiceServer

	n *Node
}

func (s *trustdServer) Certificate(ctx context.Context, req *securityapi.CertificateRequest) (*securityapi.CertificateResponse, error) {
	cfg, _, err := s.n.configured()
	if err != nil {
		return nil, err
	}

	md, _ := metadata.FromIncomingContext(ctx)
	if tok := md.Get("token"); len(tok) != 1 || tok[0] != cfg.Machine().Security().Token() {
		return nil, status.Error(codes.PermissionDenied, "invalid token")
	}

	ca := cfg.Machine().Security().IssuingCA()

	signed, err := x509.NewCertificateFromCSRBytes(ca.Crt, ca.Key, req.GetCsr(),
		x509.KeyUsage(stdx509.KeyUsageDigitalSignature),
		x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}),
		x509.NotAfter(time.Now().Add(24*time.Hour)),
		x509.OverrideSubject(func(s *pkix.Name) { s.Organization = nil }))
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "failed to sign CSR: %s", err)
	}

	return &securityapi.CertificateResponse{Ca: ca.Crt, Crt: signed.X509CertificatePEM}, nil
}

// startKubelet listens on KubeletPort with a self-signed serving certificate (the kubelet's
// default without server TLS bootstrap) and answers 401 to anything: a port to reach, no API.
func (n *Node) startKubelet() error {
	hostPort := net.JoinHostPort(n.opts.Addr, strconv.Itoa(n.opts.KubeletPort))

	lis, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("kubelet stand-in: listen on %s: %w (set KubeletPort if the port is taken)", hostPort, err)
	}

	cert, err := selfSigned(n.opts.Addr)
	if err != nil {
		_ = lis.Close()

		return err
	}

	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Unauthorized", http.StatusUnauthorized) }),
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*cert}},
		ErrorLog:          slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}

	n.mu.Lock()
	n.kubelet, n.kubeletLis = srv, lis
	n.mu.Unlock()

	go func() { _ = srv.ServeTLS(n.guard(lis, n.opts.KubeletPort), "", "") }()

	return nil
}

// join is a worker's way into the cluster, over the network and from the worker's own address:
// its kubelet reaches a control plane's Kubernetes API (6443), where Talos reads the control
// planes' endpoints, then it sends a CSR to trustd there (50001) with the machine token and gets
// its Talos API certificate (internal/app/machined/pkg/controllers/secrets/api.go and
// pkg/grpc/gen/remote.go, v1.13.9). It tries again until it is trusted or the node closes; a
// peer's network policy refusing either connection keeps the worker untrusted.
func (n *Node) join(cfg config.Provider, cl *clusterState) {
	defer close(n.joinDone)

	for {
		// The apply that configured the node answered before its reboot: the kubelet and the
		// CSR come from the booted node, once the reboot is over.
		if left := n.reboot.left(); left > 0 {
			select {
			case <-n.stop:
				return
			case <-time.After(left):
			}
		}

		err := n.tryJoin(cfg, cl)
		if err == nil {
			n.log.Info("worker trusted: Talos API certificate from trustd")

			return
		}

		n.mu.Lock()
		n.joinErr = err
		n.mu.Unlock()

		select {
		case <-n.stop:
			return
		case <-time.After(cmp.Or(n.opts.JoinRetry, joinRetry)):
		}
	}
}

func (n *Node) tryJoin(cfg config.Provider, cl *clusterState) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()

	cps := cl.controlPlanes()
	if len(cps) == 0 || !cl.isBootstrapped() {
		return errors.New("no Kubernetes API yet: the cluster is not bootstrapped (the worker cannot discover trustd)")
	}

	var errs []error

	for _, cp := range cps {
		if err := n.reachKube(ctx, cfg, cp.KubeAddr()); err != nil {
			errs = append(errs, err)

			continue
		}

		cert, err := n.requestCertificate(ctx, cfg, cp)
		if err != nil {
			errs = append(errs, err)

			continue
		}

		n.mu.Lock()
		n.apidCert, n.joinErr, n.joinedAt = cert, nil, time.Now()
		n.mu.Unlock()

		return nil
	}

	return errors.Join(errs...)
}

// dialer makes node-originated connections come from the node's own address. Such a connection
// holds a port of that address from the kernel's ephemeral range (32768-60999 on Linux, which
// holds 50000 and 50001) while it lives and, closed by the node first, for TIME_WAIT after; with
// SO_REUSEADDR on both sides a listener started there later (a parked worker's trustd, the next
// host on the address) still binds the port, as the listeners here all set it (Go does on Linux).
func (n *Node) dialer() *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(n.opts.Addr)}, Timeout: 2 * time.Second, Control: reuseAddr}
}

func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}

	return serr
}

// reachKube is the kubelet's first contact: a TLS handshake with the API server, whose certificate
// must come from the cluster's Kubernetes CA (the worker config's cluster CA certificate).
func (n *Node) reachKube(ctx context.Context, cfg config.Provider, addr string) error {
	pool := stdx509.NewCertPool()
	if ca := cfg.K8sAPIServerCAConfig(); ca != nil {
		for _, c := range ca.AcceptedCAs() {
			pool.AppendCertsFromPEM(c.Crt)
		}

		if ic := ca.IssuingCA(); ic != nil {
			pool.AppendCertsFromPEM(ic.Crt)
		}
	}

	d := tls.Dialer{NetDialer: n.dialer(), Config: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}}

	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("kubelet on %s → Kubernetes API %s: %w", n.opts.Addr, addr, err)
	}

	return c.Close()
}

// requestCertificate is trustd's client: a CSR for the node's addresses, signed by a control plane.
func (n *Node) requestCertificate(ctx context.Context, cfg config.Provider, cp *Node) (*tls.Certificate, error) {
	addr := net.JoinHostPort(cp.opts.Addr, strconv.Itoa(cp.opts.TrustdPort))

	pool := stdx509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.Machine().Security().IssuingCA().Crt)

	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return n.dialer().DialContext(ctx, "tcp", a) }),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: cp.opts.Addr})),
		grpc.WithPerRPCCredentials(tokenCreds(cfg.Machine().Security().Token())))
	if err != nil {
		return nil, fmt.Errorf("trustd client for %s: %w", addr, err)
	}
	defer conn.Close() //nolint:errcheck

	ips := []net.IP{net.ParseIP(n.opts.Addr)}
	var dns []string

	for _, san := range cfg.Machine().Security().CertSANs() {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, san)
		}
	}

	csr, identity, err := x509.NewEd25519CSRAndIdentity(x509.CommonName(n.opts.Addr), x509.IPAddresses(ips), x509.DNSNames(dns))
	if err != nil {
		return nil, err
	}

	resp, err := securityapi.NewSecurityServiceClient(conn).Certificate(ctx, &securityapi.CertificateRequest{Csr: csr.X509CertificateRequestPEM})
	if err != nil {
		return nil, fmt.Errorf("worker %s → trustd %s: %w", n.opts.Addr, addr, err)
	}

	cert, err := tls.X509KeyPair(resp.GetCrt(), identity.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate from trustd %s: %w", addr, err)
	}

	return &cert, nil
}

type tokenCreds string

func (t tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"token": string(t)}, nil
}

func (tokenCreds) RequireTransportSecurity() bool { return true }

// JoinError is why a worker is not trusted yet (nil once trusted, or on a control plane).
func (n *Node) JoinError() error {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.joinErr
}

// Trusted reports whether the node holds its Talos API certificate: a configured control plane
// always, a worker once trustd signed it.
func (n *Node) Trusted() bool {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.cfg != nil && (n.apidCert != nil || n.cfg.Machine().Type().IsControlPlane())
}
