package record

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Redacted replaces a secret value; ElidedPrefix starts the summary that replaces a body kept
// out of the cassette (an object's bytes, a ciphertext, a body over the limit).
const (
	Redacted     = "REDACTED"
	ElidedPrefix = "<elided by pocbot's recorder: "
)

// What the redactor removes, and how it recognises each kind. A value is recognised by where it is
// (a header, a query parameter, a JSON or YAML key), by its shape, or because the process knows it
// (Learn: the environment's secrets, and every value a rule above removed, wherever it appears
// again, in any of the encodings a request may carry it in).
//
//	| kind | where | recognised by |
//	|---|---|---|
//	| Scaleway secret key | X-Auth-Token header; IAM answers | the header; JSON key secret_key; Learn |
//	| Object Storage signature (SigV4) | Authorization header | AWS4-HMAC-SHA256: Credential (it holds the access key) and Signature replaced, the signed header names kept |
//	| presigned URL | query of a request; a link in a comment or an answer | X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token parameters, anywhere in text |
//	| GitHub App JWT, installation token (classic or stateless), personal token | Authorization header; POST …/access_tokens answer | the header (scheme kept); JSON key token; the token shapes gh[pousr]_…, github_pat_…; JWT shape eyJ….eyJ….… |
//	| access keys | the environment | Learn (SCW_ACCESS_KEY, AWS_ACCESS_KEY_ID, POC_PRESIGN_ACCESS_KEY): an id, but the one that names the account |
//	| state key | the environment | Learn (POC_STATE_KEY, and its base64 body alone) |
//	| kubeconfig, talosconfig | any text | YAML keys client-key-data, client-certificate-data, token, key, crt of a talosconfig context; base64 PEM private keys |
//	| Talos machine-config secrets | Instance user data; any text | YAML keys token, key, secret, bootstraptoken, secretboxEncryptionSecret, aescbcEncryptionSecret (block scalars included); base64 PEM private keys; the bootstrap token shape |
//	| SSH and TLS private keys, the App's key | any text | PEM "PRIVATE KEY" blocks, raw or JSON-escaped |
//	| sealed secrets | GitHub Actions secrets API | JSON key encrypted_value |
//	| age ciphertexts | object bodies; any text | armored blocks and binary age files replaced by their size: the recipients' stanzas carry nothing a replay needs |
//	| encrypted state bodies, artifacts, images | Object Storage object bodies | never kept: replaced by their size and kind (Object Storage keeps XML and JSON control documents only) |
//	| passwords, other secrets | JSON answers | JSON keys password, service_password, secret, private_key, client_secret, webhook_secret, pem, access_token, refresh_token, authorization, kubeconfig, talosconfig |
//	| cookies | headers | Cookie, Set-Cookie, Proxy-Authorization and the SSE-C key headers |
type Redactor struct {
	mu    sync.Mutex
	known []string // literal secrets and their encodings, longest first
}

// NewRedactor is a redactor that also removes the given literal secrets.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Learn(s)
	}
	return r
}

// minSecret is the shortest value removed literally: a shorter one would cut through ordinary text.
const minSecret = 8

