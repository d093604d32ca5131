package talos

import (
	"cmp"
	"context"
	"github.com/pocbot/pocbot/internal/settings"
	"strings"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// freshCluster generates the configs of a cluster with its own secrets (the stand-ins group nodes
// into clusters by CA, so a test that bootstraps must not share a bundle with another test).
func freshCluster(t *testing.T, talosVersion, workerDisk string) (Input, *Configs) {
	t.Helper()

	secrets, err := NewSecrets(cmp.Or(talosVersion, DefaultTalosVersion), settings.ServiceAccountKeyECDSA)
	if err != nil {
		t.Fatal(err)
	}

	in := baseInput(t)
	in.TalosVersion, in.Secrets, in.WorkerInstallDisk = talosVersion, secrets, workerDisk
	in.ControlPlaneIPs = []string{loopback(), loopback(), loopback()}
	in.Endpoint = "https://" + in.ControlPlaneIPs[0] + ":6443"

	cfgs, err := Generate(t.Context(), in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}

	return in, cfgs
}

// A real control plane refuses Bootstrap with FailedPrecondition until its container runtime runs
// ("bootstrap is not available yet") and its clock is synchronized ("time is not in sync yet"):
// the bot waits it out within its deadline instead of failing the first time.
func TestBootstrapWaitsUntilTheNodeIsReady(t *testing.T) {
	t.Parallel()

	in, cfgs := freshCluster(t, "", "/dev/sda")
	cp := startNode(t, simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane,
		CRIDelay: 600 * time.Millisecond, TimeSyncDelay: 600 * time.Millisecond})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	t0 := time.Now()
	if err := Bootstrap(ctx, cp.APIAddr(), cfgs.Talosconfig); err != nil {
		t.Fatalf("Bootstrap of a node not ready yet: %v", err)
	}

	if d := time.Since(t0); d < time.Second {
		t.Errorf("Bootstrap returned after %s, before the node could accept it (1.2 s)", d)
	}

	// Within a deadline: a node that never gets ready fails with the node's own words.
	_, cfgs2 := freshCluster(t, "", "/dev/sda")
	slow := startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "cloud", UserData: cfgs2.ControlPlane, CRIDelay: time.Hour})
	sctx, scancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer scancel()

	if err := Bootstrap(sctx, slow.APIAddr(), cfgs2.Talosconfig); err == nil || !strings.Contains(err.Error(), "bootstrap is not available yet") {
		t.Errorf("Bootstrap of a node never ready = %v, want a deadline error naming its refusal", err)
	}
}

// Once configured, a node's API takes only clients with a certificate: an insecure apply on it
// must fail at once (saying why), not retry the handshake for the whole wait (10 minutes).
func TestInsecureApplyOnAConfiguredNodeFailsFast(t *testing.T) {
	t.Parallel()

	ctx, cfgs, w := bootstrappedWithWorker(t)

	if _, err := ApplyInsecure(ctx, w.APIAddr(), cfgs.Worker); err != nil {
		t.Fatalf("first apply: %v", err)
	}

	if err := WaitTrusted(ctx, w.APIAddr(), cfgs.Talosconfig); err != nil {
		t.Fatal(err)
	}

	t0 := time.Now()
	_, err := ApplyInsecure(ctx, w.APIAddr(), cfgs.Worker)

	if d := time.Since(t0); d > 20*time.Second || err == nil || !strings.Contains(err.Error(), "client certificate") {
		t.Errorf("insecure apply on a configured node = %v after %s, want a fast error naming the client certificate", err, d.Round(time.Millisecond))
	}
}

// The install-disk check runs for both contracts (the 1.14 one names the disk in the
// UnattendedInstallConfig document, not .machine.install.disk) and reads the node's disks from
// its block.Disk resources, not from StorageService.Disks (kept for compatibility only).
func TestInstallDiskCheckedForBothContracts(t *testing.T) {
	t.Parallel()

	for _, v := range []string{"", "v1.14.1"} {
		t.Run("talos "+cmp.Or(v, DefaultTalosVersion), func(t *testing.T) {
			t.Parallel()

			_, cfgs := freshCluster(t, v, "/dev/nvme1n1")
			w := startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/sda", "/dev/nvme0n1"}, SystemDisk: "/dev/sda"})

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			_, err := ApplyInsecure(ctx, w.APIAddr(), cfgs.Worker)
			if err == nil || !strings.Contains(err.Error(), "install disk") || !strings.Contains(err.Error(), "/dev/nvme0n1") {
				t.Errorf("apply with an absent install disk = %v, want the bot's own check listing the node's disks", err)
			}

			if n := w.Calls("/machine.MachineService/ApplyConfiguration"); n != 0 {
				t.Errorf("the config was sent (%d ApplyConfiguration calls) although its disk is absent", n)
			}

			if w.Calls("/cosi.resource.State/List") == 0 || w.Calls("/storage.StorageService/Disks") != 0 {
				t.Errorf("disks read with %d COSI lists and %d StorageService.Disks calls; want block.Disk resources only",
					w.Calls("/cosi.resource.State/List"), w.Calls("/storage.StorageService/Disks"))
			}
		})
	}
}

// bootstrappedWithWorker starts a fresh cluster's bootstrapped control plane and a worker in
// maintenance mode (a worker is trusted only once it reached the Kubernetes API and trustd:
// bootstrap first); ctx ends after a minute.
func bootstrappedWithWorker(t *testing.T) (context.Context, *Configs, *simtalos.Node) {
	t.Helper()

	in, cfgs := freshCluster(t, "", "/dev/sda")
	startNode(t, simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane})
	w := startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/sda"}})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)

	if err := Bootstrap(ctx, in.ControlPlaneIPs[0]+":50000", cfgs.Talosconfig); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	return ctx, cfgs, w
}
