package version

import "testing"

func TestUserAgent(t *testing.T) {
	old := Version
	t.Cleanup(func() { Version = old })
	Version = "v9.8.7"
	if got := UserAgent(); got != "pocbot/v9.8.7" {
		t.Errorf("UserAgent() = %q", got)
	}
	Version = "dev"
	if got := UserAgent(); got != "pocbot/dev" {
		t.Errorf("UserAgent() of a test binary = %q, want pocbot/dev", got)
	}
}
