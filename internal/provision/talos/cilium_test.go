package talos

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/siderolabs/talos/pkg/machinery/constants"
	"go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/sim/cnichart"
)

// TestCiliumImagesPinnedByDigest: every image the install deploys (agent, operator, envoy) goes
// to the chart by digest, with useDigest on.
func TestCiliumImagesPinnedByDigest(t *testing.T) {
	t.Parallel()
	digest := regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
	for _, img := range []string{CiliumAgentImage, CiliumOperatorImage, CiliumEnvoyImage} {
		if !digest.MatchString(img) {
			t.Errorf("%s is not pinned by digest", img)
		}
	}
	v := CiliumValues(constants.DefaultIPv4PodCIDR, "")
	for _, path := range [][]string{{"image"}, {"operator", "image"}, {"envoy", "image"}} {
		m := v
		for _, k := range path {
			m, _ = m[k].(map[string]any)
		}
		d, _ := m["digest"].(string)
		if d == "" {
			d, _ = m["genericDigest"].(string)
		}
		if !strings.HasPrefix(d, "sha256:") || m["useDigest"] != true {
			t.Errorf("%v: %v", path, m)
		}
	}
	if !regexp.MustCompile(`^https://\S+\.tgz$`).MatchString(DefaultCiliumChart.URL) || len(DefaultCiliumChart.SHA256) != 64 {
		t.Errorf("the chart is not pinned: %s", DefaultCiliumChart)
	}
}

// TestCiliumRoutingModes: tunnel mode by default, with no native-routing value left; native only
// when asked, with its CIDR and auto direct routes.
func TestCiliumRoutingModes(t *testing.T) {
	t.Parallel()
	tunnel := CiliumValues("10.244.0.0/16", "")
	if tunnel["routingMode"] != "tunnel" || tunnel["tunnelProtocol"] != "vxlan" || tunnel["autoDirectNodeRoutes"] != nil || tunnel["ipv4NativeRoutingCIDR"] != nil {
		t.Errorf("default values: %v", tunnel)
	}
	native := CiliumValues("10.244.0.0/16", RoutingNative)
	if native["routingMode"] != "native" || native["autoDirectNodeRoutes"] != true || native["ipv4NativeRoutingCIDR"] != "10.244.0.0/16" {
		t.Errorf("native values: %v", native)
	}
}

// TestCheckManifestImages: a CLI image or an image without a digest, anywhere a pod template
// names one, is refused.
func TestCheckManifestImages(t *testing.T) {
	t.Parallel()
	const d = "@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	pod := func(field, img string) string {
		return "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n      " + field + ":\n      - name: c\n        image: " + img + "\n"
	}
	cron := "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: x}\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n          - {name: c, image: quay.io/a/b:v1}\n"
	for _, tc := range []struct {
		name, manifest string
		ok             bool
	}{
		{"by digest", pod("containers", "quay.io/a/b:v1"+d), true},
		{"tag only", pod("containers", "quay.io/a/b:v1"), false},
		{"init container by tag", pod("containers", "quay.io/a/b:v1"+d) + "---\n" + pod("initContainers", "quay.io/a/c:v1"), false},
		{"the CLI image, even by digest", pod("containers", "quay.io/cilium/cilium-cli-ci:v0.18.2"+d), false},
		{"a CronJob's template", cron, false},
		{"no pod", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {image: whatever}\n", true},
	} {
		if err := CheckManifestImages(tc.manifest); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestNoConfigNamesACLIImageOrAnUndigestedImage scans every generated machine config (each
// contract, both routings, control plane and worker): no document names a cilium-cli image, no
// inline manifest an image without a digest, and none is a Job; the install is the rendered
// chart, the same bytes at every generation.
func TestNoConfigNamesACLIImageOrAnUndigestedImage(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"v1.12.6", DefaultTalosVersion, "v1.14.1"} {
		for _, routing := range []string{RoutingTunnel, RoutingNative} {
			in := baseInput(t)
			in.TalosVersion, in.CiliumRouting = version, routing
			if version == "v1.14.1" {
				in.Secrets = testSecrets114(t)
			}
			cfgs, err := Generate(t.Context(), in)
			if err != nil {
				t.Fatalf("%s %s: %v", version, routing, err)
			}
			again, err := Generate(t.Context(), in)
			if err != nil || string(again.ControlPlane) != string(cfgs.ControlPlane) {
				t.Errorf("%s %s: a second generation differs (%v)", version, routing, err)
			}
			for role, b := range map[string][]byte{"control plane": cfgs.ControlPlane, "worker": cfgs.Worker} {
				if strings.Contains(string(b), "cilium-cli") {
					t.Errorf("%s %s %s config names cilium-cli", version, routing, role)
				}
				manifests := inlineManifests(t, b)
				if role == "worker" && len(manifests) != 0 || role == "control plane" && len(manifests) != 1 {
					t.Fatalf("%s %s %s: inline manifests %v", version, routing, role, slices.Collect(maps.Keys(manifests)))
				}
				for name, m := range manifests {
					images, err := ManifestImages(m)
					if err != nil || len(images) < 3 || name != CiliumManifestName {
						t.Fatalf("%s %s: manifest %q images %v, %v", version, routing, name, images, err)
					}
					if err := CheckManifestImages(m); err != nil {
						t.Errorf("%s %s: %v", version, routing, err)
					}
					if strings.Contains(m, "kind: Job") {
						t.Errorf("%s %s: the manifest still carries a Job", version, routing)
					}
				}
			}
		}
	}
}

// inlineManifests are a config's inline manifests by name, in either form (cluster.inlineManifests
// of the v1alpha1 document, or KubeInlineManifestConfig documents).
func inlineManifests(t *testing.T, cfg []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	dec := yaml.NewDecoder(bytes.NewReader(cfg))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			return out
		}
		if d["kind"] == "KubeInlineManifestConfig" {
			out[fmt.Sprint(d["name"])] = fmt.Sprint(d["manifest"])
		}
		if c, ok := d["cluster"].(map[string]any); ok {
			l, _ := c["inlineManifests"].([]any)
			for _, e := range l {
				m, _ := e.(map[string]any)
				out[fmt.Sprint(m["name"])] = fmt.Sprint(m["contents"])
			}
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

func imageDigest(ref string) string { _, _, d := imageParts(ref); return d }

// TestCheckCiliumChart: the up's pre-flight renders the chart as Generate does and refuses one
// that does not render or could not fit in the user data.
func TestCheckCiliumChart(t *testing.T) {
	t.Parallel()

	if err := CheckCiliumChart(cnichart.Archive(), RoutingTunnel, ""); err != nil {
		t.Fatalf("the test chart: %v", err)
	}

	for _, tc := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"over the user data", bigChart(t, UserDataLimit), "over the 1048576 bytes"},
		{"not a chart", []byte("not gzip"), "cilium chart"},
	} {
		if err := CheckCiliumChart(tc.archive, RoutingTunnel, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
