package clusterops_test

import (
	"context"
	"log/slog"
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
	}{
		{name: "never shown, passwordless sudo", opts: world.Options{HideRescueServer: true, RescueSudoNoPassword: true}},
		{name: "shown late, sudo wants the password", opts: world.Options{RescueServerDelay: 40 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ctx := start(t, 3*time.Minute, tc.opts)
			res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "rescue-1", Spec: e.spec, TTL: time.Hour,
				Repository: "acme/shop", Number: 1, Kind: "issue", RequestedBy: "alice", Command: "up"})
			if err != nil {
				t.Fatalf("up: %v", err)
			}
			if res.Header.Phase != string(lifecycle.PhaseReady) || res.State.Outputs[cluster.OutWorkerDisk] != "/dev/sda" {
				t.Fatalf("after up: phase %s, outputs %v", res.Header.Phase, res.State.Outputs)
			}
		})
	}

	// Never shown while sudo wants it: the up stops after its bounded wait, saying what is missing.
	t.Run("never shown, sudo wants the password", func(t *testing.T) {
		w, err := world.Start(t.Context(), world.Options{Dir: t.TempDir(), S3: "file", TimeFactor: 0.005, HideRescueServer: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		p := worldtest.New(t, w, worldtest.Options{Log: slog.New(slog.NewTextHandler(testWriter{t}, nil)), RescuePasswordWait: 300 * time.Millisecond})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		_, err = p.Ops.Up(ctx, clusterops.Intent{Cluster: "rescue-2", Spec: p.Spec, TTL: time.Hour,
			Repository: "acme/shop", Number: 2, Kind: "issue", RequestedBy: "alice", Command: "up"})
		if err == nil || !strings.Contains(err.Error(), "sudo wants the rescue password") || !strings.Contains(err.Error(), "rescue_server.password still empty after 300ms") {
			t.Fatalf("up: %v, want the missing rescue password named", err)
		}
	})
}
