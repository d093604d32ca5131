package talos

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	blockpb "github.com/siderolabs/talos/pkg/machinery/api/resource/definitions/block"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pocbot/pocbot/internal/settings"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// A rerun of the worker's configuration finds it answering over mutual TLS and applies nothing.
func TestConfigureSkipsANodeThatAlreadyTrustsTheCluster(t *testing.T) {
	t.Parallel()

	ctx, cfgs, w := bootstrappedWithWorker(t)

	if _, err := Configure(ctx, w.APIAddr(), Direct(w.APIAddr()), cfgs.Worker, cfgs.Talosconfig); err != nil {
		t.Fatalf("first Configure: %v", err)
	}

	if n := w.Calls("/machine.MachineService/ApplyConfiguration"); n != 1 {
		t.Fatalf("first Configure made %d ApplyConfiguration calls, want 1", n)
	}

	t0 := time.Now()
	if _, err := Configure(ctx, w.APIAddr(), Direct(w.APIAddr()), cfgs.Worker, cfgs.Talosconfig); err != nil {
		t.Fatalf("Configure again: %v", err)
	}

	if n := w.Calls("/machine.MachineService/ApplyConfiguration"); n != 1 || time.Since(t0) > 20*time.Second {
		t.Errorf("Configure of a configured node: %d ApplyConfiguration calls in all, %s", n, time.Since(t0))
	}
}

func TestInstallDiskMatchesBothForms(t *testing.T) {
	t.Parallel()

	disk := func(p string, system bool) Disk {
		return Disk{Path: p, System: system, Spec: &blockpb.DiskSpec{DevPath: p}}
	}

	for _, v := range []string{"", "v1.14.1"} {
		_, cfgs := freshCluster(t, v, "/dev/nvme0n1")

		cfg, err := configloader.NewFromBytes(cfgs.Worker)
		if err != nil {
			t.Fatal(err)
		}

		for _, tt := range []struct {
			disks   []Disk
			want    string
			wantErr bool
		}{
			{[]Disk{disk("/dev/nvme0n1", false), disk("/dev/sda", true)}, "/dev/nvme0n1", false},
			{[]Disk{disk("/dev/nvme0n1", true)}, "/dev/nvme0n1", false}, // the disk the image was written to
			{[]Disk{disk("/dev/sda", true)}, "", true},
			{nil, "", true},
		} {
			got, err := InstallDisk(cfg, tt.disks)
			if got != tt.want || (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrNoInstallDisk)) {
				t.Errorf("talos %q, disks %v: InstallDisk = %q, %v; want %q (error %v)", v, tt.disks, got, err, tt.want, tt.wantErr)
			}
		}
	}
}

// The installers come from the factory in use (POC_IMAGE_FACTORY_URL), registry port included.
func TestInstallersComeFromTheFactoryInUse(t *testing.T) {
	t.Parallel()

	for _, v := range []string{"", "v1.14.1"} {
		in := baseInput(t)
		in.TalosVersion, in.FactoryURL = v, "http://127.0.0.1:8080/"
		if v != "" {
			in.Secrets = testSecrets114(t)
		}

		cfgs, err := Generate(t.Context(), in)
		if err != nil {
			t.Fatalf("talos %q: Generate: %v", v, err)
		}

		ver := "v" + strings.TrimPrefix(cmp.Or(v, DefaultTalosVersion), "v")

		for name, b := range map[string][]byte{"scaleway": cfgs.ControlPlane, "metal": cfgs.Worker} {
			cfg, err := configloader.NewFromBytes(b)
			if err != nil {
				t.Fatal(err)
			}

			if got, want := installImage(cfg), "127.0.0.1:8080/"+name+"-installer/"+testSchematic+":"+ver; got != want {
				t.Errorf("talos %q %s installer = %s, want %s", v, name, got, want)
			}
		}
	}
}

