package github

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
)

// TokenFormat is the shape of the installation tokens the stand-in mints.
type TokenFormat int

const (
	// TokenStateless is GitHub's current format, ghs_<app id>_<JWT>, about 520 characters: the
	// description of apps/create-installation-access-token (github/rest-api-description,
	// descriptions/api.github.com/api.github.com.yaml) announces it; GitHub's changelog of
	// 2026-10-02 ("Stateless GitHub App installation tokens rolled out") makes it the default.
	TokenStateless TokenFormat = iota
	// TokenClassic is the former format: ghs_ and 36 alphanumerics, 40 characters.
	TokenClassic
)

// tokenMinter makes token values. The stateless JWT is signed with a key only the stand-in
// knows, as GitHub signs with "a GitHub-internal issuer" that clients cannot validate; the
// stand-in still looks tokens up by their whole value, so a cut token is unknown.
type tokenMinter struct {
	format TokenFormat
	key    []byte
}

func newTokenMinter(f TokenFormat) (tokenMinter, error) {
	if f != TokenStateless && f != TokenClassic {
		return tokenMinter{}, fmt.Errorf("sim/github: unknown token format %d", f)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return tokenMinter{}, fmt.Errorf("sim/github: token signing key: %w", err)
	}
	return tokenMinter{format: f, key: key}, nil
}

// mintTokenValue returns t's value in the configured format.
func (s *Server) mintTokenValue(t *token) string {
	if s.minter.format == TokenClassic {
		return classicToken()
	}
	repos := make([]string, 0, len(t.repos))
	for r := range t.repos {
		repos = append(repos, r)
	}
	sort.Strings(repos)
	claims := map[string]any{
		"iss":             "https://api.github.com/sim",
		"app_id":          s.appID,
		"installation_id": t.installationID,
		"iat":             s.now().Unix(),
		"exp":             t.expires.Unix(),
		"jti":             randomHex(16),
		"permissions":     t.perms,
		"repositories":    repos,
	}
	// What a real one carries is GitHub's business ("will vary based on the data stored within
	// it"); these claims give the announced length of about 520 characters.
	return "ghs_" + strconv.FormatInt(s.appID, 10) + "_" + s.minter.sign(claims)
}

func (m tokenMinter) sign(claims map[string]any) string {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	in := enc(map[string]string{"alg": "HS256", "typ": "JWT", "kid": hex.EncodeToString(m.key[:4])}) + "." + enc(claims)
	mac := hmac.New(sha256.New, m.key)
	mac.Write([]byte(in))
	return in + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// classicToken returns "ghs_" and 36 random alphanumerics, GitHub's former shape.
func classicToken() string {
	b := []byte("ghs_")
	n := big.NewInt(int64(len(tokenAlphabet)))
	for range 36 {
		i, err := rand.Int(rand.Reader, n)
		if err != nil {
			panic(err)
		}
		b = append(b, tokenAlphabet[i.Int64()])
	}
	return string(b)
}
