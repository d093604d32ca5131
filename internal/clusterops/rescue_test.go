package clusterops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// TestUpWhateverRescueServerHolds: no recording shows what the API's rescue_server holds or when
// (issue 10), so an up must write the worker whether it shows the rescue credentials late or
// never: the bot logs in as "rescue" with the key it passed in ssh_key_ids, and waits for the
// password only when the rescue system's sudo wants one.
func TestUpWhateverRescueServerHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts world.Options
		wait time.Duration // for the rescue password; 0: the cluster's default
		// wantErr: what the up's error names; none: the up makes a ready cluster.
		wantErr []string
	}{
		{name: "never shown, passwordless sudo", opts: world.Options{HideRescueServer: true, RescueSudoNoPassword: true}},
		{name: "shown late, sudo wants the password", opts: world.Options{RescueServerDelay: 40 * time.Second}},
		// Never shown while sudo wants it: the up stops after its bounded wait, saying what is missing.
		{name: "never shown, sudo wants the password", opts: world.Options{HideRescueServer: true}, wait: 300 * time.Millisecond,
			wantErr: []string{"sudo wants the rescue password", "rescue_server.password still empty after 300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.TimeFactor = 0.005
			e := newEnvWith(t, tc.opts, worldtest.Options{RescuePasswordWait: tc.wait})
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "rescue-1", Spec: e.spec, TTL: time.Hour,
				Repository: "acme/shop", Number: 1, Kind: "issue", RequestedBy: "alice", Command: "up"})
			if len(tc.wantErr) > 0 {
				for _, want := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("up: %v, want an error naming %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("up: %v", err)
			}
			if res.Header.Phase != string(lifecycle.PhaseReady) || res.State.Outputs[cluster.OutWorkerDisk] != "/dev/sda" {
				t.Fatalf("after up: phase %s, outputs %v", res.Header.Phase, res.State.Outputs)
			}
		})
	}
}
