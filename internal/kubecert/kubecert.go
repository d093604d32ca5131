// Package kubecert issues short-lived Kubernetes client certificates from a cluster's Kubernetes
// CA (the one in its Talos secrets bundle) and writes the kubeconfigs that carry them. It owns the
// lifetime rule of such a certificate: Kubernetes cannot revoke a client certificate (the API
// server checks its chain and dates, nothing else), so its NotAfter is the only control, and it
// never outlives the cluster.
//
// It knows nothing of GitHub or of where the CA is kept: the caller hands it the CA and the
// holder's public key. A certificate is public; the private key that makes it a credential is
// made by the holder (a pull request's job, an operator's machine) and never passes through here
// unless the caller made it (Operator).
package kubecert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"go.yaml.in/yaml/v4"
)

// AdminGroup is the group of the certificates issued here: cluster-admin, as Talos's own admin
// kubeconfig (machinery v1.14.1 constants.KubernetesAdminCertOrganization). A pull request's
// workflow applies whatever its manifests hold (namespaces, CRDs, RBAC), which needs it.
const AdminGroup = "system:masters"

// Backdate is how far before the signing time a certificate's NotBefore lies: a node whose clock
// is a little ahead of the signer's still accepts it.
const Backdate = time.Minute

// CA is a cluster's Kubernetes issuing CA.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     crypto.Signer
}

// ParseCA reads the CA's certificate and key (PEM, as a Talos secrets bundle holds them).
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("kubecert: the Kubernetes CA certificate is not a PEM certificate")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("kubecert: parse the Kubernetes CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("kubecert: the Kubernetes CA certificate is not a CA")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("kubecert: the Kubernetes CA key is not PEM")
	}
	key, err := parseKey(kb)
	if err != nil {
		return nil, fmt.Errorf("kubecert: parse the Kubernetes CA key: %w", err)
	}
	if !samePublic(key.Public(), cert.PublicKey) {
		return nil, errors.New("kubecert: the Kubernetes CA key does not match its certificate")
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(cb), key: key}, nil
}

func parseKey(b *pem.Block) (crypto.Signer, error) {
	var k any
	var err error
	switch b.Type {
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("a %T key cannot sign", k)
	}
	return s, nil
}

func samePublic(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// Subject names the holder of a certificate: its user name (the certificate's CN) and groups.
type Subject struct {
	User   string
	Groups []string
}

// Sign issues a client certificate for pub, valid from now - Backdate until notAfter, signed by
// the CA; it returns the certificate's DER.
func (ca *CA) Sign(pub crypto.PublicKey, sub Subject, now, notAfter time.Time) ([]byte, error) {
	if sub.User == "" {
		return nil, errors.New("kubecert: a client certificate needs a user name")
	}
	if !notAfter.After(now) {
		return nil, fmt.Errorf("kubecert: NotAfter %s is not after now (%s)", notAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("kubecert: serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: sub.User, Organization: sub.Groups},
		NotBefore:    now.Add(-Backdate),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.key)
	if err != nil {
		return nil, fmt.Errorf("kubecert: sign the client certificate of %s: %w", sub.User, err)
	}
	return der, nil
}

// NewKey makes the holder's key pair: ECDSA P-256, which every Kubernetes API server accepts.
func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("kubecert: generate the client key: %w", err)
	}
	return k, nil
}

// Lifetime is the rule of a certificate's NotAfter: asked (def when 0), refused above max or
// below a minute, and never past the cluster's expiry (then the expiry). A cluster that expired
// gets none.
type Lifetime struct {
	Default, Max time.Duration
}

// Lifetime's bounds.
const (
	// DefaultLifetime is a pull request's job's certificate unless it asks otherwise.
	DefaultLifetime = time.Hour
	// MaxJobLifetime: a GitHub-hosted job runs at most 6 hours (docs "Usage limits, billing, and
	// administration": "Each job in a workflow can run for up to 6 hours of execution time"), so
	// a job's certificate need not outlive it.
	MaxJobLifetime = 6 * time.Hour
	// MinLifetime is the shortest a request may ask: less is a typo, not a wish.
	MinLifetime = time.Minute
)

// NotAfter decides the certificate's NotAfter; clipped says it was cut to the cluster's expiry.
func (l Lifetime) NotAfter(now time.Time, asked time.Duration, clusterExpires time.Time) (notAfter time.Time, clipped bool, err error) {
	if asked == 0 {
		asked = l.Default
	}
	switch {
	case asked < MinLifetime:
		return time.Time{}, false, fmt.Errorf("a certificate lifetime of %s is too short: ask for %s or more", asked, MinLifetime)
	case l.Max > 0 && asked > l.Max:
		return time.Time{}, false, fmt.Errorf("a certificate lifetime of %s is more than the %s allowed: ask for less", asked, l.Max)
	}
	notAfter = now.Add(asked)
	if !clusterExpires.IsZero() {
		if !clusterExpires.After(now) {
			return time.Time{}, false, fmt.Errorf("the cluster expired at %s: no certificate outlives it", clusterExpires.UTC().Format(time.RFC3339))
		}
		if notAfter.After(clusterExpires) {
			return clusterExpires, true, nil
		}
	}
	return notAfter, false, nil
}

// Cluster is what a kubeconfig says of the cluster: its name, API server URL and CA.
type Cluster struct {
	Name    string
	Server  string
	CAPEM   []byte
	Context string // the context's (and user's) name; Name when empty
}

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
		Namespace string `yaml:"namespace,omitempty"`
	} `yaml:"context"`
}