// A node without the COSI resource service is asked through StorageService.Disks, its system-disk
// flag included, and the install disk is still checked.
func TestDisksFromANodeWithoutTheResourceAPI(t *testing.T) {
	t.Parallel()

	_, cfgs := freshCluster(t, "v1.14.1", "/dev/nvme1n1")
	w := startNode(t, simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/sda"}, NoResourceAPI: true})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	_, err := ApplyInsecure(ctx, w.APIAddr(), cfgs.Worker)
	if !errors.Is(err, ErrNoInstallDisk) || !strings.Contains(err.Error(), "/dev/sda") {
		t.Errorf("apply with an absent install disk on a node without block.Disk = %v, want ErrNoInstallDisk listing /dev/sda", err)
	}

	if w.Calls("/storage.StorageService/Disks") == 0 {
		t.Error("the node was never asked StorageService.Disks")
	}
}

// TestConfigureThroughAControlPlane: the worker's firewall admits the nodes and the admin CIDRs,
// not this test's address (the runner). Configure applies in maintenance mode directly (no config
// yet, no firewall) and then waits for the worker's trust through a control plane's apid. A rerun
// whose control plane is not up yet for the first trusted check meets a worker that drops the
// insecure probe; it gives the probe up once the worker answers through the control plane, instead
// of waiting for a maintenance mode that never comes.
func TestConfigureThroughAControlPlane(t *testing.T) {
	t.Parallel()

	secrets, err := NewSecrets(DefaultTalosVersion, settings.ServiceAccountKeyECDSA)
	if err != nil {
		t.Fatal(err)
	}

	wIP := loopback()
	in := baseInput(t)
	in.Secrets, in.WorkerInstallDisk = secrets, "/dev/sda"
	in.ControlPlaneIPs = []string{loopback(), loopback(), loopback()}
	in.Endpoint = "https://" + in.ControlPlaneIPs[0] + ":6443"
	in.Firewall = &Firewall{AdminCIDRs: []string{"203.0.113.0/24"}, NodeIPs: append(slices.Clone(in.ControlPlaneIPs), wIP), ControlPlaneIPs: in.ControlPlaneIPs}

	cfgs, err := Generate(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ctx = WithRetryInterval(ctx, 50*time.Millisecond)

	cp0 := net.JoinHostPort(in.ControlPlaneIPs[0], "50000")
	startNode(t, simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane})
	w := startNode(t, simtalos.NodeOptions{Addr: wIP, Mode: "metal", Disks: []string{"/dev/sda"}})
	wAddr := net.JoinHostPort(wIP, "50000")

	if err := Bootstrap(ctx, cp0, cfgs.Talosconfig); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	disks, err := Configure(ctx, wAddr, Through(cp0, wIP), cfgs.Worker, cfgs.Talosconfig)
	if err != nil || len(disks) == 0 {
		t.Fatalf("Configure through the control plane: disks %v, %v", disks, err)
	}

	short, scancel := context.WithTimeout(ctx, time.Second)
	if Configured(short, Direct(wAddr), cfgs.Talosconfig) {
		t.Error("the configured worker answers the runner directly: its firewall should admit the nodes only")
	}
	scancel()

	// The rerun, through a second control plane that boots a moment later.
	started := make(chan *simtalos.Node, 1)
	go func() {
		time.Sleep(time.Second)
		n, err := simtalos.StartNode(t.Context(), simtalos.NodeOptions{Addr: in.ControlPlaneIPs[1], Mode: "cloud", UserData: cfgs.ControlPlane,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Errorf("start the second control plane: %v", err)
		}
		started <- n
	}()
	t.Cleanup(func() {
		if n := <-started; n != nil {
			_ = n.Close()
		}
	})

	t0 := time.Now()
	disks, err = Configure(ctx, wAddr, Through(net.JoinHostPort(in.ControlPlaneIPs[1], "50000"), wIP), cfgs.Worker, cfgs.Talosconfig)
	if err != nil || disks != nil {
		t.Fatalf("rerun of Configure through a control plane that came up late: disks %v, %v (after %s)", disks, err, time.Since(t0))
	}

	if n := w.Calls("/machine.MachineService/ApplyConfiguration"); n != 1 {
		t.Errorf("the worker was sent %d configs, want the first one only", n)
	}
}
