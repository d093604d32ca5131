package record

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/bradleyfalzon/ghinstallation/v2"
	yaml "go.yaml.in/yaml/v4"
	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/sim/cnichart"
	"github.com/pocbot/pocbot/internal/statestore"
)

// secretsOfTheBot are real secrets of every kind the bot handles, made with the libraries the bot
// makes them with.
type secretsOfTheBot struct {
	scwAccess, scwSecret, presignAccess, presignSecret string
	stateKey                                           string
	appPEM                                             []byte
	sshPEM                                             []byte
	kubeconfig, talosconfig, machineConfig             []byte
	machineSecrets                                     []string // every secret value of the config's bundle
	ageArmored, ageBinary                              []byte
	installToken, personalToken, statelessToken        string
}

var (
	plantedOnce sync.Once
	planted     secretsOfTheBot
	plantedErr  error
)

func plantSecrets(t testing.TB) secretsOfTheBot {
	t.Helper()
	plantedOnce.Do(func() { planted, plantedErr = makeSecrets() })
	if plantedErr != nil {
		t.Fatal(plantedErr)
	}
	return planted
}

func randomText(alphabet string, n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

const upperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func uuid() string {
	h := randomText("0123456789abcdef", 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:]
}

func makeSecrets() (s secretsOfTheBot, err error) {
	s.scwAccess, s.scwSecret = "SCW"+randomText(upperAlnum, 17), uuid()
	s.presignAccess, s.presignSecret = "SCW"+randomText(upperAlnum, 17), uuid()
	if s.stateKey, err = statestore.NewKeyURL(); err != nil {
		return s, err
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return s, err
	}
	s.appPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	blk, err := ssh.MarshalPrivateKey(ek, "pocbot rescue")
	if err != nil {
		return s, err
	}
	s.sshPEM = pem.EncodeToMemory(blk)
	// A kubeconfig as Talos hands it out: a client certificate and its key, base64 PEM.
	ck, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(ck)
	keyData := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}))
	s.kubeconfig = []byte("apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://51.15.0.1:6443\n" +
		"  name: poc\nusers:\n- name: admin@poc\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n" +
		"    client-key-data: " + keyData + "\n    token: " + randomText("abcdefghijklmnopqrstuvwxyz0123456789", 6) + "." +
		randomText("abcdefghijklmnopqrstuvwxyz0123456789", 16) + "\n")
	// The machine configs and the talosconfig the bot generates, with machinery.
	bundle, err := talos.NewSecrets(settings.DefaultTalosVersion, settings.ServiceAccountKeyECDSA)
	if err != nil {
		return s, err
	}
	cfgs, err := talos.Generate(context.Background(), talos.Input{ClusterName: "poc-acme-web-42", Endpoint: "https://51.15.0.1:6443",
		Secrets: bundle, SchematicID: "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba",
		ControlPlaneIPs: []string{"51.15.0.1", "51.15.0.2", "51.15.0.3"}, WorkerInstallDisk: "/dev/nvme0n1",
		CiliumChart: cnichart.Archive()})
	if err != nil {
		return s, err
	}
	s.machineConfig, s.talosconfig = cfgs.ControlPlane, cfgs.Talosconfig
	if s.machineSecrets, err = bundleSecrets(bundle); err != nil {
		return s, err
	}
	id, _ := age.GenerateX25519Identity()
	var bin, arm bytes.Buffer
	w, _ := age.Encrypt(&bin, id.Recipient())
	w.Write(s.kubeconfig)
	w.Close()
	aw := armor.NewWriter(&arm)
	w, _ = age.Encrypt(aw, id.Recipient())
	w.Write(s.kubeconfig)
	w.Close()
	aw.Close()
	s.ageBinary, s.ageArmored = bin.Bytes(), arm.Bytes()
	s.installToken, s.personalToken = "ghs_"+randomText(alnum, 36), "github_pat_"+randomText(alnum, 22)+"_"+randomText(alnum, 59)
	// A stateless installation token: ghs_<app id>_<JWT> (internal/sim/github's contract).
	s.statelessToken = "ghs_424242_eyJhbGciOiJSUzI1NiJ9.eyJpbnN0IjoiOTkiLCJleHAiOjE3OTl9." + randomText(alnum+"-_", 86)
	return s, nil
}

