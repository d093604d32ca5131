package talos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
)

// DefaultWorkerHostname is the seed's baremetal_hostname.
const DefaultWorkerHostname = "edge-01"

// Input is what Generate needs to know about one cluster.
type Input struct {
	// ClusterName is the Kubernetes cluster name (unique per issue/PR).
	ClusterName string
	// Endpoint is the Kubernetes API URL, https://<dns name or first control-plane IP>:6443.
	Endpoint string
	// TalosVersion picks the config contract; empty means DefaultTalosVersion.
	TalosVersion string
	// KubernetesVersion without a leading "v"; empty means the machinery default for the contract.
	KubernetesVersion string
	// Secrets is the bundle from NewSecrets, as kept in the state.
	Secrets []byte
	// SchematicID is the Image Factory schematic of the boot images; the installers are derived
	// from it unless ControlPlaneInstaller / WorkerInstaller are set.
	SchematicID string
	// FactoryURL is the Image Factory the images come from (POC_IMAGE_FACTORY_URL); the derived
	// installers are pulled from its registry. Empty: images.DefaultFactoryURL.
	FactoryURL string
	// ControlPlaneIPs are the reserved IPv4 addresses of the control planes (at least one).
	ControlPlaneIPs []string
	// CertSANs are extra names or IPs for the API server and Talos API certificates.
	CertSANs []string
	// WorkerHostname defaults to DefaultWorkerHostname.
	WorkerHostname string
	// WorkerInstallDisk is the worker's disk as found in the rescue system, e.g. /dev/nvme0n1.
	WorkerInstallDisk string
	// ControlPlaneInstallDisk is where an upgrade writes on an Instance; default /dev/sda.
	ControlPlaneInstallDisk string
	// ControlPlaneInstaller and WorkerInstaller override the derived installer image references.
	ControlPlaneInstaller string
	WorkerInstaller       string
	// CiliumChart is the Cilium chart archive, already checked against its pin (chart.Fetch of
	// DefaultCiliumChart): Generate renders it into the control planes' inline manifest.
	CiliumChart []byte
	// CiliumRouting is RoutingTunnel (default, "") or RoutingNative.
	CiliumRouting string
	// NoCNI leaves the Cilium install out (and CiliumChart unused): a config for a node that is
	// never bootstrapped (a parked worker).
	NoCNI bool
	// ciliumManifest is CiliumChart rendered (normalizeMachines).
	ciliumManifest string
	// Firewall, when set, adds the ingress firewall documents to every node's config (firewall.go).
	Firewall *Firewall
}

// Configs are the validated machine configs and the admin client config of one cluster.
type Configs struct {
	// ControlPlane is shared by every control plane: their differences (addresses) come from
	// the platform, and the certificates name every control-plane IP.
	ControlPlane []byte
	// Worker is the Elastic Metal worker's config.
	Worker []byte
	// Talosconfig is the admin client config (endpoints: the control-plane IPs).
	Talosconfig []byte
	// ContractVersion is the contract the configs were generated for, e.g. "v1.13".
	ContractVersion string
	// Warnings are the validators' warnings (not fatal).
	Warnings []string
}

// Values of the generated configs; the Cilium install is in cilium.go.
const (
	// CiliumWireGuardPort is the UDP port Cilium's WireGuard tunnel listens on.
	CiliumWireGuardPort = netpolicy.PortCiliumWireGuard
	// NodePortRange is the Kubernetes NodePort range: the edge gateway listens on 80 and 443.
	NodePortRange = "80-443"
	// KubePrismPort is Talos's local API server load balancer, which Cilium uses.
	KubePrismPort = constants.DefaultKubePrismPort
	// UserDataLimit is the most a control plane's config may weigh: it travels as one key of
	// the Instance's user data, which takes 1 MiB per key (the limit the Scaleway stand-in
	// enforces, internal/sim/scaleway; no Scaleway source for it was read here: an assumption
	// for the register to settle live). Cilium 1.18.1's config is about 80 kB of it.
	UserDataLimit = 1 << 20
)

var (
	schematicRe  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	diskRe       = regexp.MustCompile(`^/dev/[A-Za-z0-9/_-]+$`)
	hostnameRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	clusterRe    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	imageRefRe   = regexp.MustCompile(`^([A-Za-z0-9.-]+(:[0-9]+)?/)?[A-Za-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$`)
	k8sVersionRe = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
)