// Learn adds a literal secret: it is removed wherever it appears, raw, JSON-escaped, URL-escaped or
// base64-encoded, and so is the body of a base64key:// URL (the state key's form).
func (r *Redactor) Learn(secret string) {
	secret = strings.TrimSpace(secret)
	if len(secret) < minSecret {
		return
	}
	forms := []string{secret, jsonEscaped(secret), url.QueryEscape(secret), url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)), base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawStdEncoding.EncodeToString([]byte(secret))}
	if k, ok := strings.CutPrefix(secret, "base64key://"); ok {
		forms = append(forms, k, url.QueryEscape(k))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	known := slices.Clone(r.known) // a copy: Text reads the old list without the lock
	for _, f := range forms {
		if len(f) >= minSecret && !slices.Contains(known, f) {
			known = append(known, f)
		}
	}
	slices.SortFunc(known, func(a, b string) int { return len(b) - len(a) })
	r.known = known
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// Interaction removes the secrets of it in place; service decides whether bodies that are not
// control documents are kept.
func (r *Redactor) Interaction(it *Interaction, service Service) {
	it.Request.Headers = r.headers(it.Request.Headers)
	it.Response.Headers = r.headers(it.Response.Headers)
	it.Request.Trailer = r.headers(it.Request.Trailer)
	it.Response.Trailer = r.headers(it.Response.Trailer)
	it.Request.URL = r.url(it.Request.URL)
	if it.Request.RequestURI != "" {
		it.Request.RequestURI = r.url(it.Request.RequestURI)
	}
	for k, vs := range it.Request.Form {
		for i := range vs {
			vs[i] = r.param(k, vs[i])
		}
	}
	it.Request.Host = r.Text(it.Request.Host)
	it.Request.Body = r.body(it.Request.Body, it.Request.Headers, service)
	it.Response.Body = r.body(it.Response.Body, it.Response.Headers, service)
	it.Response.Status = r.Text(it.Response.Status)
}

// secretHeaders are replaced whole (after their value is learned).
var secretHeaders = map[string]bool{
	"X-Auth-Token": true, "Cookie": true, "Set-Cookie": true, "X-Amz-Security-Token": true,
	"X-Amz-Server-Side-Encryption-Customer-Key": true, "X-Amz-Server-Side-Encryption-Customer-Key-Md5": true,
	"X-Amz-Copy-Source-Server-Side-Encryption-Customer-Key": true, "X-Github-Token": true,
}

func (r *Redactor) headers(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := http.Header{}
	for k, vs := range h {
		ck := http.CanonicalHeaderKey(k)
		for _, v := range vs {
			switch {
			case ck == "Authorization" || ck == "Proxy-Authorization":
				v = r.authorization(v)
			case secretHeaders[ck]:
				r.Learn(v)
				v = Redacted
			default:
				v = r.Text(v)
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}

var sigv4Re = regexp.MustCompile(`^(AWS4-[A-Z0-9-]+ )Credential=([^/,\s]*)(/[^,\s]*)?,\s*SignedHeaders=([^,\s]*),\s*Signature=(\S*)$`)

// authorization keeps what an Authorization value tells (its scheme; a SigV4 signature's date,
// region, service and signed header names) and removes what authenticates.
func (r *Redactor) authorization(v string) string {
	if m := sigv4Re.FindStringSubmatch(v); m != nil {
		r.Learn(m[2])
		r.Learn(m[5])
		return m[1] + "Credential=" + Redacted + m[3] + ", SignedHeaders=" + m[4] + ", Signature=" + Redacted
	}
	scheme, cred, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok {
		r.Learn(v)
		return Redacted
	}
	r.Learn(cred)
	return scheme + " " + Redacted
}

// secretParams are query parameters whose values are removed.
var secretParams = map[string]bool{
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true, "signature": true,
	"awsaccesskeyid": true, "access_token": true, "token": true, "client_secret": true, "code": true,
}

func (r *Redactor) param(k, v string) string {
	if secretParams[strings.ToLower(k)] {
		r.Learn(v)
		return Redacted
	}
	return r.Text(v)
}

// url removes the secret parameters of a URL, then the known secrets from what is left.
func (r *Redactor) url(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return r.Text(raw)
	}
	if u.User != nil {
		if p, ok := u.User.Password(); ok {
			r.Learn(p)
		}
		u.User = url.User(Redacted)
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			uv, err := url.QueryUnescape(v)
			switch {
			case secretParams[strings.ToLower(name)]:
				if err == nil {
					r.Learn(uv)
				}
				r.Learn(v)
				parts[i] = k + "=" + Redacted
			case err == nil:
				// A value's secrets are recognised decoded (an armored block spans lines).
				if t := r.Text(uv); t != uv {
					parts[i] = k + "=" + url.QueryEscape(t)
				}
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	if t := r.Text(u.Path); t != u.Path {
		u.Path, u.RawPath = t, ""
	}
	return r.Text(u.String())
}

// body is a body as kept: Object Storage keeps its XML and JSON control documents only; any
// service's binary body is summarised; text goes through the structural rules, then Text.
func (r *Redactor) body(b string, h http.Header, service Service) string {
	if b == "" || strings.HasPrefix(b, ElidedPrefix) {
		return b
	}
	if !utf8.ValidString(b) || (service == ObjectStorage && !controlDocument(b, h)) {
		return elided([]byte(b), int64(len(b)), "")
	}
	return r.Text(r.structured(r.shapes(r.literals(b))))
}

// controlDocument tells an Object Storage body that is the protocol's own (a listing, an error, a
// multipart completion, a lifecycle rule, a bucket policy) from an object's bytes.
func controlDocument(b string, h http.Header) bool {
	ct := strings.ToLower(h.Get("Content-Type"))
	t := strings.TrimSpace(b)
	switch {
	case strings.Contains(ct, "xml") || strings.HasPrefix(t, "<?xml"):
		return true
	case strings.Contains(ct, "json") && strings.HasPrefix(t, "{"):
		// Bucket policies; the state's objects are binary (statestore's PBSTATE format).
		return json.Valid([]byte(t))
	}
	return false
}

// elided is the summary of a body kept out: its size and what it looks like.
func elided(head []byte, size int64, why string) string {
	kind := sniff(head)
	if why != "" {
		kind += ", " + why
	}
	return fmt.Sprintf("%s%d bytes, %s>", ElidedPrefix, size, kind)
}

// sniff names the kind of a body from its first bytes (never its content).
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("PBSTATE\x00")):
		return "pocbot state object (encrypted)"
	case bytes.HasPrefix(b, []byte("age-encryption.org/")), bytes.Contains(b[:min(len(b), 64)], []byte("BEGIN AGE ENCRYPTED FILE")):
		return "age ciphertext"
	case bytes.HasPrefix(b, []byte("QFI\xfb")):
		return "qcow2 image"
	case bytes.HasPrefix(b, []byte("\x28\xb5\x2f\xfd")):
		return "zstd data"
	case bytes.HasPrefix(b, []byte("\xfd7zXZ\x00")):
		return "xz data"
	case bytes.HasPrefix(b, []byte("\x1f\x8b")):
		return "gzip data"
	case utf8.Valid(b):
		return "text"
	}
	return "binary data"
}

// secretJSONKeys are JSON keys whose string values are removed (lower case).
var secretJSONKeys = []string{"token", "secret", "secret_key", "password", "service_password", "private_key",
	"client_secret", "webhook_secret", "pem", "encrypted_value", "access_token", "refresh_token",
	"authorization", "kubeconfig", "talosconfig", "api_key", "ssh_private_key"}

var jsonKeyRe = regexp.MustCompile(`(?i)"(` + strings.Join(secretJSONKeys, "|") + `)"(\s*:\s*)"((?:[^"\\]|\\.)*)"`)

// secretYAMLKeys are YAML keys whose values are removed: a kubeconfig's and a talosconfig's
// credentials, a Talos machine config's secrets.
var secretYAMLKeys = []string{"token", "key", "secret", "bootstraptoken", "secretboxEncryptionSecret",
	"aescbcEncryptionSecret", "client-key-data", "client-key", "password", "id-token", "refresh-token",
	"private_key", "privateKey"}

var yamlKeyRe = regexp.MustCompile(`^(\s*(?:-\s+)?)(` + strings.Join(secretYAMLKeys, "|") + `):(\s*)(.*)$`)

// structured applies the rules that need to know where a value is: JSON keys, YAML keys.
func (r *Redactor) structured(b string) string {
	b = jsonKeyRe.ReplaceAllStringFunc(b, func(m string) string {
		s := jsonKeyRe.FindStringSubmatch(m)
		if s[3] == "" || s[3] == Redacted {
			return m
		}
		var v string
		if json.Unmarshal([]byte(`"`+s[3]+`"`), &v) == nil {
			r.Learn(v)
		}
		r.Learn(s[3])
		return `"` + s[1] + `"` + s[2] + `"` + Redacted + `"`
	})
	if t := strings.TrimSpace(b); !strings.Contains(t, ":") || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return b
	}
	return r.yamlValues(b)
}

// yamlValues removes the values of secretYAMLKeys, a block scalar's lines included.
func (r *Redactor) yamlValues(b string) string {
	lines := strings.Split(b, "\n")
	out := lines[:0]
	blockIndent := -1 // inside a removed block scalar: the key's indentation
	for _, l := range lines {
		if blockIndent >= 0 {
			if strings.TrimSpace(l) == "" || indent(l) > blockIndent {
				r.Learn(strings.TrimSpace(l))
				continue
			}
			blockIndent = -1
		}
		m := yamlKeyRe.FindStringSubmatch(l)
		if m == nil {
			out = append(out, l)
			continue
		}
		v := strings.TrimSpace(m[4])
		switch {
		case v == "" || v == "{}" || v == "[]" || v == Redacted || v == `""` || v == "null":
			// Nothing, or a nested map whose own keys are checked line by line (a config's ca:).
			out = append(out, l)
		case strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">"):
			blockIndent = indent(l)
			out = append(out, m[1]+m[2]+": "+Redacted)
		default:
			r.Learn(strings.Trim(v, `"'`))
			out = append(out, m[1]+m[2]+":"+m[3]+Redacted)
		}
	}
	return strings.Join(out, "\n")
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t-")) }

// Shapes recognised anywhere in text.
var (
	pemPrivateRe = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END [A-Z0-9 ]*PRIVATE KEY-----|(?s:.*))`)
	ageArmorRe   = regexp.MustCompile(`-----BEGIN AGE ENCRYPTED FILE-----(?:(?s:.*?)-----END AGE ENCRYPTED FILE-----|(?s:.*))`)
	jwtRe        = regexp.MustCompile(`eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*`)
	// Classic tokens (ghs_ and 36 alphanumerics) and stateless installation tokens (ghs_<app
	// id>_<JWT>: GitHub changelog 2026-10-02, internal/sim/github's contract).
	ghTokenRe = regexp.MustCompile(`(?:gh[pousr]_[A-Za-z0-9_.-]{20,}|github_pat_[A-Za-z0-9_]{20,})`)
	presignRe = regexp.MustCompile(`(?i)((?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token)(?:=|%3D))[^&\s"'<>\\)\]]*`)
	// base64 of "-----BEGIN " (a PEM block inside YAML or JSON): removed when it decodes to a
	// private key.
	b64PEMRe = regexp.MustCompile(`LS0tLS1CRUdJTi[A-Za-z0-9+/=]*`)
	// A Kubernetes bootstrap token (a Talos machine config's machine.token and cluster.token).
	bootstrapRe = regexp.MustCompile(`[a-z0-9]{6}\.[a-z0-9]{16}`)
)

// Text removes the known secrets, then those recognisable by shape, then what those taught, from
// any text. The known ones go first: a shape rule that matched across a secret's edge would leave
// a piece of it that no literal matches any more.
func (r *Redactor) Text(s string) string {
	if s == "" {
		return s
	}
	return r.literals(r.shapes(r.literals(s)))
}

// shapes removes the secrets recognisable by shape, learning each.
func (r *Redactor) shapes(s string) string {
	s = pemPrivateRe.ReplaceAllStringFunc(s, func(m string) string {
		r.learnLines(m)
		return "<private key " + Redacted + ">"
	})
	s = ageArmorRe.ReplaceAllStringFunc(s, func(m string) string {
		return fmt.Sprintf("<age ciphertext, %d bytes, %s>", len(m), Redacted)
	})
	s = b64PEMRe.ReplaceAllStringFunc(s, func(m string) string {
		dec, err := base64.StdEncoding.DecodeString(m[:len(m)/4*4])
		if err != nil || bytes.Contains(dec, []byte("PRIVATE KEY")) || !bytes.Contains(dec, []byte("-----END")) {
			// A private key, or a block cut short that cannot be told apart from one.
			r.Learn(m)
			return Redacted
		}
		return m
	})
	for _, re := range []*regexp.Regexp{jwtRe, ghTokenRe, bootstrapRe} {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			r.Learn(m)
			return Redacted
		})
	}
	return presignRe.ReplaceAllString(s, "${1}"+Redacted)
}

// literals removes every known secret, longest first.
func (r *Redactor) literals(s string) string {
	r.mu.Lock()
	known := r.known
	r.mu.Unlock()
	for _, k := range known {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	return s
}

// learnLines learns each line of a removed block (a key's base64 lines may appear again alone).
func (r *Redactor) learnLines(block string) {
	for _, l := range strings.FieldsFunc(block, func(c rune) bool { return c == '\n' || c == '\\' }) {
		if l = strings.TrimPrefix(strings.TrimSpace(l), "n"); !strings.HasPrefix(l, "-----") && len(l) >= 16 {
			r.Learn(l)
		}
	}
}
