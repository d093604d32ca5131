package talos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	retries "github.com/pocbot/pocbot/internal/retry"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Timeouts applied when the caller's context has no deadline of its own. The waits cover a node
// rebooting (docs/seed.md, Latencies: 1–3 min per Talos phase).
const (
	DefaultCallTimeout = 2 * time.Minute
	DefaultWaitTimeout = 10 * time.Minute
	attemptTimeout     = 10 * time.Second
	retryInterval      = 500 * time.Millisecond
)

type loggerKey struct{}

// WithLogger returns ctx carrying the logger the client's operations write to (slog.Default()
// when none): a context value rather than a package variable, so that two operations at once —
// or two bot runs in one process, as the soak makes — each log where their caller wants.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, loggerKey{}, l)
}

// WithDefaultLogger is WithLogger unless ctx already carries a logger (a caller's choice wins).
func WithDefaultLogger(ctx context.Context, l *slog.Logger) context.Context {
	if _, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return ctx
	}
	return WithLogger(ctx, l)
}

func logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}

	return context.WithTimeout(ctx, d)
}

type sourceKey struct{}

// WithSourceAddr makes the connections opened under ctx to the nodes' Talos and Kubernetes APIs
// leave from addr instead of the address the kernel picks: for a runner with several addresses,
// and for the emulated world, where two runs play two runners on one loopback interface.
func WithSourceAddr(ctx context.Context, addr netip.Addr) context.Context {
	return context.WithValue(ctx, sourceKey{}, addr)
}

// dialer is the dialer of a connection to a node, from ctx's source address if it has one.
func dialer(ctx context.Context) *net.Dialer {
	d := &net.Dialer{Timeout: attemptTimeout}
	if a, ok := ctx.Value(sourceKey{}).(netip.Addr); ok && a.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: a.AsSlice()}
	}
	return d
}

// Dialer is the dialer of a connection to a node under ctx, from its WithSourceAddr address if
// it has one: for a check that dials before it speaks (a status's reachability check).
func Dialer(ctx context.Context) *net.Dialer { return dialer(ctx) }

// dialOptions are the Talos API client's options for ctx's source address (none without one).
func dialOptions(ctx context.Context) []grpc.DialOption {
	if _, ok := ctx.Value(sourceKey{}).(netip.Addr); !ok {
		return nil
	}
	d := dialer(ctx)
	return []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	})}
}

type retryKey struct{}

// WithRetryInterval makes the waits under ctx poll every d instead of every 500 ms (the
// engine's poll interval: a scaled-down world wants its waits scaled down too).
func WithRetryInterval(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, retryKey{}, d)
}

func retryEvery(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(retryKey{}).(time.Duration); ok && d > 0 {
		return d
	}

	return retryInterval
}

// retry calls fn until it succeeds, fails with an error retryable refuses, or ctx ends; each
// attempt gets its own short deadline so one hung dial cannot eat the whole budget, and the
// attempts come at the fixed interval of ctx (retryEvery): a node is waited for, not backed off.
func retry(ctx context.Context, what string, retryable func(error) bool, fn func(context.Context) error) error {
	every := retryEvery(ctx)
	p := retries.Policy{Wait: every, MaxWait: every, AttemptTimeout: attemptTimeout}
	var last error
	return p.Do(ctx, what, func(actx context.Context, attempt int) retries.Outcome {
		err := fn(actx)
		if err == nil || !retryable(err) {
			return retries.Outcome{Err: err}
		}
		// An attempt cut short by the caller's deadline says nothing about the node: keep the
		// node's previous answer (e.g. "bootstrap is not available yet") for the report.
		if last == nil || ctx.Err() == nil {
			last = err
		}
		logger(ctx).Debug("Talos API not ready, retrying", "op", what, "attempt", attempt, "err", err)
		return retries.Outcome{Err: last, Retry: true}
	})
}

