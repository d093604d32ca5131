package github

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// GitHub Actions' OpenID Connect tokens: a job that may (permissions: id-token: write) asks the
// runner's token service for a JWT naming its repository, run and event, with an audience of its
// choosing; anyone can check it against the issuer's published keys. pocbot uses one to bind a
// pull request's kubeconfig request to the run that made it (internal/prkube).
//
// The token request is actions/toolkit's (packages/core/src/oidc-utils.ts): GET
// ACTIONS_ID_TOKEN_REQUEST_URL + "&audience=" + the URL-encoded audience, with
// "Authorization: Bearer ACTIONS_ID_TOKEN_REQUEST_TOKEN"; the answer is JSON {"value": token}.
// The claims are github/docs content/actions/reference/security/oidc.md's: iss
// https://token.actions.githubusercontent.com (GHES: https://HOSTNAME/_services/token), the
// keys at the issuer's /.well-known/openid-configuration jwks_uri, and repository,
// repository_id, run_id, run_attempt, event_name, ref, actor, actor_id … as strings.

// DefaultOIDCIssuer is GitHub.com's Actions token issuer.
const DefaultOIDCIssuer = "https://token.actions.githubusercontent.com"

// OIDCIssuer is the Actions token issuer of the GitHub at serverURL (GITHUB_SERVER_URL):
// GitHub.com's, or a GitHub Enterprise Server's https://HOST/_services/token.
func OIDCIssuer(serverURL string) string {
	s := strings.TrimRight(strings.TrimSpace(serverURL), "/")
	if s == "" || s == DefaultWebURL {
		return DefaultOIDCIssuer
	}
	return s + "/_services/token"
}

// ErrNoIDToken says the job may not ask for an OIDC token: its workflow does not grant
// id-token: write (or it runs for a fork's pull request, which never gets one).
var ErrNoIDToken = errors.New("the job cannot ask for an OIDC token: ACTIONS_ID_TOKEN_REQUEST_URL is not set; grant `permissions: id-token: write` to the job (a fork's pull request never gets it)")

