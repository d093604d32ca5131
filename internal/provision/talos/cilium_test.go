package talos

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// TestCiliumImagesPinnedByDigest: every image the install deploys (agent, operator, envoy) goes
// to the chart by digest, with useDigest on; the values name each one once.
func TestCiliumImagesPinnedByDigest(t *testing.T) {
	t.Parallel()
	digest := regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
	for _, img := range []string{CiliumAgentImage, CiliumOperatorImage, CiliumEnvoyImage} {
		if !digest.MatchString(img) {
			t.Errorf("%s is not pinned by digest", img)
		}
	}
	vals := CiliumHelmValues(constants.DefaultIPv4PodCIDR, "")
	for _, want := range []string{"image.digest=sha256:", "operator.image.genericDigest=sha256:", "envoy.image.digest=sha256:"} {
		if !slices.ContainsFunc(vals, func(v string) bool { return strings.HasPrefix(v, want) }) {
			t.Errorf("values lack %s…: %v", want, vals)
		}
	}
	for _, want := range []string{"image.useDigest=true", "operator.image.useDigest=true", "envoy.image.useDigest=true", "operator.image.repository=quay.io/cilium/operator"} {
		if !slices.Contains(vals, want) {
			t.Errorf("values lack %s", want)
		}
	}
	if strings.HasSuffix(DefaultCiliumCLIImage, ":latest") || !strings.Contains(DefaultCiliumCLIImage, ":v") {
		t.Errorf("the installer image floats: %s", DefaultCiliumCLIImage)
	}
}

// TestInstallManifestImagesPinnedByDigest: every image of the rendered install manifest (the
// installer Job's included) names a version and a digest.
func TestInstallManifestImagesPinnedByDigest(t *testing.T) {
	t.Parallel()
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v[0-9][^@]*@sha256:[0-9a-f]{64}$`)
	m := ciliumInstallManifest(Input{CiliumVersion: DefaultCiliumVersion, CiliumCLIImage: DefaultCiliumCLIImage})
	images := regexp.MustCompile(`(?m)^\s*image: *(\S+)$`).FindAllStringSubmatch(m, -1)
	if len(images) == 0 {
		t.Fatalf("no image in the install manifest:\n%s", m)
	}
	for _, img := range images {
		if !pinned.MatchString(img[1]) {
			t.Errorf("install manifest image %s is not pinned by version and digest", img[1])
		}
	}
}

// TestCiliumRoutingModes: tunnel mode by default, with no native-routing value left; native only
// when asked, with its CIDR and auto direct routes.
func TestCiliumRoutingModes(t *testing.T) {
	t.Parallel()
	tunnel := CiliumHelmValues("10.244.0.0/16", "")
	if !slices.Contains(tunnel, "routingMode=tunnel") || slices.ContainsFunc(tunnel, func(v string) bool {
		return strings.HasPrefix(v, "autoDirectNodeRoutes") || strings.HasPrefix(v, "ipv4NativeRoutingCIDR")
	}) {
		t.Errorf("default values: %v", tunnel)
	}
	native := CiliumHelmValues("10.244.0.0/16", RoutingNative)
	for _, want := range []string{"routingMode=native", "autoDirectNodeRoutes=true", "ipv4NativeRoutingCIDR=10.244.0.0/16"} {
		if !slices.Contains(native, want) {
			t.Errorf("native values lack %s", want)
		}
	}
}

// TestDefaultKubernetesInEveryRange: the Kubernetes version of every contract is one its Talos runs
// (machinery's compatibility table) and one the pinned Cilium is tested with (1.30–1.33,
// Documentation/network/kubernetes/compatibility.rst @v1.18.14).
func TestDefaultKubernetesInEveryRange(t *testing.T) {
	t.Parallel()
	for _, talos := range []string{"v1.12.6", "v1.13.11", "v1.14.1"} {
		v, err := DefaultKubernetesVersion(talos)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckKubernetesVersion(talos, v); err != nil {
			t.Errorf("Talos %s: %v", talos, err)
		}
		minor := strings.Join(strings.Split(v, ".")[:2], ".")
		if !slices.Contains([]string{"1.30", "1.31", "1.32", "1.33"}, minor) {
			t.Errorf("Talos %s: Kubernetes %s is outside Cilium %s's tested range", talos, v, DefaultCiliumVersion)
		}
	}
}
