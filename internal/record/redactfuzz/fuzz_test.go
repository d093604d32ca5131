// Package redactfuzz fuzzes the recorder's redactor (internal/record) on its own: the package's
// own tests link Talos machinery to plant real machine configs, which makes a fuzzing build of
// them take minutes.
package redactfuzz

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"
	yaml "go.yaml.in/yaml/v4"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/record"
)

type kind struct{ secret, payload string }

// kinds are the secrets the redactor must remove in any surroundings: the ones the process knows
// (the environment's) and those recognised by shape. (A bootstrap token and the values found
// under a JSON or YAML key are recognised only in their place; record's
// TestPlantedSecretsNoneSurvive plants those where the bot sends them.) known are the
// environment's.
func kinds(tb testing.TB) (out []kind, known []string) {
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		tb.Fatal(err)
	}
	appPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(ek, "pocbot rescue")
	if err != nil {
		tb.Fatal(err)
	}
	sshPEM := pem.EncodeToMemory(blk)
	id, _ := age.GenerateX25519Identity()
	var arm bytes.Buffer
	aw := armor.NewWriter(&arm)
	w, _ := age.Encrypt(aw, id.Recipient())
	w.Write([]byte("apiVersion: v1\nkind: Config\n"))
	w.Close()
	aw.Close()
	// The state key's form (statestore.NewKeyURL): base64key:// and 32 random bytes, URL-safe.
	var k [32]byte
	rand.Read(k[:])
	stateKey := "base64key://" + base64.URLEncoding.EncodeToString(k[:])
	scwSecret, presignSecret := "6f0e8b7a-1c2d-4e3f-8a9b-0c1d2e3f4a5b", "0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d"
	known = []string{scwSecret, stateKey, presignSecret, "SCWABCDEFGHJKMNPQRST"}
	return []kind{
		{scwSecret, scwSecret},
		{stateKey, strings.TrimPrefix(stateKey, "base64key://")},
		{presignSecret, presignSecret},
		{string(appPEM), strings.Join(pemLines(appPEM), "")},
		{string(sshPEM), strings.Join(pemLines(sshPEM), "")},
		{arm.String(), strings.Join(pemLines(arm.Bytes()), "")},
		{"ghs_16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c838347Ae178B4a"},
		{"eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiI0MjQyNDIifQ.c2lnbmF0dXJlLW9mLXRoZS1hcHA", "c2lnbmF0dXJlLW9mLXRoZS1hcHA"},
		{"X-Amz-Signature=0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9", "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"},
	}, known
}

// pemLines is the base64 lines of a PEM block (each a piece of the key).
func pemLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

// FuzzRedact plants a secret between any two texts, in every part of an exchange of every
// service (header, query, bodies), and checks that no 16-byte piece of it survives in the written
// cassette (a piece that the surroundings themselves contain does not count).
func FuzzRedact(f *testing.F) {
	kinds, known := kinds(f)
	f.Add("", "", uint8(0))
	f.Add(`{"token":"`, `"}`, uint8(6))
	f.Add("key: ", "\n", uint8(3))
	f.Add("eyJ", ".x", uint8(7))
	f.Add("X-Amz-Signature=", "&a=b", uint8(8))
	f.Add("-----BEGIN ", "-----END RSA PRIVATE KEY-----", uint8(3))
	f.Add(`{"body":"`, `\u0026X-Amz-Credential=a"}`, uint8(8))
	f.Fuzz(func(t *testing.T, prefix, suffix string, k uint8) {
		kind := kinds[int(k)%len(kinds)]
		r := record.NewRedactor(known...)
		text := prefix + kind.secret + suffix
		for _, svc := range []record.Service{record.Scaleway, record.ObjectStorage, record.GitHub} {
			it := &record.Interaction{
				Request: record.Request{Method: "POST", URL: "https://api.example.com/p?q=" + url.QueryEscape(text), Body: text,
					Headers: http.Header{"X-Note": {text}, "Content-Type": {"application/json"}}},
				Response: record.Response{Code: 200, Body: text, Headers: http.Header{"Content-Type": {"application/xml"}}, Status: "200 OK"},
			}
			r.Interaction(it, svc)
			out, err := yaml.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+16 <= len(kind.payload); i += 4 {
				piece := kind.payload[i : i+16]
				if strings.Contains(prefix+"\x00"+suffix, piece) {
					continue
				}
				for _, form := range []string{piece, url.QueryEscape(piece)} {
					if bytes.Contains(out, []byte(form)) {
						t.Fatalf("service %s: the piece %q of secret kind %d survives:\n%s", svc, piece, k%uint8(len(kinds)), out)
					}
				}
			}
		}
	})
}
