package talos

import (
	"fmt"
	"strings"
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
	// DefaultCiliumCLIImage runs `cilium install` in the install Job, pinned by version and
	// digest. cilium-cli v0.18.2 supports "Cilium 1.15 and newer" (its README's release table at
	// the tag); at v0.18.2 the project's image workflow published the release image to
	// quay.io/cilium/cilium-cli-ci only (.github/workflows/images.yaml @v0.18.2, matrix name
	// cilium-cli-ci, tag = the git tag). No Cilium source records image digests of the CLI; this
	// one is the pin of xd-ventures/tf-xd-venture-talos01 (modules/talos-cluster-vm/variables.tf
	// @8da4352, Renovate datasource=docker), whose commit 31b7df2 records a Talos cluster on real
	// VMs installing Cilium with it. See doc.go, "Cilium".
	DefaultCiliumCLIImage = "quay.io/cilium/cilium-cli-ci:v0.18.2@sha256:503324c1fc7027e0daeb251ca2d4ad6b42d73c6be7a89cb8057cce8e59e50393"
	// PinnedKubernetesVersion is inside Cilium 1.18's tested range and every supported Talos's.
	PinnedKubernetesVersion = "1.33.6"
)

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

// CiliumHelmValues are the --set values of the cilium install Job, in order: the routing mode,
// WireGuard, kube-proxy replacement through KubePrism, the Talos-specific security context and
// cgroup settings of the Talos Cilium guide, and every image by digest.
func CiliumHelmValues(podCIDR, routing string) []string {
	agentRepo, agentTag, agentDigest := imageParts(CiliumAgentImage)
	opRepo, opTag, opDigest := imageParts(CiliumOperatorImage)
	envoyRepo, envoyTag, envoyDigest := imageParts(CiliumEnvoyImage)
	out := []string{
		"ipam.mode=kubernetes",
		"kubeProxyReplacement=true",
		"k8sServiceHost=localhost",
		fmt.Sprintf("k8sServicePort=%d", KubePrismPort),
	}
	if routing == RoutingNative {
		out = append(out, "routingMode=native", "ipv4NativeRoutingCIDR="+podCIDR, "autoDirectNodeRoutes=true")
	} else {
		out = append(out, "routingMode=tunnel", "tunnelProtocol=vxlan")
	}
	return append(out,
		"encryption.enabled=true",
		"encryption.type=wireguard",
		// Off: a CNI host firewall without host policies only adds a second, empty layer, and
		// Talos warns that it can take precedence over its own; Talos's firewall does the job.
		"hostFirewall.enabled=false",
		// Off: nothing of the bot reads flows, and port 4244 stays closed.
		"hubble.enabled=false",
		`nodePort.range=80\,443`,
		"securityContext.capabilities.ciliumAgent={CHOWN,KILL,NET_ADMIN,NET_RAW,IPC_LOCK,SYS_ADMIN,SYS_RESOURCE,DAC_OVERRIDE,FOWNER,SETGID,SETUID}",
		"securityContext.capabilities.cleanCiliumState={NET_ADMIN,SYS_ADMIN,SYS_RESOURCE}",
		"cgroup.autoMount.enabled=false",
		"cgroup.hostRoot=/sys/fs/cgroup",
		"image.repository="+agentRepo, "image.tag="+agentTag, "image.digest="+agentDigest, "image.useDigest=true",
		"operator.image.repository="+strings.TrimSuffix(opRepo, "-generic"), "operator.image.tag="+opTag,
		"operator.image.genericDigest="+opDigest, "operator.image.useDigest=true",
		"envoy.image.repository="+envoyRepo, "envoy.image.tag="+envoyTag, "envoy.image.digest="+envoyDigest, "envoy.image.useDigest=true",
	)
}