// transient is true for the errors of a node that is not listening or not ready yet.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	default:
		return errors.Is(err, context.DeadlineExceeded)
	}
}

func always(error) bool { return true }

// bootstrapRetryable retries every answer but the two final ones: InvalidArgument (the node can
// never bootstrap, e.g. no etcd CA in its config) and AlreadyExists (done before). A real node
// refuses with FailedPrecondition until its container runtime runs and its clock is synchronized,
// and a node still booting answers Unavailable; the caller's deadline bounds the wait.
func bootstrapRetryable(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.AlreadyExists:
		return false
	default:
		return true
	}
}

// insecureClient is a client for a node in maintenance mode: the node has a self-signed
// certificate and no way to know us yet; what protects the config is that only the runner can
// reach port 50000 during setup. asked turns true when the node requests a client certificate
// in the handshake, which a node in maintenance mode never does and a configured node always does.
func insecureClient(ctx context.Context, addr string) (c *nodeAPI, asked *atomic.Bool, err error) {
	asked = new(atomic.Bool)
	tlsConfig := &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			asked.Store(true)

			return &tls.Certificate{}, nil // none: the handshake fails, as it should
		},
	}

	c, err = dialNode(addr, tlsConfig, "", dialOptions(ctx)...)
	if err != nil {
		return nil, nil, fmt.Errorf("talos client for %s (maintenance mode): %w", addr, err)
	}

	return c, asked, nil
}

// Route is how the bot reaches a node's Talos API: it dials Endpoint (host:port), and when Node
// is set that apid forwards every call to the node at Node, from its own address. apid's router
// forwards a call carrying the "node" gRPC metadata to that node's apid and serves one without it
// itself (talos internal/app/apid/pkg/director/director.go, Director and singleDirector, @v1.13.9;
// withNode sets it, as machinery's client.WithNode does); the forwarded call carries the caller's roles in metadata,
// which the target trusts from an apid's os:impersonator certificate
// (pkg/grpc/middleware/authz/injector.go @v1.13.9). The bot reaches the worker this way, through a
// control plane: the worker's Talos firewall admits the nodes and the admin CIDRs, never a runner.
type Route struct {
	Endpoint string // host:port dialled
	Node     string // the node's address when the endpoint forwards; "" for the endpoint itself
}

// Direct is the route to the node at addr (host:port) itself.
func Direct(addr string) Route { return Route{Endpoint: addr} }

// Through is the route to the node at nodeIP through the apid at endpoint (host:port).
func Through(endpoint, nodeIP string) Route { return Route{Endpoint: endpoint, Node: nodeIP} }

func (r Route) String() string {
	if r.Node == "" {
		return r.Endpoint
	}
	return r.Node + " (through " + r.Endpoint + ")"
}

// dialOptions are the route's: every call carries the "node" metadata when it is forwarded.
func (r Route) dialOptions() []grpc.DialOption {
	if r.Node == "" {
		return nil
	}
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(withNode(ctx, r.Node), method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(withNode(ctx, r.Node), desc, cc, method, opts...)
	}
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(unary), grpc.WithChainStreamInterceptor(stream)}
}