type namedUser struct {
	Name string `yaml:"name"`
	User struct {
		CertData string `yaml:"client-certificate-data"`
		KeyData  string `yaml:"client-key-data"`
	} `yaml:"user"`
}

// Kubeconfig writes the kubeconfig of a client certificate (DER) and its key: one cluster, one
// user, one context, the shape Talos's admin kubeconfig has.
func Kubeconfig(c Cluster, certDER []byte, key crypto.Signer) ([]byte, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("kubecert: encode the client key: %w", err)
	}
	name := c.Context
	if name == "" {
		name = c.Name
	}
	var (
		cl  namedCluster
		cx  namedContext
		usr namedUser
	)
	cl.Name = c.Name
	cl.Cluster.Server = c.Server
	cl.Cluster.CAData = base64.StdEncoding.EncodeToString(c.CAPEM)
	cx.Name = name
	cx.Context.Cluster, cx.Context.User, cx.Context.Namespace = c.Name, name, "default"
	usr.Name = name
	usr.User.CertData = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER}))
	usr.User.KeyData = base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	out, err := yaml.Marshal(&kubeconfigFile{APIVersion: "v1", Kind: "Config", CurrentContext: name,
		Clusters: []namedCluster{cl}, Contexts: []namedContext{cx}, Users: []namedUser{usr}})
	if err != nil {
		return nil, fmt.Errorf("kubecert: write the kubeconfig: %w", err)
	}
	return out, nil
}

// ClusterOf reads the cluster part of a kubeconfig (its current context's): the admin kubeconfig
// the bot keeps names the API server and the CA every certificate of the cluster chains to.
func ClusterOf(kubeconfig []byte) (Cluster, error) {
	var doc kubeconfigFile
	if err := yaml.Unmarshal(kubeconfig, &doc); err != nil {
		return Cluster{}, fmt.Errorf("kubecert: read the kubeconfig: %w", err)
	}
	clusterName := ""
	for _, cx := range doc.Contexts {
		if cx.Name == doc.CurrentContext {
			clusterName = cx.Context.Cluster
		}
	}
	for _, cl := range doc.Clusters {
		if cl.Name != clusterName {
			continue
		}
		ca, err := base64.StdEncoding.DecodeString(cl.Cluster.CAData)
		if err != nil || cl.Cluster.Server == "" {
			return Cluster{}, fmt.Errorf("kubecert: the kubeconfig's cluster %q has no server or CA data", cl.Name)
		}
		return Cluster{Name: cl.Name, Server: cl.Cluster.Server, CAPEM: ca}, nil
	}
	return Cluster{}, fmt.Errorf("kubecert: the kubeconfig's current context %q names no cluster it holds", doc.CurrentContext)
}
