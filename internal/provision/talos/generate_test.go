package talos

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"

	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/sim/cnichart"
)

const testSchematic = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"

// The bundles are generated once per test binary: the RSA service-account key makes a bundle
// cost about a second under -race.
var (
	secretsDefault = sync.OnceValues(func() ([]byte, error) { return NewSecrets(DefaultTalosVersion, settings.ServiceAccountKeyECDSA) })
	secrets114     = sync.OnceValues(func() ([]byte, error) { return NewSecrets("v1.14.1", settings.ServiceAccountKeyECDSA) })
)

// testSecrets is a bundle generated for the default Talos version.
func testSecrets(t *testing.T) []byte {
	t.Helper()

	return mustSecrets(t, secretsDefault, "NewSecrets")
}

// testSecrets114 is a bundle generated for the 1.14 contract.
func testSecrets114(t *testing.T) []byte {
	t.Helper()

	return mustSecrets(t, secrets114, "NewSecrets(v1.14.1)")
}

func mustSecrets(t *testing.T, bundle func() ([]byte, error), what string) []byte {
	t.Helper()

	b, err := bundle()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}

	return b
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
		// The project's own test chart, in place of Cilium's (which it may not ship).
		CiliumChart: cnichart.Archive(),
	}
}

// seedErrors are the validation failures of the seed's Terraform-provider configs (docs/seed.md, Talos configuration), as
// patterns: machinery v1.14.1 words the second one "cluster network config in v1alpha1 config
// (.machine.cluster.network) can't be used with KubeFlannelCNIConfig document", so a plain
// substring of the wording quoted from the seed would never match and the "cannot occur" checks would be
// vacuous. TestValidatorCatchesForbiddenPatches proves each pattern matches machinery's words.
var seedErrors = []*regexp.Regexp{
	regexp.MustCompile(`UnattendedInstallConfig config is incompatible with v1alpha1 config`),
	regexp.MustCompile(`cluster network config in v1alpha1 config( \([^)]*\))? can't be used with KubeFlannelCNIConfig document`),
	regexp.MustCompile(`either install disk or diskSelector should be defined`),
}