func trustedClient(ctx context.Context, r Route, talosconfig []byte) (*nodeAPI, error) {
	cfg, err := clientconfig.FromBytes(talosconfig)
	if err != nil {
		return nil, fmt.Errorf("parse talosconfig: %w", err)
	}

	tlsConfig, cluster, err := talosconfigTLS(cfg)
	if err != nil {
		return nil, err
	}

	c, err := dialNode(r.Endpoint, tlsConfig, cluster, append(dialOptions(ctx), r.dialOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("talos client for %s: %w", r, err)
	}

	return c, nil
}

// withTrusted runs fn with a mutual-TLS client made for this attempt only: a gRPC channel whose
// handshake failed stays in backoff (up to minutes), which would hide a node that just became ready.
func withTrusted(ctx context.Context, addr string, talosconfig []byte, fn func(*nodeAPI) error) error {
	return withTrustedAt(ctx, Direct(addr), talosconfig, fn)
}

// retryTrusted calls fn on a mutual-TLS client of the node on route r, attempt after attempt
// (retryable says which failures are worth another), until timeout unless ctx ends sooner; what
// names the call in the retry's error. The talosconfig is checked first: a bad one is no reason
// to retry.
func retryTrusted(ctx context.Context, r Route, talosconfig []byte, timeout time.Duration, what string, retryable func(error) bool, fn func(context.Context, *nodeAPI) error) error {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return fmt.Errorf("talosconfig for %s does not parse: %w", r, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, timeout)
	defer cancel()

	return retry(ctx, what, retryable, func(actx context.Context) error {
		return withTrustedAt(actx, r, talosconfig, func(c *nodeAPI) error { return fn(actx, c) })
	})
}

// withTrustedAt is withTrusted on a route.
func withTrustedAt(ctx context.Context, r Route, talosconfig []byte, fn func(*nodeAPI) error) error {
	c, err := trustedClient(ctx, r, talosconfig)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck

	return fn(c)
}

// ErrConfigured is returned by ApplyInsecure when the node is no longer in maintenance mode: it
// refuses a client without certificate, as a configured Talos node does.
var ErrConfigured = errors.New("node is configured: its Talos API requires a client certificate")

// ApplyInsecure sends cfg to a node in maintenance mode (insecure TLS). It first lists the node's
// disks (block.Disk resources; retrying while it boots) and refuses to apply when the config's
// install target (.machine.install.disk, or the 1.14 UnattendedInstallConfig selector) matches
// none of them. It returns the disks seen so the caller can record them.
func ApplyInsecure(ctx context.Context, addr string, cfg []byte) ([]Disk, error) {
	return applyInsecure(ctx, addr, cfg, false)
}

// ApplyInsecureAfterReset is ApplyInsecure on a node that was just reset: it replied to the
// Reset at once, and until its reset sequence (pods stopped, disks wiped) reboots it, its API
// still answers as configured — apid is not among the services the sequence stops (talos
// v1.14.0-rc.1 v1alpha1_sequencer.go Reset, v1alpha1_sequencer_tasks.go StopServicesEphemeral).
// A request for a client certificate is therefore waited out, like a node still booting, until
// ctx's deadline (DefaultWaitTimeout without one).
func ApplyInsecureAfterReset(ctx context.Context, addr string, cfg []byte) ([]Disk, error) {
	return applyInsecure(ctx, addr, cfg, true)
}

func applyInsecure(ctx context.Context, addr string, cfg []byte, afterReset bool) ([]Disk, error) {
	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	// After a reset, only the probe waits out a node still configured: once it was seen in
	// maintenance mode, a request for a certificate means it took a config (ours, its answer
	// lost, or another's) and waiting would not change that.
	probeRetryable := maintenanceRetryable
	if afterReset {
		probeRetryable = resettingRetryable
	}

	provider, err := configloader.NewFromBytes(cfg)
	if err != nil {
		return nil, fmt.Errorf("apply config to %s: config does not parse: %w", addr, err)
	}

	var disks []Disk

	err = retry(ctx, "probe disks on "+addr, probeRetryable, func(actx context.Context) error {
		c, asked, err := insecureClient(actx, addr)
		if err != nil {
			return err
		}
		defer c.Close() //nolint:errcheck

		disks, err = listDisks(actx, c)
		if err != nil && asked.Load() {
			return ErrConfigured
		}

		return err
	})

	switch {
	case errors.Is(err, ErrConfigured) && afterReset:
		return nil, fmt.Errorf("apply config to %s after its reset: %w: still configured when the wait ended (%w), the reset never rebooted it into maintenance mode", addr, ErrConfigured, ctx.Err())
	case errors.Is(err, ErrConfigured):
		return nil, fmt.Errorf("apply config to %s: %w (it left maintenance mode; use the talosconfig)", addr, ErrConfigured)
	case err != nil:
		return nil, fmt.Errorf("apply config to %s: maintenance-mode probe (disks) failed: %w; is the node booted into Talos maintenance mode and port %d reachable?", addr, err, netpolicy.PortApid)
	}

	logger(ctx).Info("node in maintenance mode", "node", addr, "disks", diskList(disks))

	target, err := InstallDisk(provider, disks)
	if err != nil {
		return disks, fmt.Errorf("apply config to %s: %w; rerun the rescue step's disk detection", addr, err)
	}

	err = retry(ctx, "apply config on "+addr, maintenanceRetryable, func(actx context.Context) error {
		c, asked, err := insecureClient(actx, addr)
		if err != nil {
			return err
		}
		defer c.Close() //nolint:errcheck

		_, err = c.ApplyConfiguration(actx, &machineapi.ApplyConfigurationRequest{Data: cfg, Mode: machineapi.ApplyConfigurationRequest_AUTO})
		if err != nil && asked.Load() {
			return ErrConfigured
		}

		return err
	})
	if err != nil {
		return disks, fmt.Errorf("apply config to %s in maintenance mode: %w", addr, err)
	}

	logger(ctx).Info("config applied in maintenance mode", "node", addr, "install_disk", target)

	return disks, nil
}

// maintenanceRetryable retries a node that is not up yet, but not one that asks for a client
// certificate: that node left maintenance mode and will never take an insecure call again.
func maintenanceRetryable(err error) bool { return transient(err) && !errors.Is(err, ErrConfigured) }

// resettingRetryable also retries a node that still asks for a client certificate: reset, it
// has not rebooted into maintenance mode yet.
func resettingRetryable(err error) bool { return transient(err) || errors.Is(err, ErrConfigured) }

// Configured tells whether the node on route r already answers a trusted (mutual TLS) call with
// the talosconfig's certificate: one attempt, no retry. A rerun uses it to skip the insecure apply.
func Configured(ctx context.Context, r Route, talosconfig []byte) bool {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return false
	}

	actx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()

	err := withTrustedAt(actx, r, talosconfig, func(c *nodeAPI) error {
		_, err := c.Version(actx)

		return err
	})

	return err == nil
}