// Generate builds, patches and validates the configs of one cluster. It does no I/O; ctx is only
// checked so a cancelled run stops before the (CPU-bound) generation.
func Generate(ctx context.Context, in Input) (*Configs, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("generate Talos configs: %w", err)
	}

	contract, err := Contract(in.TalosVersion)
	if err != nil {
		return nil, err
	}

	in, endpointHost, err := normalize(in)
	if err != nil {
		return nil, err
	}

	bundle, err := LoadSecrets(in.Secrets)
	if err != nil {
		return nil, err
	}

	sans := sansFor(endpointHost, in.ControlPlaneIPs, in.CertSANs)

	newInput := func(opts ...generate.Option) (*generate.Input, error) {
		genIn, err := generate.NewInput(in.ClusterName, in.Endpoint, in.KubernetesVersion, append([]generate.Option{
			generate.WithVersionContract(contract),
			generate.WithSecretsBundle(bundle),
			generate.WithEndpointList(in.ControlPlaneIPs),
			generate.WithAllowSchedulingOnControlPlanes(false),
		}, opts...)...)
		if err != nil {
			return nil, fmt.Errorf("prepare Talos config generation for cluster %q: %w", in.ClusterName, err)
		}

		return genIn, nil
	}

	out := &Configs{ContractVersion: contract.String()}

	var genIn *generate.Input

	if multiDoc(contract) {
		genIn, err = generateMultiDoc(in, sans, out, newInput)
	} else {
		genIn, err = generateV1Alpha1(in, sans, out, newInput)
	}

	if err != nil {
		return nil, err
	}

	if in.Firewall != nil {
		if out.ControlPlane, err = withFirewall(out.ControlPlane, *in.Firewall, true); err != nil {
			return nil, fmt.Errorf("control-plane firewall of cluster %q: %w", in.ClusterName, err)
		}

		if out.Worker, err = withFirewall(out.Worker, *in.Firewall, false); err != nil {
			return nil, fmt.Errorf("worker firewall of cluster %q: %w", in.ClusterName, err)
		}
	}

	if len(out.ControlPlane) > UserDataLimit {
		return nil, fmt.Errorf("the control-plane config of cluster %q is %d bytes, over the %d bytes an Instance's user data takes per key "+
			"(the inline manifest %q is %d of them; nothing was sent to any machine): pin a smaller chart (cilium-chart, POC_CILIUM_CHART)",
			in.ClusterName, len(out.ControlPlane), UserDataLimit, CiliumManifestName, len(in.ciliumManifest))
	}

	for _, c := range []struct {
		name string
		cfg  []byte
		mode Mode
	}{
		{"control-plane", out.ControlPlane, ModeCloud},
		{"worker", out.Worker, ModeMetal},
	} {
		warnings, err := Validate(c.cfg, c.mode)
		if err != nil {
			return nil, fmt.Errorf("generated %s config for cluster %q rejected by Talos validation (nothing was sent to any machine): %w", c.name, in.ClusterName, err)
		}

		for _, w := range warnings {
			out.Warnings = append(out.Warnings, c.name+": "+w)
		}
	}

	tc, err := genIn.Talosconfig()
	if err != nil {
		return nil, fmt.Errorf("generate talosconfig for cluster %q: %w", in.ClusterName, err)
	}

	if out.Talosconfig, err = tc.Bytes(); err != nil {
		return nil, fmt.Errorf("encode talosconfig for cluster %q: %w", in.ClusterName, err)
	}

	return out, nil
}

// multiDoc reports whether contract generates the Kubernetes settings as their own documents
// (Talos 1.14 and later) instead of the v1alpha1 cluster section.
func multiDoc(contract *config.VersionContract) bool {
	return contract.MultidocKubernetesConfigSupported()
}

type inputMaker func(opts ...generate.Option) (*generate.Input, error)