func TestGenerateProducesValidConfigs(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		modify func(*Input)
		// wantDisk is the worker's install disk.
		wantDisk string
		wantSANs []string
		// wantContract and wantVersion: the contract generated for and the installers' tag.
		wantContract, wantVersion string
		// wantKubernetes is the Kubernetes version in the kubelet image.
		wantKubernetes string
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
		{
			name:     "talos 1.12",
			modify:   func(in *Input) { in.TalosVersion = "v1.12.6" },
			wantDisk: "/dev/nvme0n1", wantSANs: []string{"k8s-poc.example.com", "51.15.0.1"},
			wantContract: "v1.12", wantVersion: "v1.12.6", wantKubernetes: PinnedKubernetesVersion,
		},
		// Talos 1.14: the multi-document form.
		{
			name:     "talos 1.14",
			modify:   func(in *Input) { in.TalosVersion = "v1.14.1" },
			wantDisk: "/dev/nvme0n1", wantSANs: []string{"k8s-poc.example.com", "51.15.0.1", "51.15.0.2", "51.15.0.3"},
			wantContract: "v1.14", wantVersion: "v1.14.1", wantKubernetes: PinnedKubernetesVersion,
		},
		{
			name: "talos 1.14, ip endpoint, extra SAN, one control plane, sda worker",
			modify: func(in *Input) {
				in.TalosVersion = "1.14.1"
				in.Endpoint = "https://51.15.0.1:6443"
				in.CertSANs = []string{"api.internal"}
				in.ControlPlaneIPs = in.ControlPlaneIPs[:1]
				in.WorkerInstallDisk = "/dev/sda"
			},
			wantDisk: "/dev/sda", wantSANs: []string{"51.15.0.1", "api.internal"},
			wantContract: "v1.14", wantVersion: "v1.14.1", wantKubernetes: PinnedKubernetesVersion,
		},
		{
			name: "talos 1.14, secrets made for 1.14, explicit Kubernetes",
			modify: func(in *Input) {
				in.TalosVersion = "v1.14.1"
				in.KubernetesVersion = "v1.36.3"
				in.Secrets = testSecrets114(t)
			},
			wantDisk: "/dev/nvme0n1", wantSANs: []string{"k8s-poc.example.com"},
			wantContract: "v1.14", wantVersion: "v1.14.1", wantKubernetes: "1.36.3",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in := baseInput(t)
			if tt.modify != nil {
				tt.modify(&in)
			}

			if tt.wantContract == "" {
				tt.wantContract, tt.wantVersion, tt.wantKubernetes = "v1.13", "v1.13.11", PinnedKubernetesVersion
			}

			multiDoc := tt.wantContract == "v1.14"

			out, err := Generate(t.Context(), in)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}

			t.Logf("sizes: control plane %d B, worker %d B, talosconfig %d B", len(out.ControlPlane), len(out.Worker), len(out.Talosconfig))

			if out.ContractVersion != tt.wantContract {
				t.Errorf("contract = %s, want %s", out.ContractVersion, tt.wantContract)
			}

			for name, cfg := range map[string][]byte{"control plane": out.ControlPlane, "worker": out.Worker} {
				assertNoSeedErrors(t, name, cfg, multiDoc)

				for _, mode := range []Mode{ModeCloud, ModeMetal} {
					if name == "control plane" && mode == ModeMetal {
						continue // the control planes boot a cloud image: metal mode is not theirs
					}

					if _, err := Validate(cfg, mode); err != nil {
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

			// Both nodes: the Kubernetes version, CNI none, kube-proxy off.
			for name, c := range map[string]config.Provider{"cp": cp, "worker": w} {
				if got, want := c.K8sKubeletConfig().Image(), "ghcr.io/siderolabs/kubelet:v"+tt.wantKubernetes; got != want {
					t.Errorf("%s kubelet image = %q, want %q", name, got, want)
				}

				if c.K8sFlannelCNIConfig() != nil || len(c.K8sExternalManifestConfigs()) != 0 {
					t.Errorf("%s config carries a CNI (Flannel or a custom CNI URL), want none", name)
				}

				if !multiDoc {
					if got := c.RawV1Alpha1().ClusterConfig.ClusterNetwork.CNI.CNIName; got != "none" { //nolint:staticcheck // the 1.13 form
						t.Errorf("%s CNI = %q, want none", name, got)
					}

					if c.K8sProxyConfig().Enabled() {
						t.Errorf("%s kube-proxy enabled, want disabled", name)
					}
				}
			}

			// Control plane.
			if p := cp.K8sProxyConfig(); p == nil || p.Enabled() {
				t.Error("cp kube-proxy enabled, want disabled")
			}

			if multiDoc {
				if got := cp.K8sNodeConfig().Taints()["node-role.kubernetes.io/control-plane"]; got != "NoSchedule" {
					t.Errorf("cp control-plane taint = %q, want NoSchedule (allowSchedulingOnControlPlanes: false)", got)
				}
			} else if a := cp.RawV1Alpha1().ClusterConfig.AllowSchedulingOnControlPlanes; a == nil || *a { //nolint:staticcheck // the 1.13 form
				t.Error("cp allowSchedulingOnControlPlanes is not false")
			}

			for _, san := range tt.wantSANs {
				if !contains(cp.K8sAPIServerConfig().CertSANs(), san) {
					t.Errorf("apiServer certSANs %v lack %q", cp.K8sAPIServerConfig().CertSANs(), san)
				}

				if !contains(cp.Machine().Security().CertSANs(), san) {
					t.Errorf("machine certSANs %v lack %q", cp.Machine().Security().CertSANs(), san)
				}
			}

			// The control planes' names are theirs only, and each once (issue 21: the worker
			// carried them, and the 1.13 output listed them twice).
			for _, list := range [][]string{cp.Machine().Security().CertSANs(), cp.K8sAPIServerConfig().CertSANs()} {
				for i, san := range list {
					if slices.Contains(list[i+1:], san) {
						t.Errorf("certSANs %v list %q twice", list, san)
					}
				}
			}
			for _, ip := range in.ControlPlaneIPs {
				if contains(w.Machine().Security().CertSANs(), ip) {
					t.Errorf("worker machine certSANs %v carry control-plane IP %s", w.Machine().Security().CertSANs(), ip)
				}
			}

			if got := cp.K8sAPIServerConfig().ExtraArgs()["service-node-port-range"]; len(got) != 1 || got[0] != "80-443" {
				t.Errorf("service-node-port-range = %v, want [80-443]", got)
			}

			if got, want := installImage(cp), "factory.talos.dev/scaleway-installer/"+testSchematic+":"+tt.wantVersion; got != want {
				t.Errorf("cp install image = %q, want %q", got, want)
			}

			if cp.RawV1Alpha1().ClusterConfig.EtcdConfig == nil || len(cp.Cluster().Etcd().AdvertisedSubnets()) != len(in.ControlPlaneIPs) {
				t.Errorf("cp etcd advertisedSubnets = %v, want one per control plane", cp.Cluster().Etcd().AdvertisedSubnets())
			}

			manifests := cp.K8sInlineManifestConfigs()
			if len(manifests) != 1 || manifests[0].Name() != CiliumManifestName {
				t.Fatalf("cp inline manifests = %d, want the %s one", len(manifests), CiliumManifestName)
			}

			// The test chart's rendering of the bot's values (sim/cnichart).
			for _, want := range []string{"kind: DaemonSet", `enable-wireguard: "true"`, `routing-mode: "tunnel"`, `tunnel-protocol: "vxlan"`, `enable-host-firewall: "false"`,
				`kube-proxy-replacement: "true"`, `k8s-service-port: "7445"`, `node-port-range: "80-443"`, "@" + imageDigest(CiliumAgentImage)} {
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

			if got := installDisk(t, w); got != tt.wantDisk {
				t.Errorf("worker install disk = %q, want %q", got, tt.wantDisk)
			}

			if got, want := installImage(w), "factory.talos.dev/metal-installer/"+testSchematic+":"+tt.wantVersion; got != want {
				t.Errorf("worker install image = %q, want %q", got, want)
			}

			if !strings.Contains(string(out.Talosconfig), "51.15.0.1") {
				t.Error("talosconfig does not list the control-plane endpoints")
			}
		})
	}
}

// assertNoSeedErrors checks a valid config against the seed's failure (docs/seed.md, Talos configuration): none of its three
// validation errors in any mode where the config could be validated, no legacy stable-hostname
// switch, and — per form — none of the mixes that produced the errors.
func assertNoSeedErrors(t *testing.T, name string, cfg []byte, multiDoc bool) {
	t.Helper()

	text := string(cfg)
	if strings.Contains(text, "stableHostname") {
		t.Errorf("%s config contains stableHostname", name)
	}

	if multiDoc {
		// 1.14: the documents are expected; their v1alpha1 counterparts are not.
		c, err := configloader.NewFromBytes(cfg)
		if err != nil {
			t.Fatalf("load %s config: %v", name, err)
		}

		raw := c.RawV1Alpha1()
		if raw.MachineConfig.MachineInstall != nil { //nolint:staticcheck // checking the deprecated field is absent
			t.Errorf("%s config has .machine.install next to the UnattendedInstallConfig document", name)
		}

		if raw.ClusterConfig.ClusterNetwork != nil || raw.ClusterConfig.ProxyConfig != nil || raw.ClusterConfig.APIServerConfig != nil || len(raw.ClusterConfig.ClusterInlineManifests) != 0 { //nolint:staticcheck // checking the deprecated fields are absent
			t.Errorf("%s config has v1alpha1 cluster network/proxy/apiServer/inlineManifests next to the Kube* documents", name)
		}

		if strings.Contains(text, "KubeFlannelCNIConfig") {
			t.Errorf("%s config contains a KubeFlannelCNIConfig document (CNI must be none)", name)
		}

		if c.UnattendedInstallConfig() == nil {
			t.Errorf("%s config has no UnattendedInstallConfig document", name)
		}
	} else {
		// 1.13: the 1.14 documents whose mix with v1alpha1 broke the seed must not appear.
		for _, bad := range []string{"UnattendedInstallConfig", "KubeFlannelCNIConfig"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s config contains %q", name, bad)
			}
		}
	}

	for _, mode := range []Mode{ModeCloud, ModeMetal} {
		_, err := Validate(cfg, mode)
		if err == nil {
			continue
		}

		for _, s := range seedErrors {
			if s.MatchString(err.Error()) {
				t.Errorf("%s config hits the seed's error %q in %s mode", name, s, mode)
			}
		}
	}
}