// Configure gives the node at addr its first config and waits until it trusts the cluster: a
// node that already answers a trusted call on route trusted is left as it is (a rerun after the
// apply); one that asks for a client certificate is waited for; otherwise the config is applied
// in maintenance mode, directly (no config yet, hence no firewall). The trusted calls take route
// trusted: once configured, the worker's firewall admits only the nodes and the admin CIDRs, so
// the bot asks a control plane to forward them (Through). It returns the disks seen in maintenance
// mode (none when the apply was skipped).
func Configure(ctx context.Context, addr string, trusted Route, cfg, talosconfig []byte) ([]Disk, error) {
	if Configured(ctx, trusted, talosconfig) {
		logger(ctx).Info("node already answers over mutual TLS: not applying its config again", "node", trusted.String())

		return nil, nil
	}

	disks, err := applyUnlessTrusted(ctx, addr, trusted, cfg, talosconfig)
	if err != nil && !errors.Is(err, ErrConfigured) {
		return disks, err
	}

	if err := WaitTrustedAt(ctx, trusted, talosconfig); err != nil {
		return disks, fmt.Errorf("node %s does not trust the cluster CA after its config: %w", addr, err)
	}

	return disks, nil
}

// applyUnlessTrusted is ApplyInsecure, given up as soon as the node answers on route trusted:
// a node configured already (a rerun after an apply whose answer was lost, or a control plane
// that was not up for the first check) whose firewall drops the runner looks like a node still
// booting to the insecure probe, which would wait for it in vain. Nil disks: the node was found
// configured.
// applyAnswerGrace is how long applyUnlessTrusted waits for the insecure apply's answer once the
// node answers over mutual TLS.
const applyAnswerGrace = 5 * time.Second

