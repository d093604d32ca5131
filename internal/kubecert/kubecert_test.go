package kubecert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"
)

// testCA makes a CA certificate and key in PEM, valid for a day.
func testCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func TestLifetime(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	l := Lifetime{Default: DefaultLifetime, Max: MaxJobLifetime}
	for _, tc := range []struct {
		name     string
		asked    time.Duration
		expires  time.Time
		want     time.Time
		clipped  bool
		errorHas string
	}{
		{name: "default", want: now.Add(time.Hour), expires: now.Add(8 * time.Hour)},
		{name: "asked", asked: 30 * time.Minute, expires: now.Add(8 * time.Hour), want: now.Add(30 * time.Minute)},
		{name: "the cluster's expiry cuts it", asked: 5 * time.Hour, expires: now.Add(2 * time.Hour), want: now.Add(2 * time.Hour), clipped: true},
		{name: "no expiry known", asked: 2 * time.Hour, want: now.Add(2 * time.Hour)},
		{name: "over the maximum", asked: 7 * time.Hour, expires: now.Add(48 * time.Hour), errorHas: "more than the 6h0m0s allowed"},
		{name: "too short", asked: 10 * time.Second, errorHas: "too short"},
		{name: "expired cluster", asked: time.Hour, expires: now.Add(-time.Minute), errorHas: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, clipped, err := l.NotAfter(now, tc.asked, tc.expires)
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err = %v, want one saying %q", err, tc.errorHas)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) || clipped != tc.clipped {
				t.Fatalf("NotAfter = %s, clipped %v, %v; want %s, %v", got, clipped, err, tc.want, tc.clipped)
			}
		})
	}
	// No maximum (an operator's certificate): only the cluster's expiry bounds it.
	if got, _, err := (Lifetime{Default: time.Hour}).NotAfter(now, 72*time.Hour, now.Add(100*time.Hour)); err != nil || !got.Equal(now.Add(72*time.Hour)) {
		t.Errorf("without a maximum: %s, %v", got, err)
	}
}

// A certificate signed here chains to the CA, names its holder and groups, is a client
// certificate, and is refused by a TLS server once past NotAfter.
func TestSignAndKubeconfig(t *testing.T) {
	certPEM, keyPEM := testCA(t)
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	der, err := ca.Sign(&key.PublicKey, Subject{User: "pocbot:pr-7:run-99.1", Groups: []string{AdminGroup}}, now, now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate does not chain to the CA as a client certificate: %v", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(time.Hour + time.Second), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("the certificate verifies after its NotAfter")
	}
	if cert.Subject.CommonName != "pocbot:pr-7:run-99.1" || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != AdminGroup {
		t.Errorf("subject = %v", cert.Subject)
	}
	if !cert.NotBefore.Equal(now.Add(-Backdate).Truncate(time.Second)) {
		t.Errorf("NotBefore = %s, want %s", cert.NotBefore, now.Add(-Backdate))
	}

	kc, err := Kubeconfig(Cluster{Name: "acme-shop-7", Server: "https://192.0.2.1:6443", CAPEM: ca.CertPEM, Context: "pr-7"}, der, key)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := ClusterOf(kc)
	if err != nil || cl.Server != "https://192.0.2.1:6443" || cl.Name != "acme-shop-7" || string(cl.CAPEM) != string(ca.CertPEM) {
		t.Fatalf("ClusterOf = %+v, %v", cl, err)
	}
	var doc kubeconfigFile
	if err := yaml.Unmarshal(kc, &doc); err != nil || len(doc.Users) != 1 {
		t.Fatalf("kubeconfig: %v\n%s", err, kc)
	}
	c, err1 := base64.StdEncoding.DecodeString(doc.Users[0].User.CertData)
	k, err2 := base64.StdEncoding.DecodeString(doc.Users[0].User.KeyData)
	if _, err := tls.X509KeyPair(c, k); err != nil || err1 != nil || err2 != nil {
		t.Errorf("the kubeconfig's user is no usable key pair: %v %v %v", err, err1, err2)
	}
}

func TestParseCARefusesAMismatchedKey(t *testing.T) {
	certPEM, _ := testCA(t)
	_, otherKey := testCA(t)
	if _, err := ParseCA(certPEM, otherKey); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("ParseCA with another CA's key: %v", err)
	}
	if _, err := ParseCA([]byte("not pem"), otherKey); err == nil {
		t.Error("ParseCA accepted a certificate that is not PEM")
	}
}

func TestSignNeverOutlivesTheCA(t *testing.T) {
	certPEM, keyPEM := testCA(t)
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := NewKey()
	der, err := ca.Sign(&key.PublicKey, Subject{User: "u"}, time.Now(), time.Now().Add(100*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("NotAfter %s is after the CA's %s", cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := ca.Sign(&key.PublicKey, Subject{User: "u"}, time.Now(), time.Now().Add(-time.Second)); err == nil {
		t.Error("a certificate ending before now was signed")
	}
}

// What the Actions log must hide of a kubeconfig written here: the certificate and key data,
// and the key's PEM body lines; never a generic line such as "users:".
func TestMaskValues(t *testing.T) {
	certPEM, keyPEM := testCA(t)
	ca, _ := ParseCA(certPEM, keyPEM)
	key, _ := NewKey()
	der, _ := ca.Sign(&key.PublicKey, Subject{User: "u"}, time.Now(), time.Now().Add(time.Hour))
	kc, err := Kubeconfig(Cluster{Name: "c", Server: "https://192.0.2.1:6443", CAPEM: ca.CertPEM}, der, key)
	if err != nil {
		t.Fatal(err)
	}
	masked := MaskValues(kc)
	text := string(kc)
	for _, m := range masked {
		text = strings.ReplaceAll(text, m, "***")
	}
	if strings.Contains(text, "BEGIN") || len(masked) < 3 {
		t.Errorf("masked %d values; what is left:\n%s", len(masked), text)
	}
	var doc kubeconfigFile
	_ = yaml.Unmarshal(kc, &doc)
	for _, m := range masked {
		if m == "users:" || m == doc.Clusters[0].Cluster.CAData || m == "https://192.0.2.1:6443" {
			t.Errorf("masks a public value %q", m)
		}
	}
}