// installImage is the installer a config names, from either form.
func installImage(c config.Provider) string {
	if u := c.UnattendedInstallConfig(); u != nil {
		return u.InstallerImage()
	}

	return c.Machine().Install().Image()
}

// installDisk is the install disk a config names, from either form; the 1.14 form names it in a
// CEL selector, which machinery generates as disk.dev_path == "<disk>".
func installDisk(t *testing.T, c config.Provider) string {
	t.Helper()

	if u := c.UnattendedInstallConfig(); u != nil {
		expr := u.VolumeSelector().String()

		disk, ok := strings.CutPrefix(expr, "disk.dev_path == ")
		if !ok {
			t.Fatalf("install disk selector %q is not a dev_path match", expr)
		}

		return strings.Trim(disk, `"`)
	}

	return c.Machine().Install().Disk()
}

func TestGenerateRefuses(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		modify  func(*Input)
		wantErr string
		wantIs  error
	}{
		{name: "talos 1.15", modify: func(in *Input) { in.TalosVersion = "v1.15.0" }, wantIs: ErrUnsupportedTalosVersion, wantErr: "cannot emit the v1.15 config"},
		{name: "talos 1.11", modify: func(in *Input) { in.TalosVersion = "v1.11.5" }, wantIs: ErrUnsupportedTalosVersion},
		{name: "garbage version", modify: func(in *Input) { in.TalosVersion = "latest" }, wantErr: "error parsing version"},
		// The metal validator's own words come through when the rescue found no disk.
		{name: "no worker disk", modify: func(in *Input) { in.WorkerInstallDisk = "" }, wantErr: "either install disk or diskSelector should be defined"},
		// machinery v1.14 no longer requires an install target in metal mode: Validate does.
		{name: "no worker disk, talos 1.14", modify: func(in *Input) { in.WorkerInstallDisk = ""; in.TalosVersion = "v1.14.1" }, wantErr: "either install disk or diskSelector should be defined"},
		{name: "kubernetes too new for talos 1.13", modify: func(in *Input) { in.KubernetesVersion = "1.37.0" }, wantErr: "too new to be used with Talos"},
		{name: "kubernetes too old for talos 1.14", modify: func(in *Input) { in.TalosVersion = "v1.14.1"; in.KubernetesVersion = "1.31.4" }, wantErr: "too old to be used with Talos"},
		{name: "no control planes", modify: func(in *Input) { in.ControlPlaneIPs = nil }, wantErr: "at least one control-plane IP"},
		{name: "ipv6 control plane", modify: func(in *Input) { in.ControlPlaneIPs = []string{"2001:db8::1"} }, wantErr: "not an IPv4 address"},
		{name: "http endpoint", modify: func(in *Input) { in.Endpoint = "http://k8s:6443" }, wantErr: "must look like https://"},
		{name: "bad schematic", modify: func(in *Input) { in.SchematicID = "abc" }, wantErr: "schematic id"},
		{name: "yaml in disk", modify: func(in *Input) { in.WorkerInstallDisk = "/dev/sda\nfoo: bar" }, wantErr: "must be a /dev path"},
		{name: "bad hostname", modify: func(in *Input) { in.WorkerHostname = "Edge_01" }, wantErr: "DNS label"},
		{name: "no secrets", modify: func(in *Input) { in.Secrets = nil }, wantErr: "empty input"},
		{name: "broken secrets", modify: func(in *Input) { in.Secrets = []byte("cluster: [") }, wantErr: "decode Talos secrets bundle"},
		{name: "incomplete secrets", modify: func(in *Input) { in.Secrets = []byte("cluster:\n  id: x\n") }, wantErr: "incomplete"},
		// A chart whose manifest alone is over the user data a control plane's config rides in.
		{name: "config over the user-data limit", modify: func(in *Input) { in.CiliumChart = bigChart(t, UserDataLimit) }, wantErr: "over the 1048576 bytes"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in := baseInput(t)
			tt.modify(&in)

			_, err := Generate(t.Context(), in)
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

// bigChart is a chart archive whose one ConfigMap holds more than size bytes of data.
func bigChart(t *testing.T, size int) []byte {
	t.Helper()

	return cnichart.Pack("big", map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: big\nversion: 1.0.0\n",
		"templates/big.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n"+
			"{{- range until %d }}\n  k{{ . }}: %q\n{{- end }}\n", size/64+1, strings.Repeat("x", 64)),
	})
}

