package talos

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"gopkg.in/yaml.v2"

	"github.com/pocbot/pocbot/internal/chart"
	"github.com/pocbot/pocbot/internal/settings"
)

// The pinned Cilium install (see doc.go, "Cilium"). Cilium 1.18's documented Kubernetes
// compatibility is 1.30–1.33 (Documentation/network/kubernetes/compatibility.rst @v1.18.14), so
// every contract pins Kubernetes 1.33.6 (PinnedKubernetesVersion), which Talos 1.12, 1.13 and 1.14
// all run. Every image the install deploys is pinned by digest, from the v1.18.1 release's
// "Docker Manifests" (https://github.com/cilium/cilium/releases/tag/v1.18.1), the envoy image from
// the chart of that release as `cilium status` reports it.
const (
	DefaultCiliumVersion = "1.18.1"
	CiliumAgentImage     = "quay.io/cilium/cilium:v1.18.1@sha256:65ab17c052d8758b2ad157ce766285e04173722df59bdee1ea6d5fda7149f0e9"
	CiliumOperatorImage  = "quay.io/cilium/operator-generic:v1.18.1@sha256:97f4553afa443465bdfbc1cc4927c93f16ac5d78e4dd2706736e7395382201bc"
	CiliumEnvoyImage     = "quay.io/cilium/cilium-envoy:v1.34.4-1754895458-68cffdfa568b6b226d70a7ef81fc65dda3b890bf@sha256:247e908700012f7ef56f75908f8c965215c26a27762f296068645eb55450bda2"
	// PinnedKubernetesVersion is inside Cilium 1.18's tested range and every supported Talos's.
	PinnedKubernetesVersion = "1.33.6"
)

// CiliumManifestName is the inline manifest that carries the rendered chart: Talos's manifest
// controller creates what of it is missing whenever a control plane's etcd is healthy.
const CiliumManifestName = "cilium"

// Cilium routing modes (Input.CiliumRouting).
const (
	// RoutingTunnel is VXLAN encapsulation between node addresses, with WireGuard for pod
	// traffic: the default, and the mode that crosses Scaleway's L3 subnets.
	RoutingTunnel = "tunnel"
	// RoutingNative is native routing with auto direct node routes: needs every node on one L2
	// segment, which Scaleway's public addresses are not. Kept to show it fail.
	RoutingNative = "native"
)

// imageParts splits "repo:tag@sha256:…" into its repository, tag and digest.
func imageParts(ref string) (repo, tag, digest string) {
	rest, digest, _ := strings.Cut(ref, "@")
	i := strings.LastIndex(rest, ":")
	return rest[:i], rest[i+1:], digest
}

// DefaultCiliumChart is the pinned chart (settings.DefaultCiliumChart): Cilium 1.18.1's archive
// as helm.cilium.io serves it, whose repository is github.com/cilium/charts. The digest was
// checked first-hand against that archive: cilium-1.18.1.tgz at github.com/cilium/charts commit
// 009b5e9 hashes to 36aa882b…, the digest its index.yaml lists for 1.18.1 (created
// 2025-08-15). A wrong pin still fails the up's talos-config step (chart.ErrDigest), before any
// control plane gets a config, and never installs something else.
//
// Rendered with CiliumValues by Helm v4.3.2 and by internal/chart, that archive gives the same
// 20 objects (tunnel and native routing alike, 52 kB of manifest); the control-plane config
// that carries it weighs about 80 kB (69 kB with Talos 1.14's documents), under UserDataLimit.
var DefaultCiliumChart = mustSource(chart.ParseSource(settings.DefaultCiliumChart))

func mustSource(v chart.Source, err error) chart.Source {
	if err != nil {
		panic(err)
	}

	return v
}

