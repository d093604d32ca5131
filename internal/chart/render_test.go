package chart

import (
	"strings"
	"testing"
	"text/template/parse"

	"github.com/pocbot/pocbot/internal/sim/cnichart"
)

// archive packs files (path → text) under dir into a chart .tgz.
func archive(t testing.TB, dir string, files map[string]string) []byte {
	t.Helper()

	return cnichart.Pack(dir, files)
}

const digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func botValues() map[string]any {
	return map[string]any{
		"ipam": map[string]any{"mode": "kubernetes"}, "kubeProxyReplacement": true, "k8sServiceHost": "localhost", "k8sServicePort": 7445,
		"routingMode": "tunnel", "tunnelProtocol": "vxlan", "encryption": map[string]any{"enabled": true, "type": "wireguard"},
		"hubble": map[string]any{"enabled": false}, "nodePort": map[string]any{"range": "80,443"},
		"securityContext": map[string]any{"capabilities": map[string]any{"ciliumAgent": []string{"CHOWN", "NET_ADMIN"}, "cleanCiliumState": []any{"NET_ADMIN"}}},
		"cgroup":          map[string]any{"autoMount": map[string]any{"enabled": false}, "hostRoot": "/sys/fs/cgroup"},
		"image":           map[string]any{"repository": "quay.io/x/agent", "tag": "v1", "digest": digestA, "useDigest": true},
		"operator":        map[string]any{"image": map[string]any{"repository": "quay.io/x/operator", "tag": "v1", "genericDigest": digestA, "useDigest": true}},
		"envoy":           map[string]any{"image": map[string]any{"repository": "quay.io/x/envoy", "tag": "v1", "digest": digestA, "useDigest": true}},
		"extraLabels":     map[string]any{"b": "2", "a": "1"},
	}
}

// TestRenderTestChart renders the project's own test chart with the values the bot gives
// Cilium's and checks what the stand-in and the bot rely on.
func TestRenderTestChart(t *testing.T) {
	t.Parallel()

	c, err := Load(cnichart.Archive())
	if err != nil {
		t.Fatal(err)
	}

	o := Options{ReleaseName: "cilium", Namespace: "kube-system", Values: botValues(), KubeVersion: "1.33.6"}

	out, err := Render(c, o)
	if err != nil {
		t.Fatal(err)
	}

	again, err := Render(c, o)
	if err != nil || again != out {
		t.Fatalf("a second render differs (err %v)", err)
	}

	for _, want := range []string{
		"# Source: pocbot-test-cni/templates/config.yaml\napiVersion: v1\nkind: ConfigMap",
		`routing-mode: "tunnel"`, `tunnel-protocol: "vxlan"`, `enable-wireguard: "true"`, `k8s-service-port: "7445"`,
		`node-port-range: "80-443"`, `enable-hubble: "false"`, `bootstrap: "{\"admin\": {\"address\": \"127.0.0.1:9901\"}}"`,
		"    app.kubernetes.io/managed-by: Helm\n    a: \"1\"\n    b: \"2\"\n",
		`image: "quay.io/x/agent:v1@` + digestA + `"`, `image: "quay.io/x/operator-generic:v1@` + digestA + `"`,
		"add:\n              - CHOWN\n              - NET_ADMIN\n",
		"apiVersion: policy/v1\nkind: PodDisruptionBudget", "kind: ClusterRoleBinding\nmetadata:\n  name: cilium-operator",
		"replicas: 1\n",
		// The chart's own uses of semver, semverCompare, now and mustDateModify.
		`gc-interval: "5m"`, `kubernetes-minor: "1.33"`, "hostNetwork: true\n      securityContext:\n        appArmorProfile:\n          type: Unconfined\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q", want)
		}
	}

	for _, not := range []string{"mount-cgroup", "NOTES", "cni.image", "SYS_MODULE", "<no value>", "ipv4-native-routing-cidr"} {
		if strings.Contains(out, not) {
			t.Errorf("render has %q", not)
		}
	}

	if n := strings.Count(out, "\n---\n") + 1; n != 11 {
		t.Errorf("%d documents, want 11:\n%s", n, out)
	}

	// Native routing without its CIDR is the chart's own refusal (required).
	v := botValues()
	v["routingMode"] = "native"

	if _, err := Render(c, Options{ReleaseName: "cilium", Namespace: "kube-system", Values: v, KubeVersion: "1.33.6"}); err == nil || !strings.Contains(err.Error(), "native routing needs ipv4NativeRoutingCIDR") {
		t.Errorf("native routing without a CIDR = %v", err)
	}

	testChartChecks(t, c)
}