// TestValidatorCatchesForbiddenPatches proves the validation gate is real: the patches pocbot must
// never emit are refused by Validate with machinery's words.
func TestValidatorCatchesForbiddenPatches(t *testing.T) {
	t.Parallel()

	out, err := Generate(t.Context(), baseInput(t))
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}

	in114 := baseInput(t)
	in114.TalosVersion = "v1.14.1"

	out114, err := Generate(t.Context(), in114)
	if err != nil {
		t.Fatalf("Generate 1.14: %v", err)
	}

	const (
		etcdPatch           = "cluster:\n  etcd:\n    advertisedSubnets: [10.0.0.0/8]\n"
		stableHostnamePatch = "machine:\n  features:\n    stableHostname: true\n"
	)

	tests := []struct {
		name  string
		base  []byte
		patch string
		mode  Mode
		// wantErr is a substring of the error; wantSeed, if set, the index of the seed error.
		wantErr  string
		wantSeed int
	}{
		{name: "etcd on the worker", base: out.Worker, mode: ModeMetal, patch: etcdPatch, wantErr: "etcd config is only allowed on control plane machines", wantSeed: -1},
		{name: "stableHostname next to HostnameConfig", base: out.Worker, mode: ModeMetal, patch: stableHostnamePatch, wantErr: "already set in v1alpha1 config", wantSeed: -1},
		{name: "cp without install disk in metal mode", base: out.ControlPlane, mode: ModeMetal, patch: "machine:\n  install:\n    disk:\n      $patch: delete\n", wantSeed: 2},
		// The 1.14 form: the seed's three errors are what the Terraform provider's mix of v1alpha1
		// keys and 1.14 documents produces; each is caught here, so Generate would stop on it.
		{name: "1.14: etcd on the worker", base: out114.Worker, mode: ModeMetal, patch: etcdPatch, wantErr: "etcd config is only allowed on control plane machines", wantSeed: -1},
		{name: "1.14: stableHostname next to HostnameConfig", base: out114.Worker, mode: ModeMetal, patch: stableHostnamePatch, wantErr: "already set in v1alpha1 config", wantSeed: -1},
		{name: "1.14: .machine.install next to UnattendedInstallConfig", base: out114.Worker, mode: ModeMetal, patch: "machine:\n  install:\n    disk: /dev/nvme0n1\n", wantSeed: 0},
		{name: "1.14: cluster.network next to KubeFlannelCNIConfig", base: out114.ControlPlane, mode: ModeCloud, patch: "cluster:\n  network:\n    cni:\n      name: flannel\n---\napiVersion: v1alpha1\nkind: KubeFlannelCNIConfig\nbackendType: vxlan\n", wantSeed: 1},
		{name: "1.14: worker without UnattendedInstallConfig", base: out114.Worker, mode: ModeMetal, patch: "apiVersion: v1alpha1\nkind: UnattendedInstallConfig\n$patch: delete\n", wantSeed: 2},
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

			_, err = Validate(b, tt.mode)
			if err == nil {
				t.Fatalf("Validate accepted the patched config, want an error")
			}

			if tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate error = %v, want one containing %q", err, tt.wantErr)
			}

			if tt.wantSeed >= 0 && !seedErrors[tt.wantSeed].MatchString(err.Error()) {
				t.Errorf("Validate error = %v, want the seed's error %q", err, seedErrors[tt.wantSeed])
			}
		})
	}
}