// generateV1Alpha1 renders the 1.12/1.13 form: one v1alpha1 document (machine, cluster) plus the
// HostnameConfig document, patched as described in doc.go.
func generateV1Alpha1(in Input, sans []string, out *Configs, newInput inputMaker) (*generate.Input, error) {
	// The extra SANs name the control planes: only their input carries them (machinery copies
	// them into machine.certSANs of every machine generated from an input).
	genIn, err := newInput(generate.WithAdditionalSubjectAltNames(sans))
	if err != nil {
		return nil, err
	}

	wIn, err := newInput()
	if err != nil {
		return nil, err
	}

	cpPatches, err := controlPlanePatches(in, sans)
	if err != nil {
		return nil, err
	}

	workerPatches, err := workerPatches(in)
	if err != nil {
		return nil, err
	}

	if out.ControlPlane, err = render(genIn, machine.TypeControlPlane, cpPatches); err != nil {
		return nil, err
	}

	if out.Worker, err = render(wIn, machine.TypeWorker, workerPatches); err != nil {
		return nil, err
	}

	return genIn, nil
}

// generateMultiDoc renders the 1.14 multi-document form. The install target is no longer
// .machine.install but an UnattendedInstallConfig document, which machinery generates itself from
// the install disk and image options (one generate.Input per role, since the two roles install
// different images on different disks); patching .machine.install instead is exactly the seed's
// "UnattendedInstallConfig config is incompatible with v1alpha1 config". The Kubernetes settings
// live in Kube* documents, which are patched; nothing is added to the v1alpha1 cluster section
// but cluster.etcd on the control planes.
func generateMultiDoc(in Input, sans []string, out *Configs, newInput inputMaker) (*generate.Input, error) {
	cpIn, err := newInput(generate.WithInstallDisk(in.ControlPlaneInstallDisk), generate.WithInstallImage(in.ControlPlaneInstaller),
		generate.WithAdditionalSubjectAltNames(sans))
	if err != nil {
		return nil, err
	}

	// An empty worker disk generates no UnattendedInstallConfig; Validate's metal check refuses it.
	wOpts := []generate.Option{generate.WithInstallImage(in.WorkerInstaller)}
	if in.WorkerInstallDisk != "" {
		wOpts = append(wOpts, generate.WithInstallDisk(in.WorkerInstallDisk))
	}

	wIn, err := newInput(wOpts...)
	if err != nil {
		return nil, err
	}

	cpPatches, err := controlPlanePatchesMultiDoc(in)
	if err != nil {
		return nil, err
	}

	wPatches, err := loadPatches(hostnamePatch(in))
	if err != nil {
		return nil, err
	}

	if out.ControlPlane, err = render(cpIn, machine.TypeControlPlane, cpPatches); err != nil {
		return nil, err
	}

	if out.Worker, err = render(wIn, machine.TypeWorker, wPatches); err != nil {
		return nil, err
	}

	return cpIn, nil
}

// normalize fills defaults and rejects inputs that would otherwise end up inside YAML or URLs.
func normalize(in Input) (Input, string, error) {
	host, errs := checkEndpoint(in)
	in, verrs := normalizeVersions(in)
	errs = append(errs, verrs...)
	in, merrs := normalizeMachines(in)
	errs = append(errs, merrs...)

	if len(errs) > 0 {
		return in, "", fmt.Errorf("talos config input for cluster %q: %w", in.ClusterName, errors.Join(errs...))
	}

	return in, host, nil
}

// checkEndpoint checks the cluster's name, its API endpoint and its control-plane addresses; it
// returns the endpoint's host.
func checkEndpoint(in Input) (string, []error) {
	var errs []error

	if !clusterRe.MatchString(in.ClusterName) {
		errs = append(errs, fmt.Errorf("cluster name %q must be a DNS label (lower-case letters, digits, '-')", in.ClusterName))
	}

	host := ""
	u, err := url.Parse(in.Endpoint)

	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("endpoint %q: %w", in.Endpoint, err))
	case u.Scheme != "https" || u.Hostname() == "" || u.Path != "" && u.Path != "/":
		errs = append(errs, fmt.Errorf("endpoint %q must look like https://<dns name or IP>:%d", in.Endpoint, netpolicy.PortKubeAPI))
	default:
		host = u.Hostname()
	}

	if len(in.ControlPlaneIPs) == 0 {
		errs = append(errs, errors.New("at least one control-plane IP is required"))
	}

	for _, ip := range in.ControlPlaneIPs {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("control-plane IP %q is not an IPv4 address", ip))
		}
	}

	return host, errs
}

