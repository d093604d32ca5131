package statestore

import (
	"strings"
	"testing"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	good := newKey(t)
	cases := []struct {
		name      string
		url, key  string
		wantErr   string // "" = valid
		mustNotIn string
	}{
		{"valid s3", "s3://b?endpoint=https://s3.fr-par.scw.cloud&region=fr-par&use_path_style=true", good, "", ""},
		{"valid file", "file:///var/lib/pocbot", good, "", ""},
		{"missing url", "", good, "POC_STATE_URL is not set", ""},
		{"bad scheme", "gs://b", good, `scheme "gs"`, ""},
		{"relative file", "file://rel/dir", good, "absolute path", ""},
		{"s3 without bucket", "s3://?region=fr-par", good, "names no bucket", ""},
		{"missing key", "file:///x", "", "POC_STATE_KEY is not set", ""},
		{"empty base64key", "file:///x", "base64key://", "empty base64key://", ""},
		{"short key", "file:///x", "base64key://c2hvcnQ=", "32 bytes", "c2hvcnQ"},
		{"unknown keeper", "file:///x", "vault://k", `scheme "vault"`, ""},
		{"not a URL", "file:///x", "just-a-secret-string", "not a secrets URL", "just-a-secret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{EnvStateURL: tc.url, EnvStateKey: tc.key}
			cfg, err := ConfigFromEnv(func(k string) string { return env[k] })
			if tc.wantErr == "" {
				if err != nil || cfg.StateURL != tc.url || cfg.KeyURL != tc.key {
					t.Fatalf("got %+v, %v", cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "example") {
				t.Fatalf("error shows no valid example: %v", err)
			}
			if tc.mustNotIn != "" && strings.Contains(err.Error(), tc.mustNotIn) {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
	// Open refuses the empty key too (WithBucket or not), before gocloud could invent one.
	if _, err := Open(t.Context(), Config{StateURL: "file://" + t.TempDir(), KeyURL: "base64key://"}); err == nil {
		t.Fatal("Open accepted an empty base64key://")
	}
}