// RequestIDToken asks the runner's token service for an OIDC token with audience.
func RequestIDToken(ctx context.Context, hc *http.Client, getenv func(string) string, audience string) (string, error) {
	reqURL, reqToken := getenv("ACTIONS_ID_TOKEN_REQUEST_URL"), getenv("ACTIONS_ID_TOKEN_REQUEST_TOKEN")
	if reqURL == "" || reqToken == "" {
		return "", ErrNoIDToken
	}
	sep := "&"
	if !strings.Contains(reqURL, "?") {
		sep = "?"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reqURL+sep+"audience="+url.QueryEscape(audience), nil)
	if err != nil {
		return "", fmt.Errorf("github: OIDC token request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+reqToken)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("github: ask the runner for an OIDC token: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("github: read the OIDC token answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("github: the runner refused an OIDC token: HTTP %d (does the job have permissions: id-token: write?)", resp.StatusCode)
	}
	var out struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Value == "" {
		return "", errors.New("github: the runner's OIDC answer holds no token (no \"value\")")
	}
	return out.Value, nil
}

// IDClaims are the claims pocbot reads from an Actions OIDC token (the docs' custom claims are
// strings; numbers are parsed here).
type IDClaims struct {
	Issuer       string
	Audience     []string
	Expires      time.Time
	Repository   string
	RepositoryID int64
	RunID        int64
	RunAttempt   int
	EventName    string
	Ref          string
	Actor        string
	ActorID      int64
	Workflow     string
	RunnerEnv    string
}

// rawClaims decodes the token's payload; the checks are Verify's (with its clock), not
// golang-jwt's (time.Now).
type rawClaims struct {
	Issuer       string           `json:"iss"`
	Audience     jwt.ClaimStrings `json:"aud"`
	Expires      *jwt.NumericDate `json:"exp"`
	NotBefore    *jwt.NumericDate `json:"nbf"`
	IssuedAt     *jwt.NumericDate `json:"iat"`
	Repository   string           `json:"repository"`
	RepositoryID string           `json:"repository_id"`
	RunID        string           `json:"run_id"`
	RunAttempt   string           `json:"run_attempt"`
	EventName    string           `json:"event_name"`
	Ref          string           `json:"ref"`
	Actor        string           `json:"actor"`
	ActorID      string           `json:"actor_id"`
	Workflow     string           `json:"workflow"`
	RunnerEnv    string           `json:"runner_environment"`
}

func (rawClaims) Valid() error { return nil }

// OIDCVerifier checks Actions OIDC tokens of one issuer.
type OIDCVerifier struct {
	Issuer string
	HTTP   *http.Client
	Now    func() time.Time
	// Leeway absorbs clock skew on nbf, iat and exp (default 1 minute).
	Leeway time.Duration
}

// Verify checks token's signature (RS256, a key of the issuer's JWKS), issuer, audience and dates,
// and returns its claims.
func (v *OIDCVerifier) Verify(ctx context.Context, token, audience string) (IDClaims, error) {
	if v.Issuer == "" {
		return IDClaims{}, errors.New("github: no OIDC issuer to verify against")
	}
	keys, err := v.keys(ctx)
	if err != nil {
		return IDClaims{}, err
	}
	var rc rawClaims
	p := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}))
	_, err = p.ParseWithClaims(token, &rc, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("no key %q in the issuer's JWKS", kid)
		}
		return k, nil
	})
	if err != nil {
		return IDClaims{}, fmt.Errorf("github: the OIDC token does not verify: %w", err)
	}
	now := time.Now()
	if v.Now != nil {
		now = v.Now()
	}
	leeway := v.Leeway
	if leeway == 0 {
		leeway = time.Minute
	}
	switch {
	case rc.Issuer != v.Issuer:
		return IDClaims{}, fmt.Errorf("github: the OIDC token's issuer is %q, not %q", rc.Issuer, v.Issuer)
	case !audienceHas(rc.Audience, audience):
		return IDClaims{}, fmt.Errorf("github: the OIDC token's audience %v is not this request's", []string(rc.Audience))
	case rc.Expires == nil || !now.Before(rc.Expires.Add(leeway)):
		return IDClaims{}, errors.New("github: the OIDC token expired (or has no exp)")
	case rc.NotBefore != nil && now.Add(leeway).Before(rc.NotBefore.Time):
		return IDClaims{}, errors.New("github: the OIDC token is not valid yet (nbf)")
	case rc.IssuedAt != nil && now.Add(leeway).Before(rc.IssuedAt.Time):
		return IDClaims{}, errors.New("github: the OIDC token is issued in the future (iat)")
	}
	c := IDClaims{Issuer: rc.Issuer, Audience: rc.Audience, Expires: rc.Expires.Time, Repository: rc.Repository,
		EventName: rc.EventName, Ref: rc.Ref, Actor: rc.Actor, Workflow: rc.Workflow, RunnerEnv: rc.RunnerEnv}
	var perr error
	parse := func(name, s string) int64 {
		if s == "" {
			perr = errors.Join(perr, fmt.Errorf("claim %s is missing", name))
			return 0
		}
		var n big.Int
		if _, ok := n.SetString(s, 10); !ok || !n.IsInt64() || n.Int64() <= 0 {
			perr = errors.Join(perr, fmt.Errorf("claim %s = %q is no positive number", name, s))
			return 0
		}
		return n.Int64()
	}
	c.RepositoryID, c.RunID = parse("repository_id", rc.RepositoryID), parse("run_id", rc.RunID)
	c.RunAttempt, c.ActorID = int(parse("run_attempt", rc.RunAttempt)), parse("actor_id", rc.ActorID)
	if perr != nil {
		return IDClaims{}, fmt.Errorf("github: the OIDC token's claims: %w", perr)
	}
	return c, nil
}

func audienceHas(aud jwt.ClaimStrings, want string) bool {
	for _, a := range aud {
		if a == want {
			return true
		}
	}
	return false
}

// keys fetches the issuer's discovery document, then its JWKS, and returns its RSA keys by kid.
func (v *OIDCVerifier) keys(ctx context.Context) (map[string]*rsa.PublicKey, error) {
	hc := v.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	var disc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := getJSON(ctx, hc, strings.TrimRight(v.Issuer, "/")+"/.well-known/openid-configuration", &disc); err != nil {
		return nil, fmt.Errorf("github: the OIDC issuer's configuration: %w", err)
	}
	if disc.JWKSURI == "" || disc.Issuer != v.Issuer {
		return nil, fmt.Errorf("github: the OIDC configuration of %s names issuer %q and keys %q", v.Issuer, disc.Issuer, disc.JWKSURI)
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := getJSON(ctx, hc, disc.JWKSURI, &set); err != nil {
		return nil, fmt.Errorf("github: the OIDC issuer's keys: %w", err)
	}
	out := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		exp := 0
		for _, b := range e {
			exp = exp<<8 | int(b)
		}
		out[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("github: the OIDC issuer %s publishes no RSA key", v.Issuer)
	}
	return out, nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
