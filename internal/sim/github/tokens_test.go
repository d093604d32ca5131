package github

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTokenFormats: installation tokens come in GitHub's stateless format ghs_<app id>_<JWT>
// (the default) or the classic 40-character one (selectable); either is accepted whole and only
// whole — a client that cuts a token (at 40 characters, at the JWT's first dot) is refused.
func TestTokenFormats(t *testing.T) {
	classic := regexp.MustCompile(`^ghs_[A-Za-z0-9]{36}$`)
	tests := []struct {
		name   string
		format TokenFormat
		check  func(t *testing.T, s *Server, tok string, inst int64)
	}{
		{"stateless (default)", 0, func(t *testing.T, s *Server, tok string, inst int64) {
			prefix := fmt.Sprintf("ghs_%d_", s.AppID())
			jwt, ok := strings.CutPrefix(tok, prefix)
			if !ok {
				t.Fatalf("token %.40q… does not start with %s", tok, prefix)
			}
			t.Logf("stateless token: %d characters", len(tok))
			if len(tok) < 400 || len(tok) > 700 {
				t.Errorf("token is %d characters; GitHub's are about 520", len(tok))
			}
			parts := strings.Split(jwt, ".")
			if len(parts) != 3 {
				t.Fatalf("JWT part has %d segments", len(parts))
			}
			payload, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err != nil {
				t.Fatalf("JWT payload is not base64url: %v", err)
			}
			var claims map[string]any
			if err := json.Unmarshal(payload, &claims); err != nil {
				t.Fatalf("JWT payload is not JSON: %v", err)
			}
			if claims["installation_id"] != float64(inst) || claims["app_id"] != float64(s.AppID()) {
				t.Errorf("claims %v do not name installation %d of app %d", claims, inst, s.AppID())
			}
		}},
		{"classic", TokenClassic, func(t *testing.T, s *Server, tok string, inst int64) {
			if !classic.MatchString(tok) {
				t.Fatalf("token %q is not ghs_ + 36 alphanumerics", tok)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, url := startWith(t, Options{TokenFormat: tc.format})
			inst := s.AddRepo("acme/web", "main")
			now := time.Now()
			jwt := "Bearer " + signJWT(t, s.key, map[string]any{"iss": s.AppID(), "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(5 * time.Minute).Unix()})
			r := do(t, "POST", fmt.Sprintf("%s/app/installations/%d/access_tokens", url, inst), jwt,
				map[string]any{"repositories": []string{"web"}})
			if r.status != 201 {
				t.Fatalf("mint: %d %s", r.status, r.raw)
			}
			tok := r.body["token"].(string)
			tc.check(t, s, tok, inst)
			if r := do(t, "GET", url+"/repos/acme/web", "token "+tok, nil); r.status != 200 {
				t.Fatalf("whole token refused: %d %s", r.status, r.raw)
			}
			cuts := map[string]string{}
			if len(tok) > 40 {
				cuts["first 40 characters"] = tok[:40]
			}
			if i := strings.Index(tok, "."); i > 0 {
				cuts["cut at the first dot"] = tok[:i]
			}
			for name, cut := range cuts {
				if r := do(t, "GET", url+"/repos/acme/web", "token "+cut, nil); r.status != 401 || r.body["message"] != "Bad credentials" {
					t.Errorf("%s: %d %s, want 401 Bad credentials", name, r.status, r.raw)
				}
			}
		})
	}
}
