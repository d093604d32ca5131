package talos

import (
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// startKube serves the Kubernetes API's health endpoints on Addr:KubePort with a certificate from
// the cluster's Kubernetes CA, requiring a client certificate from that CA (the kubeconfig's).
func (n *Node) startKube() error {
	n.mu.Lock()
	defer n.mu.Unlock()

	// Closed, or reset since the Bootstrap that scheduled this start: nothing to serve.
	if n.kube != nil || n.closed || n.cfg == nil {
		return nil
	}

	cfg := n.cfg

	ca, err := kubeCA(cfg)
	if err != nil {
		return fmt.Errorf("load Kubernetes CA on %s: %w", n.opts.Addr, err)
	}

	_, endpoint, err := kubeCluster(cfg)
	if err != nil {
		return fmt.Errorf("kube-apiserver stand-in on %s: %w", n.opts.Addr, err)
	}

	ips := []net.IP{net.ParseIP(n.opts.Addr)}
	dns := []string{"kubernetes", "kubernetes.default", "localhost"}

	sans := []string{endpoint.Hostname()}
	if api := cfg.K8sAPIServerConfig(); api != nil {
		sans = append(sans, api.CertSANs()...)
	}

	for _, san := range sans {
		if ip := net.ParseIP(san); ip != nil {
			ips = append(ips, ip)
		} else if san != "" {
			dns = append(dns, san)
		}
	}

	kp, err := x509.NewKeyPair(ca, x509.CommonName("kube-apiserver"), x509.IPAddresses(ips), x509.DNSNames(dns),
		x509.NotAfter(time.Now().Add(24*time.Hour)), x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageServerAuth}))
	if err != nil {
		return fmt.Errorf("issue kube-apiserver certificate on %s: %w", n.opts.Addr, err)
	}

	pool := stdx509.NewCertPool()
	pool.AddCert(ca.Crt)

	hostPort := net.JoinHostPort(n.opts.Addr, fmt.Sprint(n.opts.KubePort))

	lis, err := net.Listen("tcp", hostPort)
	if err != nil {
		return fmt.Errorf("kube-apiserver stand-in: listen on %s: %w (set KubePort if the port is taken)", hostPort, err)
	}

	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("GET /readyz", ok)
	mux.HandleFunc("GET /livez", ok)
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		netJSON(w, map[string]string{"gitVersion": kubeletVersion(cfg)})
	})
	n.serveNetwork(mux)

	n.registerKubeAPI(mux, n.cluster)

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{*kp.Certificate},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
		// A client without a certificate is refused by the handshake, as the real apiserver
		// refuses it; that is the node's debug log, not the process's stderr.
		ErrorLog: slog.NewLogLogger(n.log.Handler(), slog.LevelDebug),
	}

	go func() {
		if err := srv.ServeTLS(n.guard(lis, n.opts.KubePort), "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			n.log.Error("kube-apiserver stand-in stopped", "err", err)
		}
	}()

	n.kube, n.kubeLis, n.kubeSince = srv, lis, time.Now()
	n.log.Info("kube-apiserver stand-in serving", "addr", hostPort)

	return nil
}

func (n *Node) stopKube() {
	n.mu.Lock()
	srv, lis := n.kube, n.kubeLis
	n.kube, n.kubeLis = nil, nil
	n.mu.Unlock()

	if lis != nil {
		_ = lis.Close() // at once: a node started again on this address needs the port
	}

	if srv == nil {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
	}
}

// kubeCA is the Kubernetes issuing CA of a control-plane config. machinery's K8s* accessors read
// it from the v1alpha1 cluster section (1.13 contract) or from the KubeAPIServerCAConfig document
// (1.14 multi-document form), so the stand-in serves both.
func kubeCA(cfg config.Provider) (*x509.CertificateAuthority, error) {
	caCfg := cfg.K8sAPIServerCAConfig()
	if caCfg == nil || caCfg.IssuingCA() == nil || len(caCfg.IssuingCA().Crt) == 0 {
		return nil, errors.New("config carries no Kubernetes issuing CA (a control-plane config is needed)")
	}

	return x509.NewCertificateAuthorityFromCertificateAndKey(caCfg.IssuingCA())
}

// kubeCluster is the cluster name and Kubernetes API endpoint of a config, from either form.
func kubeCluster(cfg config.Provider) (string, *url.URL, error) {
	cl := cfg.K8sClusterConfig()
	if cl == nil || cl.ClusterEndpoint() == nil {
		return "", nil, errors.New("config carries no Kubernetes cluster name and endpoint")
	}

	return cl.ClusterName(), cl.ClusterEndpoint(), nil
}
