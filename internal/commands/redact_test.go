package commands

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
)

func pemKey(t testing.TB) string {
	k, err := rsa.GenerateKey(rand.Reader, 1024) //nolint:gosec // test key only
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

// Fixed strings so the fuzz seeds need no randomness.
const (
	seedPEM = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----"
	seed32  = "q83vEjRWeJq83vEjRWeJq83vEjRWeJq83vEjRWeJq80=" // 32 bytes
)

// seedStateless is an installation token in GitHub's stateless format, ghs_<app id>_<JWT> (the
// create-installation-access-token operation's description in github/rest-api-description; about
// 520 characters): a JWT's three base64url segments, with '-' and '_' in them, joined by dots.
const seedStateless = "ghs_424242_eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9" +
	".eyJpc3MiOiJnaXRodWIiLCJhcHAiOjQyNDI0MiwiaW5zdCI6MTAwMSwiZXhwIjoxODAwMDAwMDAwfQ" +
	".q-9Zk_Rr2mXw8-Tt0_bQ5lN3v-Pp7_hE1cU4-yS6_aD9fG2-jK5_lZ8xC1-vB4_nM7wE0-rT3_uI6oP9aS2dF5gH8jK1lZ4x"

func redactSeeds() []string {
	return []string{
		"token ghs_16C7e42F292c6912E7710c838347Ae178B4a in a log",
		"git clone https://x-access-token:" + seedStateless + "@github.com/acme/web.git",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
		seedPEM,
		"users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t\n",
		"ca:\n  crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n  key: LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0K\n",
		"aescbcEncryptionSecret: " + seed32,
		"image sha256:" + strings.Repeat("ab", 32),
		"Authorization: Bearer abc.def.ghi",
		"AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
		"key: talos/metal-amd64.qcow2",
		"plain text, nothing secret: /poc up --ttl 8h",
	}
}

func TestRedact(t *testing.T) {
	edPub, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(edPriv)
	sshPub := "ssh-ed25519 " + base64.StdEncoding.EncodeToString(append([]byte("\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20"), edPub...)) + " alice@laptop"
	secret := []struct {
		name, in, mustGo string
	}{
		{"installation token", "x-access-token:ghs_abc123DEF@github.com", "ghs_abc123DEF"},
		{"short ghs token", "token=ghs_x", "ghs_x"},
		{"personal token", "GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123"},
		{"oauth/user/refresh", "gho_aaaa ghu_bbbb ghr_cccc", "_aaaa"},
		{"fine-grained pat", "github_pat_11AAAAAAA0aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "github_pat_11"},
		{"pem block", "key follows\n" + pemKey(t) + "done", "PRIVATE KEY"},
		{"pem cut at the start", "MIIEowIBAAKCAQEA\nabcdefghijklmnop\n-----END RSA PRIVATE KEY-----\nnext", "abcdefghijklmnop"},
		{"truncated pem", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB...", "MHcCAQEEIB"},
		{"client-key-data", "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=", "LS0tLS1CRUdJTiBSU0Eg"},
		{"client-certificate-data", `"client-certificate-data": "LS0tLS1CRUdJTg=="`, "LS0tLS1CRUdJTg=="},
		{"kubeconfig token", "    token: abcdef.0123456789abcdef", "0123456789abcdef"},
		{"lowercase value longer than a word", "token: abcdefghijkl", "abcdefghijkl"},
		{"short value with a digit", "password: hunter22", "hunter22"},
		{"talos key of a crt/key pair", "  key: LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0K", "LS0tLS1CRUdJTiBFRDI1"},
		{"raw 32-byte key in base64", "secret " + seed32 + " end", seed32},
		{"pkcs8 DER in base64", "blob=" + base64.StdEncoding.EncodeToString(pkcs8), base64.StdEncoding.EncodeToString(pkcs8)[:20]},
		{"base64 of a PEM", "data " + base64.StdEncoding.EncodeToString([]byte(pemKey(t))), "LS0tLS1CRUdJTi"},
		{"scaleway secret", "SCW_SECRET_KEY=11111111-2222-3333-4444-555555555555", "11111111-2222"},
		{"age identity", "AGE-SECRET-KEY-1GFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPYYSJZGFPQ4EGAEX", "GFPYYSJZ"},
		{"bearer header", "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.e30.sig", "eyJhbGci"},
	}
	for _, tt := range secret {
		t.Run(tt.name, func(t *testing.T) {
			if !ContainsSecret(tt.in) {
				t.Fatalf("ContainsSecret(%q) = false", tt.in)
			}
			out := Redact(tt.in)
			if strings.Contains(out, tt.mustGo) {
				t.Errorf("Redact(%q) = %q still holds %q", tt.in, out, tt.mustGo)
			}
			if !strings.Contains(out, Redacted) {
				t.Errorf("Redact(%q) = %q: no %s marker", tt.in, out, Redacted)
			}
		})
	}
	// Tokens in GitHub's formats are masked whole, wherever they stand: nothing of them is left.
	whole := []struct{ name, before, token, after string }{
		{"classic installation token", "token ", "ghs_16C7e42F292c6912E7710c838347Ae178B4a", " in a log"},
		{"stateless installation token", "x-access-token:", seedStateless, "@github.com/acme/web.git"},
		{"stateless token ending a sentence", "minted ", seedStateless, ". Next"},
		{"stateless token in JSON", `{"token":"`, seedStateless, `","expires_at":"2026-11-30T23:00:00Z"}`},
		{"stateless token of another app", "(", "ghs_1_" + seedStateless[len("ghs_424242_"):], ")"},
		{"personal token", "GH=", "ghp_0123456789abcdefghijABCDEFGHIJ012345", "\n"},
		{"an App JWT", "jwt=", "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiI0MjQyNDIiLCJpYXQiOjF9.c2ln-_x", " sent"},
	}
	for _, tt := range whole {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.before + tt.token + tt.after
			if got, want := Redact(in), tt.before+Redacted+tt.after; got != want {
				t.Errorf("Redact(%q)\n = %q\nwant %q", in, got, want)
			}
		})
	}
	clean := []string{
		"/poc up --ttl 8h --admin-cidr 203.0.113.0/24",
		"schematic 376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba",
		"image_key: talos/metal-amd64.qcow2",
		"key: value",
		"token: [REDACTED]",
		"password: ${{ secrets.X }}",
		sshPub,
		"age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p",
		"curl -fsS 'http://127.0.0.1:9000/b/k.age?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=" + strings.Repeat("0f", 32) + "'",
		"highs_score and sghp_x are words",
		// The rescue host key's fingerprint is logged on purpose: a digest, 32 bytes once decoded.
		"recorded rescue host key SHA256:SqoG6zchvrRnM7j973NyK/xx2Lym+CCnh+T+tpgXvYw",
		// An error message, not a credential: ghinstallation's wording, found by the soak.
		"could not refresh installation id 1009's token: could not get access_tokens from GitHub API",
		"password: required",
	}
	for _, s := range clean {
		if ContainsSecret(s) {
			t.Errorf("ContainsSecret(%q) = true, redacted to %q", s, Redact(s))
		}
	}
	// "ghs_" followed by nothing token-like stays: the rule needs at least one character.
	if ContainsSecret("prefix ghs_ alone") {
		t.Error("a bare ghs_ prefix is not a token")
	}
}