// normalizeVersions fills the Talos and Kubernetes versions' defaults and checks the pair.
func normalizeVersions(in Input) (Input, []error) {
	var errs []error

	if in.TalosVersion == "" {
		in.TalosVersion = DefaultTalosVersion
	}

	if in.KubernetesVersion == "" {
		// The Talos version was checked by Contract before normalize runs.
		v, err := DefaultKubernetesVersion(in.TalosVersion)
		if err != nil {
			errs = append(errs, err)
		}

		in.KubernetesVersion = v
	}

	in.KubernetesVersion = strings.TrimPrefix(in.KubernetesVersion, "v")
	if !k8sVersionRe.MatchString(in.KubernetesVersion) {
		errs = append(errs, fmt.Errorf("kubernetes version %q must look like 1.36.3", in.KubernetesVersion))
	} else if err := CheckKubernetesVersion(in.TalosVersion, in.KubernetesVersion); err != nil {
		errs = append(errs, err)
	}

	return in, errs
}

// normalizeMachines fills the machines' defaults (hostname, install disk, installer images,
// Cilium) and checks them; it runs after normalizeVersions (the installers name the Talos version).
func normalizeMachines(in Input) (Input, []error) {
	var errs []error

	if in.WorkerHostname == "" {
		in.WorkerHostname = DefaultWorkerHostname
	}

	if !hostnameRe.MatchString(in.WorkerHostname) {
		errs = append(errs, fmt.Errorf("worker hostname %q must be a DNS label", in.WorkerHostname))
	}

	if in.ControlPlaneInstallDisk == "" {
		in.ControlPlaneInstallDisk = "/dev/sda"
	}

	// An empty worker disk is left for the metal validator to reject with its own words.
	for _, d := range []string{in.ControlPlaneInstallDisk, in.WorkerInstallDisk} {
		if d != "" && !diskRe.MatchString(d) {
			errs = append(errs, fmt.Errorf("install disk %q must be a /dev path", d))
		}
	}

	if in.ControlPlaneInstaller == "" || in.WorkerInstaller == "" {
		if !schematicRe.MatchString(in.SchematicID) {
			errs = append(errs, fmt.Errorf("schematic id %q must be 64 lower-case hex digits (from the Image Factory)", in.SchematicID))
		}
	}

	if in.ControlPlaneInstaller == "" {
		in.ControlPlaneInstaller = images.InstallerImage(cmp.Or(in.FactoryURL, images.DefaultFactoryURL), "scaleway", in.SchematicID, in.TalosVersion)
	}

	if in.WorkerInstaller == "" {
		in.WorkerInstaller = images.InstallerImage(cmp.Or(in.FactoryURL, images.DefaultFactoryURL), "metal", in.SchematicID, in.TalosVersion)
	}

	for _, img := range []string{in.ControlPlaneInstaller, in.WorkerInstaller} {
		if !imageRefRe.MatchString(img) {
			errs = append(errs, fmt.Errorf("image reference %q is malformed", img))
		}
	}

	switch {
	case in.NoCNI:
	case len(in.CiliumChart) == 0:
		errs = append(errs, fmt.Errorf("no Cilium chart: fetch the pinned one (%s) and pass it as CiliumChart", DefaultCiliumChart))
	default:
		m, err := clusterCiliumManifest(in.CiliumChart, in.CiliumRouting, in.KubernetesVersion)
		if err != nil {
			errs = append(errs, err)
		}

		in.ciliumManifest = m
	}

	return in, errs
}

func sansFor(endpointHost string, cpIPs, extra []string) []string {
	var sans []string

	for _, s := range slices.Concat([]string{endpointHost}, cpIPs, extra) {
		if s != "" && !slices.Contains(sans, s) {
			sans = append(sans, s)
		}
	}

	return sans
}

func render(genIn *generate.Input, t machine.Type, patches []configpatcher.Patch) ([]byte, error) {
	base, err := genIn.Config(t)
	if err != nil {
		return nil, fmt.Errorf("generate Talos %s config: %w", t, err)
	}

	patched, err := configpatcher.Apply(configpatcher.WithConfig(base), patches)
	if err != nil {
		return nil, fmt.Errorf("patch Talos %s config: %w", t, err)
	}

	cfg, err := patched.Config()
	if err != nil {
		return nil, fmt.Errorf("load patched Talos %s config: %w", t, err)
	}

	// No comments: the control-plane config travels as Instance user data, which is size-limited.
	b, err := cfg.EncodeBytes(encoder.WithComments(encoder.CommentsDisabled))
	if err != nil {
		return nil, fmt.Errorf("encode Talos %s config: %w", t, err)
	}

	return b, nil
}

