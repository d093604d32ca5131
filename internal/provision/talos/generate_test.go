package talos

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
)

const testSchematic = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

var (
	secretsOnce sync.Once
	secretsYAML []byte
	secretsErr  error
)

// testSecrets generates one bundle per test binary: the RSA service-account key makes a bundle
// cost about a second under -race.
func testSecrets(t *testing.T) []byte {
	t.Helper()

	secretsOnce.Do(func() { secretsYAML, secretsErr = NewSecrets(DefaultTalosVersion) })

	if secretsErr != nil {
		t.Fatalf("NewSecrets: %v", secretsErr)
	}

	return secretsYAML
}

func baseInput(t *testing.T) Input {
	t.Helper()

	return Input{
		ClusterName:       "poc-acme-web-42",
		Endpoint:          "https://k8s-poc.example.com:6443",
		Secrets:           testSecrets(t),
		SchematicID:       testSchematic,
		ControlPlaneIPs:   []string{"51.15.0.1", "51.15.0.2", "51.15.0.3"},
		WorkerInstallDisk: "/dev/nvme0n1",
	}
}

// seedErrors are the validation failures of the seed's Terraform-provider configs (SPEC §4).
var seedErrors = []string{
	"UnattendedInstallConfig config is incompatible with v1alpha1 config",
	"cluster network config in v1alpha1 config can't be used with KubeFlannelCNIConfig document",
	"either install disk or diskSelector should be defined",
}