// testChartChecks: the test chart's own checks, each through a function Cilium's chart uses
// (mustDateModify, dig on .Values.AsMap, semverCompare on the Kubernetes minor).
func testChartChecks(t *testing.T, c *Chart) {
	t.Helper()

	for _, tc := range []struct {
		name, key string
		value     any
		want      string
	}{
		{"zero duration", "gcInterval", "0s", `duration "0s" is zero`},
		{"bad duration", "gcInterval", "five", `error calling mustDateModify: time: invalid duration "five"`},
		{"removed option", "legacyHostRouting", true, "legacyHostRouting was removed"},
	} {
		v := botValues()
		v[tc.key] = tc.value

		if _, err := Render(c, Options{ReleaseName: "cilium", Namespace: "kube-system", Values: v, KubeVersion: "1.33.6"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}

	old, err := Render(c, Options{ReleaseName: "cilium", Namespace: "kube-system", Values: botValues(), KubeVersion: "1.29.4"})
	if err != nil || strings.Contains(old, "appArmorProfile") || !strings.Contains(old, `kubernetes-minor: "1.29"`) {
		t.Errorf("Kubernetes 1.29: %v, want no appArmorProfile and minor 1.29:\n%s", err, old)
	}
}

// TestTemplateLanguage: the evaluator against what Go's text/template and Helm print.
func TestTemplateLanguage(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ tmpl, want string }{
		{`{{ .Values.n }} {{ .Values.big }} {{ .Values.f }}`, `2 1e+06 0.5`},
		{`{{ .Values.missing }}|{{ .Values.m.k }}`, `|v`},
		{`{{ if .Values.empty }}a{{ else if .Values.n }}b{{ else }}c{{ end }}`, `b`},
		{`{{ range $i, $e := .Values.l }}{{ $i }}={{ $e }};{{ end }}`, `0=x;1=y;`},
		{`{{ range $k, $v := .Values.m }}{{ $k }}:{{ $v }},{{ end }}`, `j:w,k:v,`},
		{`{{ range .Values.none }}x{{ else }}none{{ end }}`, `none`},
		{`{{ range 3 }}{{ . }}{{ end }}`, `012`},
		{`{{ range .Values.l }}{{ if eq . "y" }}{{ break }}{{ end }}{{ . }}{{ end }}`, `x`},
		{`{{ with .Values.m }}{{ .k }}{{ end }}{{ with .Values.missing }}no{{ else }}else{{ end }}`, `velse`},
		{`{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}`, `2`},
		{`{{ and .Values.n .Values.missing.x }}`, ``}, // missing is nil: and stops before .x would fail… it does not, see below
		{`{{ or .Values.n .Values.missing.x }}`, `2`},
		{`{{ default "d" .Values.missing }} {{ default "d" .Values.n }} {{ .Values.missing | default "p" }}`, `d 2 p`},
		{`{{ printf "%s-%d" "a" 3 }} {{ print 1 2 }} {{ quote "q" 1 }} {{ squote "s" }}`, `a-3 1 2 "q" "1" 's'`},
		{`{{ list 1 "a" | toJson }} {{ dict "b" 1 "a" (list) | toJson }}`, `[1,"a"] {"a":[],"b":1}`},
		{`{{ .Values.m | toYaml }}`, "j: w\nk: v"},
		{"{{- \"a\" }}\n  {{- \"b\" -}}\n  c", `abc`},
		{`{{ "a,b" | splitList "," | join "+" }} {{ "  x " | trim }} {{ "abc" | trunc 2 }} {{ "x" | upper | repeat 2 }}`, `a+b x ab XX`},
		{`{{ semverCompare ">=1.21-0" "v1.33.6" }} {{ semverCompare "<1.30" "1.33.6" }} {{ semverCompare "~1.33.0" "1.33.9" }}`, `true false true`},
		{`{{ hasKey .Values.m "k" }} {{ keys .Values.m | sortAlpha }} {{ has "y" .Values.l }} {{ len .Values.l }} {{ index .Values.l 1 }}`, `true [j k] true 2 y`},
		{`{{ add 1 2 3 }} {{ sub 5 2 }} {{ mul 2 .Values.n }} {{ div 7 2 }} {{ max 1 9 3 }} {{ int .Values.f }}`, `6 3 4 3 9 0`},
		{`{{ ternary "y" "n" true }} {{ empty "" }} {{ coalesce "" .Values.n }} {{ not .Values.n }}`, `y true 2 false`},
		{`{{ $d := dict "a" 1 }}{{ $_ := set $d "b" 2 }}{{ $d | toJson }} {{ merge (dict "a" 1) (dict "a" 2 "c" 3) | toJson }} {{ mergeOverwrite (dict "a" 1) (dict "a" 2) | toJson }}`, `{"a":1,"b":2} {"a":1,"c":3} {"a":2}`},
		{`{{ "a: [1, 2]" | fromYaml | toJson }} {{ (fromYaml "x").Error | empty }}`, `{"a":[1,2]} false`},
		{`{{ tpl "{{ .Values.n }}-{{ include \"t.x\" . }}" . }}`, `2-X`},
		{`{{ kindOf .Values.n }} {{ kindIs "slice" .Values.l }} {{ typeOf .Values.m }}`, `float64 true map[string]interface {}`},
		{`{{ regexReplaceAll "[0-9]+" "a12b3" "#" }} {{ regexMatch "^v[0-9]" "v1" }} {{ "a.b" | replace "." "-" }}`, `a#b# true a-b`},
		{`{{ .Capabilities.APIVersions.Has "apps/v1/Deployment" }} {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }} {{ .Capabilities.KubeVersion.Minor }}`, `true false 33`},
		{`{{ .Release.Name }}/{{ .Release.Namespace }}/{{ .Chart.Name }}/{{ .Chart.Version }}/{{ .Template.Name }}`, `r/ns/t/1.0.0/t/templates/x.yaml`},
		{`{{ lookup "v1" "Secret" "ns" "n" | toJson }} {{ .Files.Get "files/a.txt" }} {{ range $p, $b := .Files.Glob "files/*" }}{{ $p }}{{ end }}`, `{} A files/a.txt`},
		{`{{ eq .Values.n 2.0 }} {{ eq "a" "b" "a" }} {{ lt 1 2 }} {{ ne .Values.s "x" }}`, `true true true false`},
		{`{{ until 3 | toJson }} {{ .Values.l | first }} {{ .Values.l | last }} {{ without .Values.l "x" | toJson }} {{ uniq (list 1 1 2) | toJson }}`, `[0,1,2] x y ["y"] [1,2]`},
		{`{{ dig "m" "k" "def" .Values }} {{ dig "m" "zz" "def" .Values }} {{ b64enc "hi" }} {{ "aGk=" | b64dec }}`, `v def aGk= hi`},
	} {
		got, err := renderOne(t, tc.tmpl)
		if strings.Contains(tc.tmpl, "and .Values.n .Values.missing.x") {
			// and evaluates .Values.missing.x (n is true): a field of nil fails, as in Go.
			if err == nil || !strings.Contains(err.Error(), "nil pointer evaluating interface {}.x") {
				t.Errorf("%s = %q, %v: want the nil pointer error", tc.tmpl, got, err)
			}

			continue
		}

		if err != nil || got != tc.want {
			t.Errorf("%s\n got %q, %v\nwant %q", tc.tmpl, got, err, tc.want)
		}
	}
}

// renderOne renders tmpl as the only template of a chart (as a data key of a ConfigMap's
// comment, read back raw).
func renderOne(t *testing.T, tmpl string) (string, error) {
	t.Helper()

	c := &Chart{Name: "t", Version: "1.0.0", Meta: map[string]any{"Name": "t", "Version": "1.0.0"},
		Values:    map[string]any{"n": 2.0, "big": 1e6, "f": 0.5, "empty": "", "s": "x", "l": []any{"x", "y"}, "m": map[string]any{"k": "v", "j": "w"}},
		Templates: map[string]string{"templates/x.yaml": tmpl, "templates/_h.tpl": `{{ define "t.x" }}X{{ end }}`},
		Files:     map[string][]byte{"files/a.txt": []byte("A")}}

	e := &engine{chart: c, trees: map[string]*parse.Tree{}, clockFormatted: new(bool)}

	if err := e.parse(); err != nil {
		return "", err
	}

	kv, _ := parseKubeVersion("1.33.6")
	top := map[string]any{"Values": c.Values, "Release": map[string]any{"Name": "r", "Namespace": "ns"}, "Chart": c.Meta,
		"Capabilities": capabilities(kv), "Files": files{all: c.Files}}

	return e.exec("t/templates/x.yaml", withTemplate(top, "t/templates/x.yaml", "t/templates"))
}

// TestRenderRefuses: what the renderer does not support fails, naming it, never renders.
func TestRenderRefuses(t *testing.T) {
	t.Parallel()

	chartYAML := "apiVersion: v2\nname: t\nversion: 1.0.0\n"
	obj := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"

	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"unknown function", map[string]string{"Chart.yaml": chartYAML, "templates/a.yaml": `{{ nosuch 1 }}`}, `function "nosuch" not defined`},
		{"random function", map[string]string{"Chart.yaml": chartYAML, "templates/a.yaml": obj + `data: {{ randAlphaNum 5 }}`}, `"randAlphaNum" is not supported`},
		{"certificate generation", map[string]string{"Chart.yaml": chartYAML, "templates/a.yaml": `{{ $ca := genCA "x" 365 }}`}, `"genCA" is not supported`},
		// An unsupported function in a branch names the conditions (the values) that led there,
		// across include, as Cilium's certificate generation sits under its TLS options.
		{"unsupported under conditions", map[string]string{"Chart.yaml": chartYAML, "values.yaml": "tls: {enabled: true, method: helm, off: false}\n",
			"templates/_ca.tpl": `{{ define "ca" }}{{ if .Values.tls.off }}{{ else if eq .Values.tls.method "helm" }}{{ $ca := genCA "x" 365 }}{{ end }}{{ end }}`,
			"templates/a.yaml":  `{{ with .Values.tls }}{{ if .enabled }}{{ include "ca" $ }}{{ end }}{{ end }}`},
			`"genCA" is not supported by pocbot's chart renderer (see internal/chart), reached under {{with .Values.tls}} {{if .enabled}} {{if not (.Values.tls.off)}} {{if eq .Values.tls.method "helm"}}: change the values these conditions read`},
		{"not an object", map[string]string{"Chart.yaml": chartYAML, "templates/a.yaml": "just: data\n"}, "not a Kubernetes object"},
		{"subchart", map[string]string{"Chart.yaml": chartYAML, "charts/sub/Chart.yaml": chartYAML}, "subcharts are not supported"},
		{"dependencies", map[string]string{"Chart.yaml": chartYAML + "dependencies:\n- name: x\n"}, "dependencies (subcharts) are not supported"},
		{"recursion", map[string]string{"Chart.yaml": chartYAML, "templates/a.yaml": `{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`}, "nested templates"},
		{"no Chart.yaml", map[string]string{"values.yaml": "a: 1\n"}, "no Chart.yaml"},
	} {
		c, err := Load(archive(t, "t", tc.files))
		if err == nil {
			_, err = Render(c, Options{ReleaseName: "r", Namespace: "ns", KubeVersion: "1.33.6"})
		}

		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add(cnichart.Archive())
	f.Add([]byte("not gzip"))
	f.Fuzz(func(_ *testing.T, b []byte) {
		if c, err := Load(b); err == nil {
			_, _ = Render(c, Options{ReleaseName: "r", Namespace: "ns", KubeVersion: "1.33.6"})
		}
	})
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{`{{ .Values.a | toYaml }}`, `{{ range $k, $v := .Values }}{{ $k }}{{ end }}`, `{{ include "x" . }}`, `{{ tpl "{{ 1 }}" . }}`,
		`{{ semverCompare ">=1.30.0-0" (semver .Capabilities.KubeVersion.Version).IncMinor.String }}`, `{{ $t := now }}{{ eq $t ($t | dateModify "1m") }}`,
		`{{ dig "a" "" .Values.AsMap }}{{ .Values.PathValue "a" }}`, `{{ if .Values.a }}{{ genCA "x" 1 }}{{ end }}`} {
		f.Add(s)
	}

	f.Fuzz(func(_ *testing.T, tmpl string) {
		c := &Chart{Name: "t", Version: "1", Meta: map[string]any{}, Values: map[string]any{"a": []any{1.0, "b"}},
			Templates: map[string]string{"templates/x.yaml": tmpl}, Files: map[string][]byte{}}
		_, _ = Render(c, Options{ReleaseName: "r", Namespace: "ns", KubeVersion: "1.33.6"})
	})
}