type doc = map[string]any

func loadPatches(docs ...doc) ([]configpatcher.Patch, error) {
	var parts []string

	for _, d := range docs {
		b, err := yaml.Marshal(d)
		if err != nil {
			return nil, fmt.Errorf("encode Talos config patch: %w", err)
		}

		parts = append(parts, string(b))
	}

	p, err := configpatcher.LoadPatch([]byte(strings.Join(parts, "---\n")))
	if err != nil {
		return nil, fmt.Errorf("load Talos config patch: %w", err)
	}

	return []configpatcher.Patch{p}, nil
}

// commonCluster is the part of cluster: every node gets.
func commonCluster() doc {
	return doc{
		"network": doc{"cni": doc{"name": constants.NoneCNI}},
		"proxy":   doc{"disabled": true},
	}
}

func controlPlanePatches(in Input, sans []string) ([]configpatcher.Patch, error) {
	subnets := make([]string, 0, len(in.ControlPlaneIPs))
	for _, ip := range in.ControlPlaneIPs {
		subnets = append(subnets, ip+"/32")
	}

	cluster := commonCluster()
	cluster["allowSchedulingOnControlPlanes"] = false
	// The certSANs come from the generate input (WithAdditionalSubjectAltNames): patching them
	// again would list each twice.
	cluster["apiServer"] = doc{
		"extraArgs": doc{"service-node-port-range": NodePortRange},
	}
	cluster["etcd"] = doc{"advertisedSubnets": subnets}
	if !in.NoCNI {
		cluster["inlineManifests"] = []doc{{"name": CiliumManifestName, "contents": in.ciliumManifest}}
	}

	return loadPatches(doc{
		"machine": doc{
			"install": doc{"disk": in.ControlPlaneInstallDisk, "image": in.ControlPlaneInstaller},
		},
		"cluster": cluster,
	})
}

func workerPatches(in Input) ([]configpatcher.Patch, error) {
	install := doc{"image": in.WorkerInstaller}
	if in.WorkerInstallDisk != "" {
		install["disk"] = in.WorkerInstallDisk
	}

	return loadPatches(
		doc{
			"machine": doc{"install": install},
			"cluster": commonCluster(),
		},
		hostnamePatch(in),
	)
}

// hostnamePatch fixes the worker's name: the generated HostnameConfig says auto: stable, a fixed
// name needs auto: off.
func hostnamePatch(in Input) doc {
	return doc{
		"apiVersion": "v1alpha1",
		"kind":       "HostnameConfig",
		"auto":       "off",
		"hostname":   in.WorkerHostname,
	}
}

// controlPlanePatchesMultiDoc is controlPlanePatches for the 1.14 form: the same values, each in
// the document that holds it since 1.14 (see doc.go). The API server certSANs and the
// control-plane taint (allowSchedulingOnControlPlanes: false) come from the generate options.
func controlPlanePatchesMultiDoc(in Input) ([]configpatcher.Patch, error) {
	subnets := make([]string, 0, len(in.ControlPlaneIPs))
	for _, ip := range in.ControlPlaneIPs {
		subnets = append(subnets, ip+"/32")
	}

	var cni []doc
	if !in.NoCNI {
		cni = append(cni, doc{"apiVersion": "v1alpha1", "kind": "KubeInlineManifestConfig", "name": CiliumManifestName, "manifest": in.ciliumManifest})
	}

	return loadPatches(append([]doc{
		doc{"cluster": doc{"etcd": doc{"advertisedSubnets": subnets}}},
		// CNI none: no Flannel document (its absence is "no built-in CNI" since 1.14).
		doc{"apiVersion": "v1alpha1", "kind": "KubeFlannelCNIConfig", "$patch": "delete"},
		doc{"apiVersion": "v1alpha1", "kind": "KubeProxyConfig", "enabled": false},
		doc{"apiVersion": "v1alpha1", "kind": "KubeAPIServerConfig", "extraArgs": doc{"service-node-port-range": NodePortRange}},
	}, cni...)...)
}
