package statestore

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"

	"gocloud.dev/secrets"
	"gocloud.dev/secrets/localsecrets"

	"github.com/pocbot/pocbot/internal/settings"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvStateURL = "POC_STATE_URL"
	EnvStateKey = "POC_STATE_KEY"
)

const (
	exampleStateURL = "s3://BUCKET?endpoint=https://s3.fr-par.scw.cloud&region=fr-par&use_path_style=true or file:///var/lib/pocbot/state"
	exampleKeyURL   = "base64key://$(openssl rand 32 | base64 | tr '+/' '-_')"
)

// NewKeyURL is a fresh POC_STATE_KEY: a base64key:// URL of 32 random bytes (localsecrets' key),
// in the URL-safe base64 its keeper reads.
func NewKeyURL() (string, error) {
	k, err := localsecrets.NewRandomKey()
	if err != nil {
		return "", fmt.Errorf("statestore: random state key: %w", err)
	}
	return "base64key://" + base64.URLEncoding.EncodeToString(k[:]), nil
}

// Config says where the state lives and which key protects it.
type Config struct {
	StateURL string // gocloud.dev/blob URL: s3://… or file:///…
	KeyURL   string // gocloud.dev/secrets URL, e.g. base64key://… (never logged)
}

// ConfigFromEnv reads POC_STATE_URL and POC_STATE_KEY and validates them.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	env := settings.Env(getenv)
	cfg := Config{StateURL: env.String("state-url"), KeyURL: env.String("state-key")}
	if err := cfg.validateStateURL(); err != nil {
		return Config{}, err
	}
	if err := cfg.validateKeyURL(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Validate checks both settings without opening anything.
func (c Config) Validate() error {
	if err := c.validateStateURL(); err != nil {
		return err
	}
	return c.validateKeyURL()
}

func (c Config) validateStateURL() error {
	if c.StateURL == "" {
		return fmt.Errorf("%s is not set: give the bucket of the state, example: %s", EnvStateURL, exampleStateURL)
	}
	u, err := url.Parse(c.StateURL)
	if err != nil {
		return fmt.Errorf("%s is not a URL (%v); example: %s", EnvStateURL, err, exampleStateURL)
	}
	switch u.Scheme {
	case "s3":
		if u.Host == "" {
			return fmt.Errorf("%s %q names no bucket; example: %s", EnvStateURL, redactURL(u), exampleStateURL)
		}
	case "file":
		p := fileURLPath(u)
		if p == "" || !filepath.IsAbs(p) {
			return fmt.Errorf("%s %q needs an absolute path (file:///abs/dir); example: %s", EnvStateURL, redactURL(u), exampleStateURL)
		}
	default:
		return fmt.Errorf("%s scheme %q is not supported (s3 or file); example: %s", EnvStateURL, u.Scheme, exampleStateURL)
	}
	return nil
}

func (c Config) validateKeyURL() error {
	if c.KeyURL == "" {
		return fmt.Errorf("%s is not set: give the key that encrypts the state, example: %s", EnvStateKey, exampleKeyURL)
	}
	// Never echo the value: it is the key.
	u, err := url.Parse(c.KeyURL)
	if err != nil || u.Scheme == "" {
		return fmt.Errorf("%s is not a secrets URL; example: %s", EnvStateKey, exampleKeyURL)
	}
	if !secrets.DefaultURLMux().ValidKeeperScheme(u.Scheme) {
		return fmt.Errorf("%s scheme %q has no keeper linked into this binary (use base64key); example: %s", EnvStateKey, u.Scheme, exampleKeyURL)
	}
	if u.Scheme == localsecrets.Scheme {
		if u.Host == "" {
			// gocloud would invent a random key: every state written with it is lost for good.
			return fmt.Errorf("%s is an empty base64key:// (gocloud would make up a random key and the state could never be read again); example: %s", EnvStateKey, exampleKeyURL)
		}
		if len(u.Query()) > 0 || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("%s: base64key:// takes the key only, no path or query; example: %s", EnvStateKey, exampleKeyURL)
		}
		if _, err := localsecrets.Base64Key(u.Host); err != nil {
			return fmt.Errorf("%s: base64key:// must hold 32 bytes in URL-safe base64 (- and _ instead of + and /); example: %s", EnvStateKey, exampleKeyURL)
		}
	}
	return nil
}

// fileURLPath returns the directory of a file:// URL (file:///abs/dir).
func fileURLPath(u *url.URL) string {
	if u.Host != "" && u.Host != "localhost" {
		return ""
	}
	return filepath.FromSlash(u.Path)
}

// redactURL drops the user info (an S3 URL may carry none, but never print one that does).
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
