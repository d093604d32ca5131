package commands

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"regexp"
	"strings"
)

// Redacted replaces every secret Redact finds.
const Redacted = "[REDACTED]"

// The secret shapes. Each pattern's first group (when present) is kept, the rest replaced, so
// that "client-key-data: …" stays readable as a key name.
var (
	// GitHub tokens of any length: installation (ghs_), personal (ghp_, github_pat_), OAuth
	// (gho_), user-to-server (ghu_), refresh (ghr_). Installation tokens are now stateless,
	// ghs_<app id>_<JWT> (about 520 characters; announced in the description of the operation
	// apps/create-installation-access-token, github/rest-api-description): the JWT's base64url
	// segments hold '-' and '_' and are joined by dots, so a token runs on through a dot that
	// is followed by more token characters (a sentence's final dot stays).
	ghTokenRE = regexp.MustCompile(`\b(?:gh[psour]_[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*|github_pat_[A-Za-z0-9_]+)`)
	// A bare JWT (three base64url segments, the first two JSON objects: "eyJ" is `{"`): an App's
	// JWT mints installation tokens for ten minutes, a Kubernetes service-account token is one.
	jwtRE = regexp.MustCompile(`\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*`)
	// A whole PEM block, or a BEGIN line whose END was cut off (a truncated log).
	pemRE    = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]{1,64}-----(?s:.*?)(?:-----END [A-Z0-9 ]{1,64}-----|\z)`)
	pemEndRE = regexp.MustCompile(`-----END [A-Z0-9 ]{1,64}-----`)
	// YAML / env keys whose value is a credential in kubeconfigs, talosconfigs, Talos secrets
	// bundles and machine configs; the value is everything to the end of the line.
	keyedRE = regexp.MustCompile(`(?i)((?:^|[\s"'{,])(?:client-key-data|client-certificate-data|token|id-token|refresh-token|password|secret|bootstraptoken|aescbcencryptionsecret|secretboxencryptionsecret|private[_-]?key|scw_secret_key|aws_secret_access_key|secret_access_key|poc_app_private_key|github_token|age_identity)["']?\s*[:=]\s*["']?)([^\s"',}]+)`)
	// "key:" alone is common YAML (an object key, an image key); in Talos crt/key pairs its value
	// is long base64, which is what makes it a secret.
	talosKeyRE = regexp.MustCompile(`((?:^|[\s"'{,])key["']?\s*:\s*["']?)([A-Za-z0-9+/]{16,}={0,2})`)
	// age identities (the private half of an age key).
	ageRE = regexp.MustCompile(`AGE-SECRET-KEY-1[0-9A-Z]+`)
	// Authorization headers.
	authRE = regexp.MustCompile(`(?i)((?:authorization|x-auth-token)\s*:\s*(?:bearer|token|basic)?\s*)([^\s"',]+)`)
	// Candidate base64 runs, checked by isKeyMaterial.
	b64RE = regexp.MustCompile(`[A-Za-z0-9+/_-]{43,}={0,2}`)
)

// Redact returns s with every secret it recognizes replaced by Redacted: GitHub tokens, PEM
// blocks, age identities, credential-valued keys (kubeconfig client-key-data /
// client-certificate-data / token, Talos crt/key pairs' key:, bootstrap tokens, encryption
// secrets, Scaleway and S3 secret keys), Authorization headers, and base64 runs that decode to at
// least 32 bytes of key material. Presigned URLs are kept on purpose: they point to ciphertext.
func Redact(s string) string {
	// Repeat until nothing changes, so that no replacement can leave a new match behind.
	for range 4 {
		r := redactOnce(s)
		if r == s {
			return r
		}
		s = r
	}
	return s
}

// ContainsSecret reports whether Redact would change s.
func ContainsSecret(s string) bool { return Redact(s) != s }

func redactOnce(s string) string {
	// The tail of a cut log may start inside a PEM block: everything up to an END line that has
	// no BEGIN before it is the rest of a key.
	if end := pemEndRE.FindStringIndex(s); end != nil {
		if begin := strings.Index(s, "-----BEGIN "); begin < 0 || begin > end[0] {
			s = Redacted + s[end[1]:]
		}
	}
	// Cheap literal checks first: the regexps are linear but slow on long logs.
	if strings.Contains(s, "-----BEGIN ") {
		s = pemRE.ReplaceAllString(s, Redacted)
	}
	if strings.Contains(s, "gh") || strings.Contains(s, "github_pat_") {
		s = ghTokenRE.ReplaceAllString(s, Redacted)
	}
	if strings.Contains(s, "eyJ") {
		s = jwtRE.ReplaceAllString(s, Redacted)
	}
	if strings.Contains(s, "AGE-SECRET-KEY-1") {
		s = ageRE.ReplaceAllString(s, Redacted)
	}
	lower := strings.ToLower(s)
	if strings.Contains(lower, "authorization") || strings.Contains(lower, "x-auth-token") {
		s = authRE.ReplaceAllStringFunc(s, func(m string) string { return replaceValue(authRE, m) })
	}
	if strings.ContainsAny(s, ":=") && containsAny(lower, keyedWords) {
		s = keyedRE.ReplaceAllStringFunc(s, func(m string) string { return replaceValue(keyedRE, m) })
	}
	if strings.Contains(lower, "key") {
		s = talosKeyRE.ReplaceAllStringFunc(s, func(m string) string { return replaceValue(talosKeyRE, m) })
	}
	var out strings.Builder
	last := 0
	for _, loc := range b64RE.FindAllStringIndex(s, -1) {
		m := s[loc[0]:loc[1]]
		// "SHA256:<43 base64>" is an SSH fingerprint (a digest of a public key), not a key.
		if strings.HasSuffix(s[:loc[0]], "SHA256:") || !isKeyMaterial(m) {
			continue
		}
		out.WriteString(s[last:loc[0]])
		out.WriteString(Redacted)
		last = loc[1]
	}
	if last == 0 {
		return s
	}
	out.WriteString(s[last:])
	return out.String()
}

// replaceValue keeps the key part (group 1) and replaces the value (group 2), unless the value
// is already redacted or a placeholder that carries no secret.
func replaceValue(re *regexp.Regexp, m string) string {
	sub := re.FindStringSubmatch(m)
	if len(sub) < 3 {
		return m
	}
	v := sub[2]
	if strings.HasPrefix(v, Redacted) || harmlessValue(v) {
		return m
	}
	return sub[1] + Redacted
}

// harmlessValue: values of credential-named keys that are not secrets (empty markers, booleans,
// references to where the secret lives, template placeholders) so that docs and logs stay
// readable.
func harmlessValue(v string) bool {
	l := strings.ToLower(strings.Trim(v, "[]"))
	switch l {
	case "", "true", "false", "null", "~", "none", "redacted", "***", "<redacted>", "-", "|", ">":
		return true
	}
	if strings.HasPrefix(v, "${") || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "<") || strings.HasPrefix(v, "[") {
		return true
	}
	if strings.Trim(v, "*x.") == "" {
		return true
	}
	// Prose after a credential word ("token: could not refresh …", "password: required"): a
	// short run of lowercase letters is a word of an error message. No secret the bot handles
	// (tokens, keys, generated passwords) is one.
	if len(v) <= 8 && strings.Trim(v, "abcdefghijklmnopqrstuvwxyz") == "" {
		return true
	}
	return false
}

// isKeyMaterial decides whether a base64 run is a key: a hex digest (image and schematic ids)
// never is; otherwise it must decode (std or URL alphabet) to ≥ 32 bytes that are a PEM block, a
// DER private key, an OpenSSH private key, or exactly 32 or 64 bytes (raw symmetric, X25519 and
// Ed25519 keys, Talos encryption secrets). Public SSH keys ("ssh-ed25519 AAAA…") decode to a
// key-type prefix and are left alone.
func isKeyMaterial(run string) bool {
	if isHex(strings.TrimRight(run, "=")) {
		return false
	}
	raw := decodeB64(run)
	if len(raw) < 32 {
		return false
	}
	switch {
	case bytes.Contains(raw, []byte("-----BEGIN ")):
		return true
	case bytes.HasPrefix(raw, []byte("openssh-key-v1\x00")):
		return true
	case len(raw) > 11 && raw[0] == 0 && raw[1] == 0 && raw[2] == 0 && bytes.HasPrefix(raw[4:], []byte("ssh-")):
		return false // an SSH public key blob
	case len(raw) == 32 || len(raw) == 64:
		return true
	}
	if _, err := x509.ParsePKCS8PrivateKey(raw); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PrivateKey(raw); err == nil {
		return true
	}
	if _, err := x509.ParseECPrivateKey(raw); err == nil {
		return true
	}
	return false
}

// keyedWords are the stems of keyedRE's names: one of them must be present for it to match.
var keyedWords = []string{"key", "token", "password", "secret", "certificate-data"}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func decodeB64(s string) []byte {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	// A run may carry a few extra characters at either end (it is cut out of free text): try
	// the longest prefix of a valid length.
	t := strings.TrimRight(s, "=")
	t = t[:len(t)-len(t)%4]
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(t); err == nil {
			return b
		}
	}
	return nil
}