func applyUnlessTrusted(ctx context.Context, addr string, trusted Route, cfg, talosconfig []byte) ([]Disk, error) {
	if trusted == Direct(addr) {
		return ApplyInsecure(ctx, addr, cfg) // a configured node asks for a certificate: ErrConfigured
	}

	actx, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		disks []Disk
		err   error
	}

	done := make(chan result, 1)

	go func() {
		d, err := ApplyInsecure(actx, addr, cfg)
		done <- result{d, err}
	}()

	tick := time.NewTicker(retryEvery(ctx))
	defer tick.Stop()

	for {
		select {
		case res := <-done:
			return res.disks, res.err
		case <-tick.C:
			if Configured(ctx, trusted, talosconfig) {
				// The node may be trusted because this very apply took effect while its answer
				// is still on the way: give that answer a moment, so that its disks are not
				// lost, before giving up an apply that a configured node's firewall hangs.
				select {
				case res := <-done:
					if res.err == nil {
						return res.disks, nil
					}
				case <-time.After(applyAnswerGrace):
					cancel()
					<-done
				}
				logger(ctx).Info("node answers over mutual TLS: configured already, the insecure apply is given up", "node", trusted.String())

				return nil, nil
			}
		}
	}
}

// WaitTrusted waits until the node at addr answers over mutual TLS with the talosconfig's
// certificate, i.e. it left maintenance mode and trusts the cluster's CA (and we trust its).
func WaitTrusted(ctx context.Context, addr string, talosconfig []byte) error {
	return WaitTrustedAt(ctx, Direct(addr), talosconfig)
}

// WaitTrustedAt is WaitTrusted on a route (a worker through a control plane: the wait also
// covers the control plane coming up).
func WaitTrustedAt(ctx context.Context, r Route, talosconfig []byte) error {
	err := retryTrusted(ctx, r, talosconfig, DefaultWaitTimeout, "wait for "+r.String()+" to trust the cluster CA", always, func(actx context.Context, c *nodeAPI) error {
		_, err := c.Version(actx)

		return err
	})
	if err != nil {
		return fmt.Errorf("node %s never answered with the cluster's certificates: %w", r, err)
	}

	logger(ctx).Info("node trusts the cluster CA", "node", r.String())

	return nil
}

// Bootstrap starts etcd on the node at addr (the first control plane). A cluster already
// bootstrapped (AlreadyExists) counts as done, so reruns are safe.
func Bootstrap(ctx context.Context, addr string, talosconfig []byte) error {
	err := retryTrusted(ctx, Direct(addr), talosconfig, DefaultWaitTimeout, "bootstrap "+addr, bootstrapRetryable, func(actx context.Context, c *nodeAPI) error {
		return c.Bootstrap(actx, &machineapi.BootstrapRequest{})
	})

	switch {
	case err == nil:
		logger(ctx).Info("etcd bootstrapped", "node", addr)

		return nil
	case status.Code(err) == codes.AlreadyExists:
		logger(ctx).Info("etcd already bootstrapped, nothing to do", "node", addr)

		return nil
	default:
		return fmt.Errorf("bootstrap etcd on %s: %w", addr, err)
	}
}