func TestGenerateProducesValidConfigs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		modify func(*Input)
		// wantDisk is the worker's install disk.
		wantDisk string
		wantSANs []string
	}{
		{name: "dns endpoint", wantDisk: "/dev/nvme0n1", wantSANs: []string{"k8s-poc.example.com", "51.15.0.1", "51.15.0.2", "51.15.0.3"}},
		{
			name: "ip endpoint, extra SAN, explicit version",
			modify: func(in *Input) {
				in.Endpoint = "https://51.15.0.1:6443"
				in.CertSANs = []string{"api.internal"}
				in.TalosVersion = "1.13.11"
			},
			wantDisk: "/dev/nvme0n1",
			wantSANs: []string{"51.15.0.1", "51.15.0.2", "51.15.0.3", "api.internal"},
		},
		{
			name:     "one control plane, sda worker",
			modify:   func(in *Input) { in.ControlPlaneIPs = in.ControlPlaneIPs[:1]; in.WorkerInstallDisk = "/dev/sda" },
			wantDisk: "/dev/sda",
			wantSANs: []string{"k8s-poc.example.com", "51.15.0.1"},
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in := baseInput(t)
			if tt.modify != nil {
				tt.modify(&in)
			}

			out, err := Generate(context.Background(), in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}

			t.Logf("sizes: control plane %d B, worker %d B, talosconfig %d B", len(out.ControlPlane), len(out.Worker), len(out.Talosconfig))

			if out.ContractVersion != "v1.13" {
				t.Errorf("contract = %s, want v1.13", out.ContractVersion)
			}

			for name, cfg := range map[string][]byte{"control plane": out.ControlPlane, "worker": out.Worker} {
				text := string(cfg)
				// Forbidden in any config: the legacy stable-hostname switch, and the 1.14
				// documents whose mix with v1alpha1 broke the seed.
				for _, bad := range []string{"stableHostname", "UnattendedInstallConfig", "KubeFlannelCNIConfig"} {
					if strings.Contains(text, bad) {
						t.Errorf("%s config contains %q", name, bad)
					}
				}

				for _, mode := range []Mode{ModeCloud, ModeMetal} {
					if name == "control plane" && mode == ModeMetal {
						continue // the control planes boot a cloud image: metal mode is not theirs
					}

					if _, err := Validate(cfg, mode); err != nil {
						for _, s := range seedErrors {
							if strings.Contains(err.Error(), s) {
								t.Errorf("%s config hits the seed's error %q", name, s)
							}
						}

						t.Errorf("%s config invalid in %s mode: %v", name, mode, err)
					}
				}
			}

			cp, err := configloader.NewFromBytes(out.ControlPlane)
			if err != nil {
				t.Fatalf("load control-plane config: %v", err)
			}

			w, err := configloader.NewFromBytes(out.Worker)
			if err != nil {
				t.Fatalf("load worker config: %v", err)
			}

			// Control plane.
			if got := cp.Cluster().Network().CNI().Name(); got != "none" {
				t.Errorf("cp CNI = %q, want none", got)
			}

			if cp.Cluster().Proxy().Enabled() {
				t.Error("cp kube-proxy enabled, want disabled")
			}

			if cp.Cluster().ScheduleOnControlPlanes() {
				t.Error("cp allowSchedulingOnControlPlanes = true")
			}

			for _, san := range tt.wantSANs {
				if !contains(cp.Cluster().CertSANs(), san) {
					t.Errorf("apiServer certSANs %v lack %q", cp.Cluster().CertSANs(), san)
				}

				if !contains(cp.Machine().Security().CertSANs(), san) {
					t.Errorf("machine certSANs %v lack %q", cp.Machine().Security().CertSANs(), san)
				}
			}

			if got := cp.Cluster().APIServer().ExtraArgs()["service-node-port-range"]; len(got) != 1 || got[0] != "80-443" {
				t.Errorf("service-node-port-range = %v, want [80-443]", got)
			}

			if got, want := cp.Machine().Install().Image(), "factory.talos.dev/scaleway-installer/"+testSchematic+":v1.13.11"; got != want {
				t.Errorf("cp install image = %q, want %q", got, want)
			}

			if cp.RawV1Alpha1().ClusterConfig.EtcdConfig == nil || len(cp.Cluster().Etcd().AdvertisedSubnets()) != len(in.ControlPlaneIPs) {
				t.Errorf("cp etcd advertisedSubnets = %v, want one per control plane", cp.Cluster().Etcd().AdvertisedSubnets())
			}

			manifests := cp.Cluster().InlineManifests()
			if len(manifests) != 1 || manifests[0].Name() != "cilium-install" {
				t.Fatalf("cp inline manifests = %d, want the cilium-install one", len(manifests))
			}

			for _, want := range []string{"kind: Job", "encryption.type=wireguard", "routingMode=native", "hostFirewall.enabled=true", "kubeProxyReplacement=true", `nodePort.range=80\,443`, "cluster-admin"} {
				if !strings.Contains(manifests[0].Contents(), want) {
					t.Errorf("cilium manifest lacks %q", want)
				}
			}

			// Worker.
			if w.RawV1Alpha1().ClusterConfig.EtcdConfig != nil {
				t.Error("worker config carries cluster.etcd")
			}

			if got := w.NetworkHostnameConfig().Hostname(); got != "edge-01" {
				t.Errorf("worker hostname = %q, want edge-01", got)
			}

			if got := w.Machine().Install().Disk(); got != tt.wantDisk {
				t.Errorf("worker install disk = %q, want %q", got, tt.wantDisk)
			}

			if got, want := w.Machine().Install().Image(), "factory.talos.dev/metal-installer/"+testSchematic+":v1.13.11"; got != want {
				t.Errorf("worker install image = %q, want %q", got, want)
			}

			if w.Cluster().Network().CNI().Name() != "none" || w.Cluster().Proxy().Enabled() {
				t.Error("worker must also say CNI none and kube-proxy disabled")
			}

			if !strings.Contains(string(out.Talosconfig), "51.15.0.1") {
				t.Error("talosconfig does not list the control-plane endpoints")
			}
		})
	}
}

func TestGenerateRefuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		modify  func(*Input)
		wantErr string
		wantIs  error
	}{
		{name: "talos 1.14", modify: func(in *Input) { in.TalosVersion = "v1.14.0" }, wantIs: ErrUnsupportedTalosVersion, wantErr: "cannot emit the v1.14 multi-document config"},
		{name: "talos 1.11", modify: func(in *Input) { in.TalosVersion = "v1.11.5" }, wantIs: ErrUnsupportedTalosVersion},
		{name: "garbage version", modify: func(in *Input) { in.TalosVersion = "latest" }, wantErr: "error parsing version"},
		// The metal validator's own words come through when the rescue found no disk.
		{name: "no worker disk", modify: func(in *Input) { in.WorkerInstallDisk = "" }, wantErr: "either install disk or diskSelector should be defined"},
		{name: "no control planes", modify: func(in *Input) { in.ControlPlaneIPs = nil }, wantErr: "at least one control-plane IP"},
		{name: "ipv6 control plane", modify: func(in *Input) { in.ControlPlaneIPs = []string{"2001:db8::1"} }, wantErr: "not an IPv4 address"},
		{name: "http endpoint", modify: func(in *Input) { in.Endpoint = "http://k8s:6443" }, wantErr: "must look like https://"},
		{name: "bad schematic", modify: func(in *Input) { in.SchematicID = "abc" }, wantErr: "schematic id"},
		{name: "yaml in disk", modify: func(in *Input) { in.WorkerInstallDisk = "/dev/sda\nfoo: bar" }, wantErr: "must be a /dev path"},
		{name: "bad hostname", modify: func(in *Input) { in.WorkerHostname = "Edge_01" }, wantErr: "DNS label"},
		{name: "no secrets", modify: func(in *Input) { in.Secrets = nil }, wantErr: "empty input"},
		{name: "broken secrets", modify: func(in *Input) { in.Secrets = []byte("cluster: [") }, wantErr: "decode Talos secrets bundle"},
		{name: "incomplete secrets", modify: func(in *Input) { in.Secrets = []byte("cluster:\n  id: x\n") }, wantErr: "incomplete"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in := baseInput(t)
			tt.modify(&in)

			_, err := Generate(context.Background(), in)
			if err == nil {
				t.Fatal("Generate succeeded, want an error")
			}

			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}

			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

// TestValidatorCatchesForbiddenPatches proves the validation gate is real: the patches pocbot must
// never emit are refused by Validate with machinery's words.
func TestValidatorCatchesForbiddenPatches(t *testing.T) {
	t.Parallel()

	out, err := Generate(context.Background(), baseInput(t))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}

	tests := []struct {
		name    string
		base    []byte
		patch   string
		mode    Mode
		wantErr string
	}{
		{name: "etcd on the worker", base: out.Worker, mode: ModeMetal, patch: "cluster:\n  etcd:\n    advertisedSubnets: [10.0.0.0/8]\n", wantErr: "etcd config is only allowed on control plane machines"},
		{name: "stableHostname next to HostnameConfig", base: out.Worker, mode: ModeMetal, patch: "machine:\n  features:\n    stableHostname: true\n", wantErr: "already set in v1alpha1 config"},
		{name: "cp without install disk in metal mode", base: out.ControlPlane, mode: ModeMetal, patch: "machine:\n  install:\n    disk:\n      $patch: delete\n", wantErr: "either install disk or diskSelector should be defined"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			p, err := configpatcher.LoadPatch([]byte(tt.patch))
			if err != nil {
				t.Fatalf("load patch: %v", err)
			}

			patched, err := configpatcher.Apply(configpatcher.WithBytes(tt.base), []configpatcher.Patch{p})
			if err != nil {
				t.Fatalf("apply patch: %v", err)
			}

			cfg, err := patched.Config()
			if err != nil {
				t.Fatalf("patched config: %v", err)
			}

			b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
			if err != nil {
				t.Fatalf("encode: %v", err)
			}

			if _, err := Validate(b, tt.mode); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestSecretsAreReused(t *testing.T) {
	t.Parallel()

	in := baseInput(t)

	a, err := Generate(context.Background(), in)
	if err != nil {
		t.Fatalf("first Generate: %v", err)
	}

	b, err := Generate(context.Background(), in)
	if err != nil {
		t.Fatalf("second Generate: %v", err)
	}

	ca, _ := configloader.NewFromBytes(a.ControlPlane)
	cb, _ := configloader.NewFromBytes(b.ControlPlane)

	if string(ca.Cluster().IssuingCA().Crt) != string(cb.Cluster().IssuingCA().Crt) || ca.Cluster().Token().ID() != cb.Cluster().Token().ID() {
		t.Error("two Generate calls with one bundle made different cluster CAs or tokens")
	}

	bundle, err := LoadSecrets(in.Secrets)
	if err != nil {
		t.Fatalf("LoadSecrets: %v", err)
	}

	if string(bundle.Certs.K8s.Crt) != string(ca.Cluster().IssuingCA().Crt) {
		t.Error("config's Kubernetes CA is not the bundle's")
	}
}

func TestGenerateHonoursCancelledContext(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	if _, err := Generate(ctx, baseInput(t)); !errors.Is(err, context.Canceled) {
		t.Errorf("Generate on a cancelled context = %v, want context.Canceled", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}

	return false
}
