package wiring

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

var testChart = chart.Source{URL: "https://charts.example/c-1.0.0.tgz", SHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}

// The run's settings are read with the settings' one grammar (days included) and checked before
// anything is opened; a wrong value names its variable.
func TestReadEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    envSettings
		wantErr string
	}{
		{name: "defaults", env: nil,
			want: envSettings{region: "fr-par", rescuePort: 22, poll: provision.DefaultPollInterval, ciliumChart: talos.DefaultCiliumChart}},
		{name: "set", env: map[string]string{"SCW_DEFAULT_REGION": "nl-ams", "POC_RESCUE_SSH_PORT": "2222", "POC_POLL_INTERVAL": "100ms", "POC_LOCK_LEASE": "5s", "POC_LOCK_WAIT": "1d",
			"POC_CILIUM_CHART": testChart.String()},
			want: envSettings{region: "nl-ams", rescuePort: 2222, poll: 100 * time.Millisecond, lockLease: 5 * time.Second, lockWait: 24 * time.Hour, ciliumChart: testChart}},
		{name: "port", env: map[string]string{"POC_RESCUE_SSH_PORT": "ssh"}, wantErr: "POC_RESCUE_SSH_PORT"},
		{name: "chart without digest", env: map[string]string{"POC_CILIUM_CHART": "https://helm.cilium.io/cilium-1.18.1.tgz"}, wantErr: "POC_CILIUM_CHART"},
		{name: "not a duration", env: map[string]string{"POC_LOCK_LEASE": "soon"}, wantErr: "POC_LOCK_LEASE"},
		{name: "zero", env: map[string]string{"POC_POLL_INTERVAL": "0"}, wantErr: "not a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readEnv(func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("readEnv = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// A part that cannot be opened fails Open with its reason; what was opened before it (the state
// store) is closed on the way out (a first version panicked there, closing through a nil result).
func TestOpenFailsOnAMissingPart(t *testing.T) {
	env := map[string]string{
		"POC_STATE_URL": "file://" + t.TempDir(),
		"POC_STATE_KEY": "base64key://" + base64.URLEncoding.EncodeToString(make([]byte, 32)),
	}
	b, err := Open(t.Context(), Config{Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "SCW_ACCESS_KEY") {
		t.Fatalf("Open without Scaleway keys = %v, %v; want an error naming SCW_ACCESS_KEY", b, err)
	}
}