// Kubeconfig fetches the admin kubeconfig from a control plane.
func Kubeconfig(ctx context.Context, addr string, talosconfig []byte) ([]byte, error) {
	var kc []byte

	err := retryTrusted(ctx, Direct(addr), talosconfig, DefaultCallTimeout, "kubeconfig from "+addr, transient, func(actx context.Context, c *nodeAPI) error {
		var err error

		kc, err = c.Kubeconfig(actx)

		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fetch kubeconfig from %s: %w", addr, err)
	}

	if len(kc) == 0 {
		return nil, fmt.Errorf("fetch kubeconfig from %s: node returned an empty kubeconfig", addr)
	}

	return kc, nil
}

// Readyz polls the Kubernetes API's /readyz with the kubeconfig's CA and client certificate
// until it answers 200, or ctx ends.
func Readyz(ctx context.Context, kubeconfig []byte) error {
	return ReadyzVia(ctx, kubeconfig, "")
}

// ReadyzVia is Readyz dialling dialAddr (host:port) instead of the server's own address, while
// still verifying the certificate against the server's name: for a DNS name not yet resolvable.
func ReadyzVia(ctx context.Context, kubeconfig []byte, dialAddr string) error {
	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	kc, err := parseKubeconfig(kubeconfig)
	if err != nil {
		return err
	}

	d := dialer(ctx)
	transport := &http.Transport{
		TLSClientConfig:     kc.tls,
		TLSHandshakeTimeout: attemptTimeout,
		DisableKeepAlives:   true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dialAddr != "" {
				addr = dialAddr
			}

			return d.DialContext(ctx, network, addr)
		},
	}
	defer transport.CloseIdleConnections()

	httpc := &http.Client{Transport: transport, Timeout: attemptTimeout}
	target := strings.TrimRight(kc.server, "/") + "/readyz"

	err = retry(ctx, "kubernetes readyz at "+kc.server, always, func(actx context.Context) error {
		req, err := http.NewRequestWithContext(actx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}

		resp, err := httpc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close() //nolint:errcheck

		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096)) //nolint:errcheck
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}

		return nil
	})
	if err != nil {
		return fmt.Errorf("kubernetes API %s not ready: %w", kc.server, err)
	}

	logger(ctx).Info("kubernetes API ready", "server", kc.server)

	return nil
}

type parsedKubeconfig struct {
	server string
	tls    *tls.Config
}

// kubeconfigDoc is the subset of the kubeconfig format Readyz needs.
type kubeconfigDoc struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server string `yaml:"server"`
			CAData string `yaml:"certificate-authority-data"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			CertData string `yaml:"client-certificate-data"`
			KeyData  string `yaml:"client-key-data"`
		} `yaml:"user"`
	} `yaml:"users"`
}

func parseKubeconfig(b []byte) (*parsedKubeconfig, error) {
	var doc kubeconfigDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse kubeconfig: %w", err)
	}

	clusterName, userName := "", ""

	for _, c := range doc.Contexts {
		if c.Name == doc.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}

	if clusterName == "" {
		return nil, fmt.Errorf("parse kubeconfig: current context %q not found", doc.CurrentContext)
	}

	out := &parsedKubeconfig{tls: &tls.Config{MinVersion: tls.VersionTLS12}}

	for _, c := range doc.Clusters {
		if c.Name != clusterName {
			continue
		}

		u, err := url.Parse(c.Cluster.Server)
		if err != nil || u.Scheme != "https" {
			return nil, fmt.Errorf("parse kubeconfig: server %q is not an https URL", c.Cluster.Server)
		}

		ca, err := base64.StdEncoding.DecodeString(c.Cluster.CAData)
		if err != nil {
			return nil, fmt.Errorf("parse kubeconfig: cluster CA: %w", err)
		}

		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("parse kubeconfig: cluster CA holds no PEM certificate")
		}

		out.server, out.tls.RootCAs, out.tls.ServerName = c.Cluster.Server, pool, u.Hostname()
	}

	for _, u := range doc.Users {
		if u.Name != userName {
			continue
		}

		crt, err1 := base64.StdEncoding.DecodeString(u.User.CertData)
		key, err2 := base64.StdEncoding.DecodeString(u.User.KeyData)

		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("parse kubeconfig: user credentials: %w", err)
		}

		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("parse kubeconfig: user key pair: %w", err)
		}

		out.tls.Certificates = []tls.Certificate{pair}
	}

	if out.server == "" || len(out.tls.Certificates) == 0 {
		return nil, fmt.Errorf("parse kubeconfig: context %q needs a cluster with a server and a user with client certificate data", doc.CurrentContext)
	}

	return out, nil
}
