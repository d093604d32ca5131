package talos

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/generate"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"go.yaml.in/yaml/v4"
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
	// CiliumVersion and CiliumCLIImage override the pinned Cilium install (see doc.go).
	CiliumVersion  string
	CiliumCLIImage string
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

// Pinned Cilium install; see doc.go for the values.
const (
	DefaultCiliumVersion  = "1.18.0"
	DefaultCiliumCLIImage = "quay.io/cilium/cilium-cli:latest"
	// CiliumWireGuardPort is the UDP port Cilium's WireGuard tunnel listens on (SPEC §2 rules).
	CiliumWireGuardPort = 51871
	// NodePortRange is the Kubernetes NodePort range: the edge gateway listens on 80 and 443.
	NodePortRange = "80-443"
	// KubePrismPort is Talos's local API server load balancer, which Cilium uses.
	KubePrismPort = constants.DefaultKubePrismPort
)

var (
	schematicRe  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	diskRe       = regexp.MustCompile(`^/dev/[A-Za-z0-9/_-]+$`)
	hostnameRe   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	clusterRe    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	imageRefRe   = regexp.MustCompile(`^[A-Za-z0-9._/-]+(:[A-Za-z0-9._-]+)?(@sha256:[0-9a-f]{64})?$`)
	k8sVersionRe = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
)

// InstallerImage returns the Image Factory installer of a schematic for a platform
// ("scaleway" or "metal"), e.g. factory.talos.dev/metal-installer/<id>:v1.13.11.
func InstallerImage(platform, schematicID, talosVersion string) string {
	return fmt.Sprintf("factory.talos.dev/%s-installer/%s:%s", platform, schematicID, "v"+strings.TrimPrefix(talosVersion, "v"))
}

