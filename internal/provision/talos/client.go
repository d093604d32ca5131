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
	"net/url"
	"slices"
	"strings"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc/codes"
)

// Timeouts applied when the caller's context has no deadline of its own. The waits cover a node
// rebooting (SPEC §9 estimates 1–3 min per Talos phase).
const (
	DefaultCallTimeout = 2 * time.Minute
	DefaultWaitTimeout = 10 * time.Minute
	attemptTimeout     = 10 * time.Second
	retryInterval      = 500 * time.Millisecond
)

// APIPort is the Talos API port; an address without a port gets it.
const APIPort = 50000

// Logger is used by the client operations; replace it to route their logs.
var Logger = slog.Default()

func withDefaultDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}

	return context.WithTimeout(ctx, d)
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
// attempt gets its own short deadline so one hung dial cannot eat the whole budget.
func retry(ctx context.Context, what string, retryable func(error) bool, fn func(context.Context) error) error {
	var last error

	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		cancel()

		if err == nil {
			return nil
		}

		last = err
		if !retryable(err) {
			return err
		}

		Logger.Debug("Talos API not ready, retrying", "op", what, "attempt", attempt, "err", err)

		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: gave up after %d attempts (%w); last error: %w", what, attempt, ctx.Err(), last)
		case <-time.After(retryEvery(ctx)):
		}
	}
}

// transient is true for the errors of a node that is not listening or not ready yet.
func transient(err error) bool {
	switch client.StatusCode(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	default:
		return errors.Is(err, context.DeadlineExceeded)
	}
}

func always(error) bool { return true }

func insecureClient(ctx context.Context, addr string) (*client.Client, error) {
	// Maintenance mode: the node has a self-signed certificate and no way to know us yet; what
	// protects the config is that only the runner can reach port 50000 during setup.
	c, err := client.New(ctx, client.WithEndpoints(addr), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		return nil, fmt.Errorf("talos client for %s (maintenance mode): %w", addr, err)
	}

	return c, nil
}

func trustedClient(ctx context.Context, addr string, talosconfig []byte) (*client.Client, error) {
	cfg, err := clientconfig.FromBytes(talosconfig)
	if err != nil {
		return nil, fmt.Errorf("parse talosconfig: %w", err)
	}

	c, err := client.New(ctx, client.WithConfig(cfg), client.WithEndpoints(addr))
	if err != nil {
		return nil, fmt.Errorf("talos client for %s: %w", addr, err)
	}

	return c, nil
}

// withTrusted runs fn with a mutual-TLS client made for this attempt only: a gRPC channel whose
// handshake failed stays in backoff (up to minutes), which would hide a node that just became ready.
func withTrusted(ctx context.Context, addr string, talosconfig []byte, fn func(*client.Client) error) error {
	c, err := trustedClient(ctx, addr, talosconfig)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck

	return fn(c)
}

// ApplyInsecure sends cfg to a node in maintenance mode (insecure TLS). It first probes the node
// with Disks (retrying while it boots) and refuses to apply when the config's install disk is not
// among them. It returns the disks seen so the caller can record them.
func ApplyInsecure(ctx context.Context, addr string, cfg []byte) ([]string, error) {
	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	provider, err := configloader.NewFromBytes(cfg)
	if err != nil {
		return nil, fmt.Errorf("apply config to %s: config does not parse: %w", addr, err)
	}

	var disks []string

	err = retry(ctx, "probe disks on "+addr, transient, func(actx context.Context) error {
		c, err := insecureClient(actx, addr)
		if err != nil {
			return err
		}
		defer c.Close() //nolint:errcheck

		resp, err := c.Disks(actx)
		if err != nil {
			return err
		}

		disks = disks[:0]

		for _, m := range resp.GetMessages() {
			for _, d := range m.GetDisks() {
				disks = append(disks, d.GetDeviceName())
			}
		}

		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply config to %s: maintenance-mode probe (Disks) failed: %w; is the node booted into Talos maintenance mode and port %d reachable?", addr, err, APIPort)
	}

	Logger.Info("node in maintenance mode", "node", addr, "disks", disks)

	if disk := provider.Machine().Install().Disk(); disk != "" && !slices.Contains(disks, disk) {
		return disks, fmt.Errorf("apply config to %s: install disk %s is not on the node (it has %v); rerun the rescue step's disk detection", addr, disk, disks)
	}

	err = retry(ctx, "apply config on "+addr, transient, func(actx context.Context) error {
		c, err := insecureClient(actx, addr)
		if err != nil {
			return err
		}
		defer c.Close() //nolint:errcheck

		_, err = c.ApplyConfiguration(actx, &machineapi.ApplyConfigurationRequest{Data: cfg, Mode: machineapi.ApplyConfigurationRequest_AUTO})

		return err
	})
	if err != nil {
		return disks, fmt.Errorf("apply config to %s in maintenance mode: %w", addr, err)
	}

	Logger.Info("config applied in maintenance mode", "node", addr)

	return disks, nil
}

// WaitTrusted waits until the node at addr answers over mutual TLS with the talosconfig's
// certificate, i.e. it left maintenance mode and trusts the cluster's CA (and we trust its).
func WaitTrusted(ctx context.Context, addr string, talosconfig []byte) error {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return fmt.Errorf("talosconfig for %s does not parse: %w", addr, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	err := retry(ctx, "wait for "+addr+" to trust the cluster CA", always, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *client.Client) error {
			_, err := c.Version(actx)

			return err
		})
	})
	if err != nil {
		return fmt.Errorf("node %s never answered with the cluster's certificates: %w", addr, err)
	}

	Logger.Info("node trusts the cluster CA", "node", addr)

	return nil
}

// Bootstrap starts etcd on the node at addr (the first control plane). A cluster already
// bootstrapped (AlreadyExists) counts as done, so reruns are safe.
func Bootstrap(ctx context.Context, addr string, talosconfig []byte) error {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return fmt.Errorf("talosconfig for %s does not parse: %w", addr, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	err := retry(ctx, "bootstrap "+addr, transient, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *client.Client) error {
			return c.Bootstrap(actx, &machineapi.BootstrapRequest{})
		})
	})

	switch {
	case err == nil:
		Logger.Info("etcd bootstrapped", "node", addr)

		return nil
	case client.StatusCode(err) == codes.AlreadyExists:
		Logger.Info("etcd already bootstrapped, nothing to do", "node", addr)

		return nil
	default:
		return fmt.Errorf("bootstrap etcd on %s: %w", addr, err)
	}
}

// Kubeconfig fetches the admin kubeconfig from a control plane.
func Kubeconfig(ctx context.Context, addr string, talosconfig []byte) ([]byte, error) {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return nil, fmt.Errorf("talosconfig for %s does not parse: %w", addr, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, DefaultCallTimeout)
	defer cancel()

	var kc []byte

	err := retry(ctx, "kubeconfig from "+addr, transient, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *client.Client) error {
			var err error

			kc, err = c.Kubeconfig(actx)

			return err
		})
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

	dialer := &net.Dialer{Timeout: attemptTimeout}
	transport := &http.Transport{
		TLSClientConfig:     kc.tls,
		TLSHandshakeTimeout: attemptTimeout,
		DisableKeepAlives:   true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dialAddr != "" {
				addr = dialAddr
			}

			return dialer.DialContext(ctx, network, addr)
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

	Logger.Info("kubernetes API ready", "server", kc.server)

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