// bundleSecrets lists every value of a Talos secrets bundle but the certificates and the
// cluster's id (public): the oracle of the machine-config rows, read from the bundle, not from
// the redactor's rules.
func bundleSecrets(bundle []byte) ([]string, error) {
	var doc any
	if err := yaml.Unmarshal(bundle, &doc); err != nil {
		return nil, err
	}
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case string:
			if key != "crt" && key != "id" && len(x) >= minSecret {
				out = append(out, x)
			}
		}
	}
	walk("", doc)
	if len(out) < 6 {
		return nil, fmt.Errorf("the secrets bundle gave %d secret values, fewer than its keys and tokens", len(out))
	}
	return out, nil
}

// plantRow is one exchange carrying one kind of secret.
type plantRow struct {
	kind    string
	service Service
	// auth, when set, is the layer above the recorder that authenticates (a signer, the App's JWT).
	auth           func(http.RoundTripper) http.RoundTripper
	method, target string
	header         http.Header
	body           string
	respHeader     http.Header
	respBody       string
	// secrets must not survive; seen adds those only the server saw (a signature, a JWT).
	secrets []string
	seen    func(r *http.Request, body string) []string
	// keep must survive: the exchange stays useful.
	keep []string
}

// sigv4 signs each request as the S3 client does, with ak/sk.
func sigv4(ak, sk string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return rtFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
			err := v4.NewSigner().SignHTTP(r.Context(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, r,
				"UNSIGNED-PAYLOAD", "s3", "fr-par", time.Now())
			if err != nil {
				return nil, err
			}
			return next.RoundTrip(r)
		})
	}
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func presigned(t *testing.T, base, ak, sk string) string {
	req, _ := http.NewRequest("GET", base+"/pocbot-state/public/acme-shop-42/kubeconfig.age", nil)
	u, _, err := v4.NewSigner().PresignHTTP(t.Context(), aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, req,
		"UNSIGNED-PAYLOAD", "s3", "fr-par", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func authHeader(r *http.Request, _ string) []string {
	a := r.Header.Get("Authorization")
	_, cred, _ := strings.Cut(a, " ")
	out := []string{a, cred}
	if i := strings.Index(a, "Signature="); i >= 0 {
		out = append(out, a[i+len("Signature="):])
	}
	return out
}

func jsonString(b []byte) string { s, _ := json.Marshal(string(b)); return string(s) }

func plantRows(t *testing.T, s secretsOfTheBot, base string) []plantRow {
	link := presigned(t, base, s.presignAccess, s.presignSecret)
	linkSig := must(url.Parse(link)).Query().Get("X-Amz-Signature")
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	return []plantRow{
		{kind: "Scaleway secret key (X-Auth-Token)", service: Scaleway, method: "GET", target: "/instance/v1/zones/fr-par-1/servers",
			header: http.Header{"X-Auth-Token": {s.scwSecret}}, respHeader: jsonCT, respBody: `{"servers":[],"total_count":0}`,
			secrets: []string{s.scwSecret}, keep: []string{"/instance/v1/zones/fr-par-1/servers", `"total_count":0`}},
		{kind: "IAM API key made by bot init", service: Scaleway, method: "POST", target: "/iam/v1alpha1/api-keys",
			body: `{"application_id":"` + uuid() + `","description":"pocbot"}`, respHeader: jsonCT,
			respBody: `{"access_key":"` + s.presignAccess + `","secret_key":"` + s.presignSecret + `","description":"pocbot","default_project_id":"p"}`,
			secrets:  []string{s.presignSecret, s.presignAccess}, keep: []string{`"description":"pocbot"`, `"secret_key":"REDACTED"`}},
		{kind: "Elastic Metal rescue password", service: Scaleway, method: "GET", target: "/baremetal/v1/zones/fr-par-2/servers/x",
			respHeader: jsonCT, respBody: `{"id":"x","status":"ready","rescue_server":{"user":"rescue","password":"Xy7!pQ9#rT2$vW5"}}`,
			secrets: []string{"Xy7!pQ9#rT2$vW5"}, keep: []string{`"user":"rescue"`, `"status":"ready"`}},
		{kind: "Talos machine config as Instance user data", service: Scaleway, method: "PATCH",
			target: "/instance/v1/zones/fr-par-1/servers/x/user_data/cloud-init", header: http.Header{"Content-Type": {"text/plain"}},
			body: string(s.machineConfig), secrets: s.machineSecrets, keep: []string{"machine:", "type: controlplane", "crt: LS0t"}},
		{kind: "Talos machine config read back", service: Scaleway, method: "GET",
			target: "/instance/v1/zones/fr-par-1/servers/x/user_data/cloud-init", respHeader: http.Header{"Content-Type": {"text/plain"}},
			respBody: string(s.machineConfig), secrets: s.machineSecrets, keep: []string{"cluster:"}},
		{kind: "S3 SigV4 Authorization", service: ObjectStorage, auth: sigv4(s.scwAccess, s.scwSecret), method: "GET",
			target: "/pocbot-state?list-type=2&prefix=clusters%2F", respHeader: http.Header{"Content-Type": {"application/xml"}},
			respBody: `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>pocbot-state</Name><KeyCount>0</KeyCount></ListBucketResult>`,
			secrets:  []string{s.scwAccess, s.scwSecret}, seen: authHeader,
			keep: []string{"AWS4-HMAC-SHA256 Credential=REDACTED/", "/fr-par/s3/aws4_request", "SignedHeaders=", "<KeyCount>0</KeyCount>", "list-type=2"}},
		{kind: "presigned URL fetched", service: ObjectStorage, method: "GET", target: strings.TrimPrefix(link, base),
			respHeader: http.Header{"Content-Type": {"application/octet-stream"}}, respBody: string(s.ageBinary),
			secrets: []string{linkSig, s.presignAccess, string(s.ageBinary[40:80])}, keep: []string{"X-Amz-Signature=REDACTED", "X-Amz-SignedHeaders=host", "age ciphertext"}},
		{kind: "presigned link in a GitHub comment", service: GitHub, method: "POST", target: "/repos/acme/shop/issues/42/comments",
			header: jsonCT, body: `{"body":"kubeconfig: [link](` + strings.ReplaceAll(link, "&", `\u0026`) + `) expires in 1h"}`,
			respHeader: jsonCT, respBody: `{"id":7,"body":"kubeconfig: [link](` + link + `)"}`,
			secrets: []string{linkSig}, keep: []string{"expires in 1h", `"id":7`}},
		{kind: "encrypted state body", service: ObjectStorage, auth: sigv4(s.scwAccess, s.scwSecret), method: "PUT",
			target: "/pocbot-state/clusters/acme-shop-42.json", header: http.Header{"Content-Type": {"application/octet-stream"}},
			body:    "PBSTATE\x00\x02\x00\x00\x00\x10{\"cluster\":\"x\"}" + randomText(alnum, 64) + "secret-plaintext-never",
			secrets: []string{"secret-plaintext-never"}, seen: authHeader, keep: []string{"pocbot state object"}},
		{kind: "age ciphertext (armored) in a text", service: GitHub, method: "POST", target: "/repos/acme/shop/issues/42/comments",
			header: jsonCT, body: `{"body":` + jsonString(s.ageArmored) + `}`, respHeader: jsonCT, respBody: `{"id":8}`,
			secrets: []string{strings.Split(string(s.ageArmored), "\n")[1]}, keep: []string{"age ciphertext"}},
		{kind: "GitHub App JWT", service: GitHub, auth: appJWT(t, s.appPEM), method: "GET", target: "/repos/acme/shop/installation",
			respHeader: jsonCT, respBody: `{"id":99,"app_slug":"pocbot"}`, seen: authHeader, keep: []string{"Bearer REDACTED", `"app_slug":"pocbot"`}},
		{kind: "installation token minted", service: GitHub, method: "POST", target: "/app/installations/99/access_tokens",
			respHeader: jsonCT, respBody: `{"token":"` + s.installToken + `","expires_at":"2026-03-20T10:00:00Z","permissions":{"issues":"write"}}`,
			secrets: []string{s.installToken}, keep: []string{`"expires_at":"2026-03-20T10:00:00Z"`}},
		{kind: "stateless installation token used", service: GitHub, method: "GET", target: "/repos/acme/shop/issues/43",
			header: http.Header{"Authorization": {"token " + s.statelessToken}}, respHeader: jsonCT, respBody: `{"number":43}`,
			secrets: []string{s.statelessToken, strings.Split(s.statelessToken, ".")[2]}, keep: []string{"token REDACTED"}},
		{kind: "stateless token in a text", service: GitHub, method: "POST", target: "/repos/acme/shop/issues/43/comments",
			header: jsonCT, body: `{"body":"oops ` + s.statelessToken + ` leaked"}`, respHeader: jsonCT, respBody: `{"id":9}`,
			secrets: []string{strings.TrimPrefix(s.statelessToken, "ghs_424242_")}, keep: []string{"oops", "leaked"}},
		{kind: "installation token used", service: GitHub, method: "GET", target: "/repos/acme/shop/issues/42",
			header: http.Header{"Authorization": {"token " + s.installToken}}, respHeader: jsonCT, respBody: `{"number":42}`,
			secrets: []string{s.installToken}, keep: []string{"token REDACTED"}},
		{kind: "personal token (GH_TOKEN) of bot init", service: GitHub, method: "GET", target: "/user",
			header: http.Header{"Authorization": {"Bearer " + s.personalToken}}, respHeader: jsonCT, respBody: `{"login":"ada"}`,
			secrets: []string{s.personalToken}},
		{kind: "sealed secret written by bot init", service: GitHub, method: "PUT", target: "/repos/acme/shop/environments/poc/secrets/POC_STATE_KEY",
			header: jsonCT, body: `{"encrypted_value":"` + base64.StdEncoding.EncodeToString([]byte(s.stateKey+"sealed")) + `","key_id":"568250167242549743"}`,
			secrets: []string{base64.StdEncoding.EncodeToString([]byte(s.stateKey + "sealed"))}, keep: []string{`"key_id":"568250167242549743"`}},
		{kind: "state key leaked into a text", service: GitHub, method: "POST", target: "/repos/acme/shop/issues/42/comments",
			header: jsonCT, body: `{"body":"POC_STATE_KEY=` + s.stateKey + ` and alone ` + strings.TrimPrefix(s.stateKey, "base64key://") + `"}`,
			secrets: []string{s.stateKey, strings.TrimPrefix(s.stateKey, "base64key://")}},
		{kind: "kubeconfig in a body", service: Scaleway, method: "POST", target: "/anything", header: http.Header{"Content-Type": {"text/plain"}},
			body: string(s.kubeconfig), secrets: yamlValue(s.kubeconfig, "client-key-data", "token"), keep: []string{"server: https://51.15.0.1:6443"}},
		{kind: "talosconfig in a body", service: Scaleway, method: "POST", target: "/anything", header: http.Header{"Content-Type": {"text/plain"}},
			body: string(s.talosconfig), secrets: yamlValue(s.talosconfig, "key"), keep: []string{"endpoints:"}},
		{kind: "SSH private key, JSON-escaped", service: GitHub, method: "POST", target: "/anything", header: jsonCT,
			body: `{"note":` + jsonString(s.sshPEM) + `}`, secrets: pemLines(s.sshPEM)},
		{kind: "the App's private key, raw", service: Scaleway, method: "POST", target: "/anything", body: string(s.appPEM), secrets: pemLines(s.appPEM)},
		{kind: "cookies", service: GitHub, method: "GET", target: "/login", header: http.Header{"Cookie": {"user_session=abcdef0123456789"}},
			respHeader: http.Header{"Set-Cookie": {"_gh_sess=zyxwvu9876543210; Path=/"}}, secrets: []string{"abcdef0123456789", "zyxwvu9876543210"}},
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// appJWT authenticates as the App does (ghinstallation's JWT, signed with the App's key).
func appJWT(t *testing.T, key []byte) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		tr, err := ghinstallation.NewAppsTransport(next, 424242, key)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
}

// yamlValue is the values of the given keys in a YAML text, read by the YAML library.
func yamlValue(b []byte, keys ...string) []string {
	var doc any
	yaml.Unmarshal(b, &doc)
	var out []string
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for kk, e := range x {
				walk(kk, e)
			}
		case []any:
			for _, e := range x {
				walk(k, e)
			}
		case string:
			for _, want := range keys {
				if k == want {
					out = append(out, x)
				}
			}
		}
	}
	walk("", doc)
	return out
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

// Each kind of secret the bot handles is planted in a real exchange through the recording
// transport, with the environment of a run (the secrets the settings table marks, the keys and
// tokens); the cassette on disk carries none of them, and keeps what makes the exchange useful.
func TestPlantedSecretsNoneSurvive(t *testing.T) {
	s := plantSecrets(t)
	var mu sync.Mutex
	var seen [][]string
	var rows []plantRow
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := len(seen)
		row := rows[i]
		mu.Lock()
		if row.seen != nil {
			seen = append(seen, row.seen(r, string(body)))
		} else {
			seen = append(seen, nil)
		}
		mu.Unlock()
		for k, vs := range row.respHeader {
			w.Header()[k] = vs
		}
		io.WriteString(w, row.respBody)
	}))
	defer srv.Close()
	rows = plantRows(t, s, srv.URL)
	dir := t.TempDir()
	getenv := env(map[string]string{"POC_RECORD_DIR": dir, "SCW_ACCESS_KEY": s.scwAccess, "SCW_SECRET_KEY": s.scwSecret,
		"AWS_ACCESS_KEY_ID": s.scwAccess, "AWS_SECRET_ACCESS_KEY": s.scwSecret, "POC_STATE_KEY": s.stateKey,
		"POC_PRESIGN_ACCESS_KEY": s.presignAccess, "POC_PRESIGN_SECRET_KEY": s.presignSecret, "POC_APP_PRIVATE_KEY": string(s.appPEM),
		"GH_TOKEN": s.personalToken})
	for _, row := range rows {
		rt, err := Wrap(getenv, row.service, http.DefaultTransport)
		if err != nil {
			t.Fatal(err)
		}
		if row.auth != nil {
			rt = row.auth(rt)
		}
		var body io.Reader = http.NoBody
		if row.body != "" {
			body = strings.NewReader(row.body)
		}
		req, _ := http.NewRequestWithContext(t.Context(), row.method, srv.URL+row.target, body)
		for k, vs := range row.header {
			req.Header[k] = vs
		}
		resp, err := (&http.Client{Transport: rt}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", row.kind, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	c, raw := cassetteIn(t, dir)
	if len(c.Interactions) != len(rows) {
		t.Fatalf("%d interactions recorded, want %d", len(c.Interactions), len(rows))
	}
	for i, row := range rows {
		it := c.Interactions[i]
		text, _ := yaml.Marshal(it)
		for _, sec := range append(append([]string{}, row.secrets...), seen[i]...) {
			if sec == "" {
				continue
			}
			if bytes.Contains(text, []byte(sec)) || bytes.Contains(raw, []byte(sec)) {
				t.Errorf("%s: the secret %.24q… survives in the cassette:\n%s", row.kind, sec, text)
			}
		}
		for _, k := range row.keep {
			if !bytes.Contains(text, []byte(k)) {
				t.Errorf("%s: %q was removed too: the exchange is no longer useful:\n%s", row.kind, k, text)
			}
		}
	}
	// The environment's secrets, in any form, appear nowhere in the file.
	for _, v := range []string{s.scwSecret, s.scwAccess, s.presignSecret, s.stateKey, s.personalToken} {
		if bytes.Contains(raw, []byte(v)) {
			t.Errorf("the environment's secret %.12q… is in the cassette", v)
		}
	}
}
