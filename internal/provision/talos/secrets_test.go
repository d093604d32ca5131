package talos

import (
	"encoding/pem"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/settings"
)

// The service-account key type follows the setting: Talos's RSA by default (a state written
// before the setting has ""), ECDSA on request; anything else is refused, not defaulted.
func TestNewSecretsServiceAccountKeyType(t *testing.T) {
	for _, tc := range []struct {
		key  settings.ServiceAccountKey
		want string // the key's PEM type, or the error's words
	}{
		{"", "RSA PRIVATE KEY"},
		{settings.ServiceAccountKeyRSA, "RSA PRIVATE KEY"},
		{settings.ServiceAccountKeyECDSA, "EC PRIVATE KEY"},
		{"ed25519", `"ed25519": give rsa or ecdsa`},
	} {
		t.Run(string(tc.key), func(t *testing.T) {
			y, err := NewSecrets(DefaultTalosVersion, tc.key)
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("NewSecrets(%q): %v, want an error saying %s", tc.key, err, tc.want)
				}
				return
			}
			b, err := LoadSecrets(y)
			if err != nil {
				t.Fatal(err)
			}
			blk, _ := pem.Decode(b.Certs.K8sServiceAccount.Key)
			if blk == nil {
				t.Fatal("the service-account key is not PEM")
			}
			if got := blk.Type; got != tc.want {
				t.Errorf("NewSecrets(%q) made a service-account key of PEM type %s, want %s", tc.key, got, tc.want)
			}
		})
	}
}
