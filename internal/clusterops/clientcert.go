package clusterops

import (
	"context"
	"crypto"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// ClientCert is a short-lived client certificate issued for a ready cluster.
type ClientCert struct {
	Cluster  kubecert.Cluster // its API server and CA, from the admin kubeconfig
	DER      []byte
	NotAfter time.Time
	// Clipped says the cluster's expiry cut the asked lifetime.
	Clipped bool
}

// ClientCertificate signs a client certificate for pub with the Kubernetes CA (its Talos secrets
// bundle) of the cluster a read found (s: Run of VerbStatus, which applied Owned and RolledBack),
// as sub, for the asked lifetime under lt's rule, never past the cluster's expiry. The cluster
// must be ready (a certificate for an unfinished cluster would point at an API that does not
// answer yet). Nothing is written: a certificate is not recorded anywhere, which is why its
// lifetime is its only bound.
func (o *Ops) ClientCertificate(ctx context.Context, s *Status, pub crypto.PublicKey, sub kubecert.Subject, lt kubecert.Lifetime, asked time.Duration, now time.Time) (ClientCert, error) {
	if s == nil || s.State == nil {
		return ClientCert{}, ErrNoCluster
	}
	h, st, name := s.Header, s.State, s.Header.Cluster
	if ph := lifecycle.Phase(h.Phase); ph != lifecycle.PhaseReady {
		return ClientCert{}, fmt.Errorf("cluster %q is %s, not ready: no certificate until an up completes", name, ph)
	}
	notAfter, clipped, err := lt.NotAfter(now, asked, h.Expires)
	if err != nil {
		return ClientCert{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	raw, ok := st.Secrets[cluster.SecretTalos]
	if !ok {
		return ClientCert{}, fmt.Errorf("cluster %q has no Talos secrets bundle in its state", name)
	}
	bundle, err := talos.LoadSecrets(raw)
	if err != nil {
		return ClientCert{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	if bundle.Certs == nil || bundle.Certs.K8s == nil {
		return ClientCert{}, fmt.Errorf("cluster %q: its secrets bundle has no Kubernetes CA", name)
	}
	ca, err := kubecert.ParseCA(bundle.Certs.K8s.Crt, bundle.Certs.K8s.Key)
	if err != nil {
		return ClientCert{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	admin, ok := st.Secrets[cluster.SecretKubeconfig]
	if !ok {
		if admin, err = o.Kubeconfig(ctx, name); err != nil {
			return ClientCert{}, err
		}
	}
	cl, err := kubecert.ClusterOf(admin)
	if err != nil {
		return ClientCert{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	der, err := ca.Sign(pub, sub, now, notAfter)
	if err != nil {
		return ClientCert{}, fmt.Errorf("cluster %q: %w", name, err)
	}
	cl.CAPEM = ca.CertPEM
	return ClientCert{Cluster: cl, DER: der, NotAfter: notAfter, Clipped: clipped}, nil
}
