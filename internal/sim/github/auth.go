package github

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
)

// maxJWTLifetime is GitHub's bound on exp - iat for App JWTs.
const maxJWTLifetime = 10 * time.Minute

// clockSkew is how far in the future iat may be; GitHub tolerates a little drift and
// recommends back-dating iat by 60 s for the same reason.
const clockSkew = 60 * time.Second

type jwtError struct{ msg string }

func (e *jwtError) Error() string { return e.msg }

var errNotJWT = errors.New("not a JWT")

// verifyJWT checks an App JWT the way GitHub does: RS256 signature with the App's public key,
// iss = App id, iat not in the future, exp in the future and at most 10 minutes after iat.
func (s *Server) verifyJWT(raw string, now time.Time) error {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return errNotJWT
	}
	decode := func(p string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(p) }
	hb, err := decode(parts[0])
	if err != nil {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hb, &hdr) != nil || hdr.Alg != "RS256" {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	sig, err := decode(parts[2])
	if err != nil {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	cb, err := decode(parts[1])
	if err != nil {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	var claims struct {
		Iss json.RawMessage `json:"iss"`
		Iat *float64        `json:"iat"`
		Exp *float64        `json:"exp"`
	}
	if err := json.Unmarshal(cb, &claims); err != nil {
		return &jwtError{"A JSON web token could not be decoded"}
	}
	// GitHub accepts the App id as a number or a string (and the client id, not emulated).
	iss := strings.Trim(string(claims.Iss), `"`)
	if iss != strconv.FormatInt(s.appID, 10) {
		return &jwtError{"Integration not found"}
	}
	if claims.Iat == nil {
		return &jwtError{"Missing 'issued at' claim ('iat') in the supplied JWT."}
	}
	if claims.Exp == nil {
		return &jwtError{"Missing 'expiration time' claim ('exp') in the supplied JWT."}
	}
	iat := time.Unix(int64(*claims.Iat), 0)
	exp := time.Unix(int64(*claims.Exp), 0)
	if iat.After(now.Add(clockSkew)) {
		return &jwtError{"'Issued at' claim ('iat') must be an Integer representing a time in the past."}
	}
	if !exp.After(now) {
		return &jwtError{"'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires."}
	}
	if exp.Sub(iat) > maxJWTLifetime {
		return &jwtError{"'Expiration time' claim ('exp') is too far in the future."}
	}
	return nil
}

// permLevel orders access levels so that a grant can be compared with a request.
func permLevel(v string) int {
	switch v {
	case "read":
		return 1
	case "write":
		return 2
	case "admin":
		return 3
	}
	return 0
}