// Generate builds, patches and validates the configs of one cluster. It does no I/O; ctx is only
// checked so a cancelled run stops before the (CPU-bound) generation.
func Generate(ctx context.Context, in Input) (*Configs, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("generate Talos configs: %w", err)
	}

	in, endpointHost, err := normalize(in)
	if err != nil {
		return nil, err
	}

	contract, err := Contract(in.TalosVersion)
	if err != nil {
		return nil, err
	}

	bundle, err := LoadSecrets(in.Secrets)
	if err != nil {
		return nil, err
	}

	sans := sansFor(endpointHost, in.ControlPlaneIPs, in.CertSANs)

	genIn, err := generate.NewInput(in.ClusterName, in.Endpoint, in.KubernetesVersion,
		generate.WithVersionContract(contract),
		generate.WithSecretsBundle(bundle),
		generate.WithEndpointList(in.ControlPlaneIPs),
		generate.WithAdditionalSubjectAltNames(sans),
		generate.WithAllowSchedulingOnControlPlanes(false),
	)
	if err != nil {
		return nil, fmt.Errorf("prepare Talos config generation for cluster %q: %w", in.ClusterName, err)
	}

	cpPatches, err := controlPlanePatches(in, sans)
	if err != nil {
		return nil, err
	}

	workerPatches, err := workerPatches(in)
	if err != nil {
		return nil, err
	}

	out := &Configs{ContractVersion: contract.String()}

	if out.ControlPlane, err = render(genIn, machine.TypeControlPlane, cpPatches); err != nil {
		return nil, err
	}

	if out.Worker, err = render(genIn, machine.TypeWorker, workerPatches); err != nil {
		return nil, err
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

// normalize fills defaults and rejects inputs that would otherwise end up inside YAML or URLs.
func normalize(in Input) (Input, string, error) {
	var errs []error

	if !clusterRe.MatchString(in.ClusterName) {
		errs = append(errs, fmt.Errorf("cluster name %q must be a DNS label (lower-case letters, digits, '-')", in.ClusterName))
	}

	u, err := url.Parse(in.Endpoint)

	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("endpoint %q: %w", in.Endpoint, err))
	case u.Scheme != "https" || u.Hostname() == "" || u.Path != "" && u.Path != "/":
		errs = append(errs, fmt.Errorf("endpoint %q must look like https://<dns name or IP>:6443", in.Endpoint))
	}

	if len(in.ControlPlaneIPs) == 0 {
		errs = append(errs, errors.New("at least one control-plane IP is required"))
	}

	for _, ip := range in.ControlPlaneIPs {
		if a, err := netip.ParseAddr(ip); err != nil || !a.Is4() {
			errs = append(errs, fmt.Errorf("control-plane IP %q is not an IPv4 address", ip))
		}
	}

	if in.TalosVersion == "" {
		in.TalosVersion = DefaultTalosVersion
	}

	if in.KubernetesVersion == "" {
		in.KubernetesVersion = DefaultKubernetesVersion()
	}

	in.KubernetesVersion = strings.TrimPrefix(in.KubernetesVersion, "v")
	if !k8sVersionRe.MatchString(in.KubernetesVersion) {
		errs = append(errs, fmt.Errorf("kubernetes version %q must look like 1.36.3", in.KubernetesVersion))
	}

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
		in.ControlPlaneInstaller = InstallerImage("scaleway", in.SchematicID, in.TalosVersion)
	}

	if in.WorkerInstaller == "" {
		in.WorkerInstaller = InstallerImage("metal", in.SchematicID, in.TalosVersion)
	}

	if in.CiliumVersion == "" {
		in.CiliumVersion = DefaultCiliumVersion
	}

	if in.CiliumCLIImage == "" {
		in.CiliumCLIImage = DefaultCiliumCLIImage
	}

	for _, img := range []string{in.ControlPlaneInstaller, in.WorkerInstaller, in.CiliumCLIImage} {
		if !imageRefRe.MatchString(img) {
			errs = append(errs, fmt.Errorf("image reference %q is malformed", img))
		}
	}

	if !k8sVersionRe.MatchString(strings.TrimPrefix(in.CiliumVersion, "v")) {
		errs = append(errs, fmt.Errorf("cilium version %q must look like 1.18.0", in.CiliumVersion))
	}

	if len(errs) > 0 {
		return in, "", fmt.Errorf("talos config input for cluster %q: %w", in.ClusterName, errors.Join(errs...))
	}

	return in, u.Hostname(), nil
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
	cluster["apiServer"] = doc{
		"certSANs":  sans,
		"extraArgs": doc{"service-node-port-range": NodePortRange},
	}
	cluster["etcd"] = doc{"advertisedSubnets": subnets}
	cluster["inlineManifests"] = []doc{{
		"name":     "cilium-install",
		"contents": ciliumInstallManifest(in),
	}}

	return loadPatches(doc{
		"machine": doc{
			"certSANs": sans,
			"install":  doc{"disk": in.ControlPlaneInstallDisk, "image": in.ControlPlaneInstaller},
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
		// The generated HostnameConfig says auto: stable; a fixed name needs auto: off.
		doc{
			"apiVersion": "v1alpha1",
			"kind":       "HostnameConfig",
			"auto":       "off",
			"hostname":   in.WorkerHostname,
		},
	)
}

// CiliumHelmValues are the --set values of the cilium install Job, in order.
func CiliumHelmValues(podCIDR string) []string {
	return []string{
		"ipam.mode=kubernetes",
		"kubeProxyReplacement=true",
		"k8sServiceHost=localhost",
		fmt.Sprintf("k8sServicePort=%d", KubePrismPort),
		"routingMode=native",
		"ipv4NativeRoutingCIDR=" + podCIDR,
		"autoDirectNodeRoutes=true",
		"encryption.enabled=true",
		"encryption.type=wireguard",
		"hostFirewall.enabled=true",
		`nodePort.range=80\,443`,
		"securityContext.capabilities.ciliumAgent={CHOWN,KILL,NET_ADMIN,NET_RAW,IPC_LOCK,SYS_ADMIN,SYS_RESOURCE,DAC_OVERRIDE,FOWNER,SETGID,SETUID}",
		"securityContext.capabilities.cleanCiliumState={NET_ADMIN,SYS_ADMIN,SYS_RESOURCE}",
		"cgroup.autoMount.enabled=false",
		"cgroup.hostRoot=/sys/fs/cgroup",
	}
}

// ciliumInstallManifest is the inline manifest that installs Cilium once the API server is up:
// the Job runs on a control plane with host networking (there is no CNI yet) and reaches the API
// server on the node's own address.
func ciliumInstallManifest(in Input) string {
	args := []string{"install", "--version=" + strings.TrimPrefix(in.CiliumVersion, "v")}
	for _, v := range CiliumHelmValues(constants.DefaultIPv4PodNet) {
		args = append(args, "--set", v)
	}

	job := doc{
		"apiVersion": "batch/v1",
		"kind":       "Job",
		"metadata":   doc{"name": "cilium-install", "namespace": "kube-system"},
		"spec": doc{
			"backoffLimit": 10,
			"template": doc{
				"metadata": doc{"labels": doc{"app": "cilium-install"}},
				"spec": doc{
					"restartPolicy":      "OnFailure",
					"serviceAccountName": "cilium-install",
					"hostNetwork":        true,
					// Tolerate everything: there is no CNI yet, so every node is NotReady.
					"tolerations": []doc{{"operator": "Exists"}},
					"affinity": doc{"nodeAffinity": doc{"requiredDuringSchedulingIgnoredDuringExecution": doc{
						"nodeSelectorTerms": []doc{{"matchExpressions": []doc{{
							"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
						}}}},
					}}},
					"containers": []doc{{
						"name":    "cilium-install",
						"image":   in.CiliumCLIImage,
						"command": []string{"cilium"},
						"args":    args,
						"env": []doc{
							{"name": "KUBERNETES_SERVICE_HOST", "valueFrom": doc{"fieldRef": doc{"apiVersion": "v1", "fieldPath": "status.podIP"}}},
							{"name": "KUBERNETES_SERVICE_PORT", "value": "6443"},
						},
					}},
				},
			},
		},
	}

	docs := []doc{
		{
			"apiVersion": "v1",
			"kind":       "ServiceAccount",
			"metadata":   doc{"name": "cilium-install", "namespace": "kube-system"},
		},
		{
			"apiVersion": "rbac.authorization.k8s.io/v1",
			"kind":       "ClusterRoleBinding",
			"metadata":   doc{"name": "cilium-install"},
			"roleRef":    doc{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
			"subjects":   []doc{{"kind": "ServiceAccount", "name": "cilium-install", "namespace": "kube-system"}},
		},
		job,
	}

	parts := make([]string, 0, len(docs))
	for _, d := range docs {
		// Marshal of plain maps, strings and ints cannot fail.
		b, _ := yaml.Marshal(d) //nolint:errcheck
		parts = append(parts, string(b))
	}

	return strings.Join(parts, "---\n")
}