func TestSecretsAreReused(t *testing.T) {
	t.Parallel()

	in := baseInput(t)

	a, err := Generate(t.Context(), in)
	if err != nil {
		t.Fatalf("first Generate: %v", err)
	}

	b, err := Generate(t.Context(), in)
	if err != nil {
		t.Fatalf("second Generate: %v", err)
	}

	ca, _ := configloader.NewFromBytes(a.ControlPlane)
	cb, _ := configloader.NewFromBytes(b.ControlPlane)

	if string(ca.K8sAPIServerCAConfig().IssuingCA().Crt) != string(cb.K8sAPIServerCAConfig().IssuingCA().Crt) || ca.Cluster().Token().ID() != cb.Cluster().Token().ID() {
		t.Error("two Generate calls with one bundle made different cluster CAs or tokens")
	}

	bundle, err := LoadSecrets(in.Secrets)
	if err != nil {
		t.Fatalf("LoadSecrets: %v", err)
	}

	if string(bundle.Certs.K8s.Crt) != string(ca.K8sAPIServerCAConfig().IssuingCA().Crt) {
		t.Error("config's Kubernetes CA is not the bundle's")
	}
}

func TestGenerateHonoursCancelledContext(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithCancel(t.Context())
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

// TestCommandsGrammarMatchesContract keeps /poc up --talos in step with what Generate can emit:
// the newest series the grammar accepts has a contract here, and the next one is refused here.
func TestCommandsGrammarMatchesContract(t *testing.T) {
	t.Parallel()

	newest := settings.MaxTalosMinor + ".0"
	if _, err := Contract(newest); err != nil {
		t.Errorf("commands accepts %s but Contract refuses it: %v", newest, err)
	}

	if _, err := DefaultKubernetesVersion(newest); err != nil {
		t.Errorf("no default Kubernetes version for %s: %v", newest, err)
	}

	c, err := Contract(newest)
	if err != nil {
		return
	}

	next := fmt.Sprintf("v%d.%d.0", c.Major, c.Minor+1)
	if _, err := Contract(next); !errors.Is(err, ErrUnsupportedTalosVersion) {
		t.Errorf("Contract(%s) = %v, want ErrUnsupportedTalosVersion (commands refuses it too)", next, err)
	}
}
