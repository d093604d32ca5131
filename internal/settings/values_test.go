package settings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/settings"
)

// Env reads a variable by its setting's name, with the table's default and grammar; a malformed
// value is an error naming the variable.
func TestEnv(t *testing.T) {
	vars := map[string]string{"POC_STICKY_INTERVAL": " 2s ", "POC_REAP_ON_EVENTS": "False", "POC_RESCUE_SSH_PORT": "ssh",
		"POC_APP_PRIVATE_KEY": "-----BEGIN KEY-----\n", "POC_LOCK_WAIT": "soon"}
	env := settings.Env(func(k string) string { return vars[k] })
	if d, err := env.Duration("sticky-interval"); d != 2*time.Second || err != nil {
		t.Errorf("sticky-interval: %v, %v", d, err)
	}
	if b, err := env.Bool("reap-on-events"); b || err != nil {
		t.Errorf("reap-on-events=False: %v, %v", b, err)
	}
	delete(vars, "POC_REAP_ON_EVENTS")
	if b, err := env.Bool("reap-on-events"); !b || err != nil {
		t.Errorf("reap-on-events unset: %v, %v; want the table's default, true", b, err)
	}
	if _, err := env.Int("rescue-ssh-port"); err == nil || !strings.Contains(err.Error(), `POC_RESCUE_SSH_PORT="ssh" is not an integer`) {
		t.Errorf("a malformed port: %v", err)
	}
	if _, err := env.Duration("lock-wait"); err == nil || !strings.Contains(err.Error(), "POC_LOCK_WAIT") {
		t.Errorf("a malformed duration: %v", err)
	}
	if got := env.String("scw-region"); got != "fr-par" {
		t.Errorf("scw-region unset: %q, want the table's default", got)
	}
	if got := env.Raw("app-private-key"); got != vars["POC_APP_PRIVATE_KEY"] {
		t.Errorf("Raw trimmed the key: %q", got)
	}
	if env.Given("state-url") || !env.Given("sticky-interval") {
		t.Error("Given: wrong")
	}
}

// Values hold each setting as its Kind's Go value; another type is a programming error.
func TestValuesSet(t *testing.T) {
	v := settings.Values{}
	v.Set("cp-count", 3)
	v.Set("admin-cidr", []string{"10.0.0.0/8"})
	v.Set("talos", "v1.14.1")
	if got := v.Names(); strings.Join(got, ",") != "admin-cidr,cp-count,talos" {
		t.Errorf("Names: %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a string for cp-count (an integer) was accepted")
		}
	}()
	v.Set("cp-count", "3")
}
