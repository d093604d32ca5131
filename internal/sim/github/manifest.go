package github

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// The GitHub App manifest flow, both halves GitHub plays:
//
//   - the web form: POST {github.com}/settings/apps/new or /organizations/{org}/settings/apps/new
//     with a form field `manifest` (JSON) and `state` in the query. The stand-in stands for the user
//     clicking "Create GitHub App": it validates the manifest, registers the App with a fresh RSA key,
//     and redirects (302) to the manifest's redirect_url with ?code=…&state=…;
//   - the API: POST /app-manifests/{code}/conversions, no authentication, answers 201 with the App
//     (the `integration` schema) plus client_id, client_secret, webhook_secret (null without a
//     webhook) and pem; the code works once and for one hour; an unknown, used or expired code is 404.
//
// Contract sources: docs.github.com "Registering a GitHub App from a manifest"
// (https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
// the two form URLs, the `manifest` field, `state`, the redirect with `code`, the one-hour expiry, the
// manifest parameters (url required; hook_attributes.url required when hook_attributes is given;
// name at most 34 characters per "Registering a GitHub App"). The conversion's response shape:
// github/rest-api-description, descriptions/api.github.com/api.github.com.yaml, operationId
// apps/create-from-manifest (201: integration allOf {client_id, client_secret, webhook_secret
// nullable, pem}; 404; 422 validation-failed-simple), as php-api-clients/github-root's generated
// Contract/Operations/Apps/CreateFromManifest/Response/ApplicationJson/Created.php also reads it;
// go-github v88 AppConfig decodes it. Unknown manifest keys are refused (source silent: stricter
// reading chosen), so that a typo in deploy/app-manifest.json fails a test instead of being ignored.

// ManifestApp is an App registered through the manifest flow (for assertions).
type ManifestApp struct {
	ID          int64
	Slug        string
	Owner       string // "" for the user's own account
	Manifest    map[string]any
	Permissions map[string]string
	Events      []string
	KeyPEM      string // the private key the conversion handed out
}

type manifestCode struct {
	app     *ManifestApp
	expires time.Time
	used    bool
}

type manifestState struct {
	codes map[string]*manifestCode
	apps  []*ManifestApp
}

// ManifestApps returns the Apps registered through the manifest flow.
func (s *Server) ManifestApps() []ManifestApp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ManifestApp, len(s.manifest.apps))
	for i, a := range s.manifest.apps {
		out[i] = *a
	}
	return out
}

var manifestKeys = map[string]bool{"name": true, "url": true, "hook_attributes": true, "redirect_url": true, "callback_urls": true,
	"setup_url": true, "description": true, "public": true, "default_events": true, "default_permissions": true,
	"request_oauth_on_install": true, "setup_on_update": true}

func (s *Server) manifestRegister(c *call, owner string) {
	if err := c.r.ParseForm(); err != nil {
		c.w.WriteHeader(http.StatusBadRequest)
		return
	}
	state := c.r.URL.Query().Get("state")
	var m map[string]any
	if err := json.Unmarshal([]byte(c.r.PostForm.Get("manifest")), &m); err != nil {
		s.formError(c, "the manifest is not JSON: "+err.Error())
		return
	}
	for k := range m {
		if !manifestKeys[k] {
			s.formError(c, "unknown manifest key "+k)
			return
		}
	}
	str := func(k string) string { v, _ := m[k].(string); return v }
	if u, err := url.Parse(str("url")); err != nil || u.Scheme == "" || u.Host == "" {
		s.formError(c, "url is required: the homepage of the App")
		return
	}
	redirect, err := url.Parse(str("redirect_url"))
	if err != nil || redirect.Scheme == "" || redirect.Host == "" {
		s.formError(c, "redirect_url is required for the manifest flow")
		return
	}
	name := str("name")
	if name == "" || utf8.RuneCountInString(name) > 34 {
		s.formError(c, "name must be 1 to 34 characters")
		return
	}
	var events []string
	if ev, ok := m["default_events"].([]any); ok {
		for _, e := range ev {
			events = append(events, e.(string))
		}
	}
	if h, ok := m["hook_attributes"].(map[string]any); ok {
		if u, _ := h["url"].(string); u == "" {
			s.formError(c, "hook_attributes.url is required when hook_attributes is given")
			return
		}
	} else if len(events) > 0 {
		s.formError(c, "default_events need a webhook (hook_attributes.url)")
		return
	}
	perms := map[string]string{}
	if p, ok := m["default_permissions"].(map[string]any); ok {
		for k, v := range p {
			perms[k], _ = v.(string)
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		c.fail(http.StatusInternalServerError, "key generation failed")
		return
	}
	s.nextID++
	app := &ManifestApp{ID: s.nextID, Slug: slugify(name), Owner: owner, Manifest: m, Permissions: perms, Events: events,
		KeyPEM: string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))}
	s.manifest.apps = append(s.manifest.apps, app)
	code := randomHex(20)
	if s.manifest.codes == nil {
		s.manifest.codes = map[string]*manifestCode{}
	}
	s.manifest.codes[code] = &manifestCode{app: app, expires: s.now().Add(time.Hour)}
	q := redirect.Query()
	q.Set("code", code)
	if state != "" {
		q.Set("state", state)
	}
	redirect.RawQuery = q.Encode()
	c.status = http.StatusFound
	http.Redirect(c.w, c.r, redirect.String(), http.StatusFound)
}

func (s *Server) formError(c *call, msg string) {
	c.status = http.StatusUnprocessableEntity
	c.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c.w.WriteHeader(http.StatusUnprocessableEntity)
	_, _ = c.w.Write([]byte(msg + "\n"))
}

func (s *Server) manifestConversion(c *call, code string) {
	mc, ok := s.manifest.codes[code]
	if !ok || mc.used || s.now().After(mc.expires) {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	mc.used = true
	a := mc.app
	ownerLogin, ownerType := a.Owner, "Organization"
	if ownerLogin == "" {
		ownerLogin, ownerType = "octocat", "User"
	}
	events := a.Events
	if events == nil {
		events = []string{}
	}
	var webhookSecret any // null: the manifest has no webhook
	if _, ok := a.Manifest["hook_attributes"]; ok {
		webhookSecret = randomHex(20)
	}
	now := s.now().UTC().Format(time.RFC3339)
	c.json(http.StatusCreated, map[string]any{
		"id": a.ID, "slug": a.Slug, "node_id": "I_" + randomHex(8), "client_id": "Iv23" + randomHex(8),
		"owner": map[string]any{"login": ownerLogin, "id": 1, "type": ownerType},
		"name":  a.Manifest["name"], "description": a.Manifest["description"], "external_url": a.Manifest["url"],
		"html_url": "https://github.com/apps/" + a.Slug, "created_at": now, "updated_at": now,
		"permissions": a.Permissions, "events": events, "installations_count": 0,
		"client_secret": randomHex(20), "webhook_secret": webhookSecret, "pem": a.KeyPEM,
	})
}

func slugify(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