// CiliumValues are the values the bot gives Cilium's chart, in the chart's value names: IPAM
// from Kubernetes, kube-proxy replacement through KubePrism, the routing mode, WireGuard, the
// Talos-specific security context and cgroup settings of the Talos Cilium guide, and every
// image by digest.
func CiliumValues(podCIDR, routing string) map[string]any {
	agentRepo, agentTag, agentDigest := imageParts(CiliumAgentImage)
	opRepo, opTag, opDigest := imageParts(CiliumOperatorImage)
	envoyRepo, envoyTag, envoyDigest := imageParts(CiliumEnvoyImage)

	v := map[string]any{
		"ipam":                 map[string]any{"mode": "kubernetes"},
		"kubeProxyReplacement": true,
		"k8sServiceHost":       "localhost",
		"k8sServicePort":       KubePrismPort,
		"encryption":           map[string]any{"enabled": true, "type": "wireguard"},
		// Off: a CNI host firewall without host policies only adds a second, empty layer, and
		// Talos warns that it can take precedence over its own; Talos's firewall does the job.
		"hostFirewall": map[string]any{"enabled": false},
		// Off: nothing of the bot reads flows, and port 4244 stays closed.
		"hubble":   map[string]any{"enabled": false},
		"nodePort": map[string]any{"range": "80,443"},
		"securityContext": map[string]any{"capabilities": map[string]any{
			"ciliumAgent":      []string{"CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_ADMIN", "SYS_RESOURCE", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"},
			"cleanCiliumState": []string{"NET_ADMIN", "SYS_ADMIN", "SYS_RESOURCE"},
		}},
		"cgroup":   map[string]any{"autoMount": map[string]any{"enabled": false}, "hostRoot": "/sys/fs/cgroup"},
		"image":    map[string]any{"repository": agentRepo, "tag": agentTag, "digest": agentDigest, "useDigest": true},
		"operator": map[string]any{"image": map[string]any{"repository": strings.TrimSuffix(opRepo, "-generic"), "tag": opTag, "genericDigest": opDigest, "useDigest": true}},
		"envoy":    map[string]any{"image": map[string]any{"repository": envoyRepo, "tag": envoyTag, "digest": envoyDigest, "useDigest": true}},
	}

	if routing == RoutingNative {
		v["routingMode"], v["ipv4NativeRoutingCIDR"], v["autoDirectNodeRoutes"] = "native", podCIDR, true
	} else {
		v["routingMode"], v["tunnelProtocol"] = "tunnel", "vxlan"
	}

	return v
}

// CiliumManifest renders the chart archive with CiliumValues into the inline manifest the control
// planes carry (release "cilium" in kube-system, as the Talos Cilium guide templates it), and
// refuses a manifest with an image not pinned by digest or a CLI image (CheckManifestImages).
func CiliumManifest(archive []byte, podCIDR, routing, kubernetesVersion string) (string, error) {
	c, err := chart.Load(archive)
	if err != nil {
		return "", fmt.Errorf("cilium chart: %w", err)
	}

	m, err := chart.Render(c, chart.Options{ReleaseName: "cilium", Namespace: "kube-system", Values: CiliumValues(podCIDR, routing), KubeVersion: kubernetesVersion})
	if err != nil {
		return "", fmt.Errorf("render the cilium chart %s %s: %w", c.Name, c.Version, err)
	}

	if err := CheckManifestImages(m); err != nil {
		return "", fmt.Errorf("the rendered cilium chart %s %s: %w", c.Name, c.Version, err)
	}

	return m, nil
}

// clusterCiliumManifest is the manifest Generate puts in a cluster's control-plane config: the
// chart rendered for the default pod CIDR, the routing mode and the Kubernetes version (pinned
// when empty).
func clusterCiliumManifest(archive []byte, routing, kubernetesVersion string) (string, error) {
	return CiliumManifest(archive, constants.DefaultIPv4PodCIDR, routing, cmp.Or(kubernetesVersion, PinnedKubernetesVersion))
}

// CheckCiliumChart renders archive as Generate will and checks that the manifest leaves room
// in the control planes' user data: an up's pre-flight, so that a chart that does not render,
// names an image without a digest or cannot fit refuses the up before anything billed exists.
// The error names the template and the function, or the image, or the size.
func CheckCiliumChart(archive []byte, routing, kubernetesVersion string) error {
	m, err := clusterCiliumManifest(archive, routing, kubernetesVersion)
	if err != nil {
		return err
	}

	if len(m) > UserDataLimit {
		return fmt.Errorf("the rendered cilium chart is %d bytes, over the %d bytes an Instance's user data takes per key: pin a smaller chart (cilium-chart, POC_CILIUM_CHART)", len(m), UserDataLimit)
	}

	return nil
}

var digestRef = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// CheckManifestImages refuses a manifest that names an image without a digest, or a CLI image
// (cilium-cli: the installer Ubuntu image with three cloud CLIs that the Job method pulled). It
// reads every container and init container of every document.
func CheckManifestImages(manifest string) error {
	images, err := ManifestImages(manifest)
	if err != nil {
		return err
	}

	for _, img := range images {
		switch {
		case strings.Contains(img, "cilium-cli"):
			return fmt.Errorf("image %s is a CLI image: nothing installs through one", img)
		case !digestRef.MatchString(img):
			return fmt.Errorf("image %s is not pinned by digest", img)
		}
	}

	return nil
}

// ManifestImages lists the images of a manifest's pod templates (containers, init and
// ephemeral containers of Pods, and of the templates of workloads, Jobs and CronJobs).
func ManifestImages(manifest string) ([]string, error) {
	var out []string

	dec := yaml.NewDecoder(strings.NewReader(manifest))

	for {
		var d any
		if err := dec.Decode(&d); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}

			return nil, fmt.Errorf("manifest: %w", err)
		}

		out = append(out, imagesIn(d)...)
	}
}

// imagesIn walks a decoded document for the "image" of every entry of a containers,
// initContainers or ephemeralContainers list, wherever it sits.
func imagesIn(v any) []string {
	var out []string

	switch x := v.(type) {
	case map[any]any:
		for k, e := range x {
			if ks, _ := k.(string); ks == "containers" || ks == "initContainers" || ks == "ephemeralContainers" {
				if l, ok := e.([]any); ok {
					for _, c := range l {
						if cm, ok := c.(map[any]any); ok {
							out = append(out, fmt.Sprint(cm["image"]))
						}
					}
				}
			}

			out = append(out, imagesIn(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, imagesIn(e)...)
		}
	}

	return out
}
