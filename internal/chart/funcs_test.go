package chart

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// helmCase is a template and what Helm v4.3.2's engine (sprig v3.3.0, Masterminds semver
// v3.5.0) renders from it with helmCaseValues over helmCaseChartValues and Kubernetes 1.33.6:
// want is the output, or, when wantErr is set, a part of the error. The expected outputs were
// rendered by Helm itself (helm.sh/helm/v4 v4.3.2 pkg/engine, through
// pkg/chart/common/util.ToRenderValues), and each case names the rule of its source.
type helmCase struct {
	name, tmpl, want, wantErr string
}

// helmCaseChartValues is the test chart's values.yaml.
const helmCaseChartValues = `num: 2
s: x
m:
  k: v
  j: w
gone: ~
dropme: 1
nested:
  keep: 1
  drop: ~
none: {}
`

// helmCaseValues are the caller's: a null for a chart key removes it, a null for a key the
// chart does not have stays (Helm v4.3.2 pkg/chart/common/util/coalesce.go coalesceValues).
func helmCaseValues() map[string]any {
	return map[string]any{"dropme": nil, "userNull": nil}
}

var helmCases = []helmCase{
	// sprig semver: Masterminds semver.NewVersion, whose methods a template calls.
	{name: "semver parts", tmpl: `{{ (semver "1.33.6").Major }}.{{ (semver "v1.33.6").Minor }}.{{ (semver "1.33.6").Patch }}`, want: `1.33.6`},
	{name: "semver pre-release and metadata", tmpl: `{{ (semver "1.2.3-rc.1+b7").Prerelease }} {{ (semver "1.2.3-rc.1+b7").Metadata }} {{ semver "v1.2" }} {{ (semver "v1.2").Original }}`, want: `rc.1 b7 1.2.0 v1.2`},
	{name: "semver increments", tmpl: `{{ (semver "1.2.3").IncMinor }} {{ (semver "1.2.3").IncMajor }} {{ (semver "1.2.3-a").IncPatch }}`, want: `1.3.0 2.0.0 1.2.3`},
	{name: "semver comparisons", tmpl: `{{ (semver "1.2.3").LessThan (semver "1.10.0") }} {{ (semver "1.2.3").Compare (semver "1.2.3") }} {{ (semver "2.0.0").GreaterThan (semver "1.99.0") }}`, want: `true 0 true`},
	{name: "semver types", tmpl: `{{ typeOf (semver "1.0.0") }} {{ kindOf (semver "1.0.0") }}`, want: `*semver.Version ptr`},
	{name: "kubernetes minor", tmpl: `{{ printf "%d.%d" (semver .Capabilities.KubeVersion.Version).Major (semver .Capabilities.KubeVersion.Version).Minor }}`, want: `1.33`},
	{name: "semver invalid", tmpl: `{{ semver "one" }}`, wantErr: `error calling semver: invalid semantic version`},
	{name: "semver not a string", tmpl: `{{ semver 1 }}`, wantErr: `expected string`},
	// sprig semverCompare: Masterminds semver.NewConstraint(c).Check(NewVersion(v)).
	{name: "constraint with a short version", tmpl: `{{ semverCompare ">1.2" "1.2.5" }} {{ semverCompare ">1.2" "1.3.0" }} {{ semverCompare "<1.30.0" "1.33.0" }}`, want: `false true false`},
	{name: "constraint range and wildcard", tmpl: `{{ semverCompare "1.2 - 1.4" "1.3.9" }} {{ semverCompare "1.2.x" "1.2.9" }} {{ semverCompare "~1.33.0" "1.34.0" }}`, want: `true true false`},
	{name: "caret below 1.0", tmpl: `{{ semverCompare "^0.2.3" "0.3.0" }} {{ semverCompare "^1.2.3" "1.9.0" }}`, want: `false true`},
	{name: "pre-release versions", tmpl: `{{ semverCompare ">=1.21" "1.33.6-gke.1" }} {{ semverCompare ">=1.21-0" "1.33.6-gke.1" }} {{ semverCompare ">=1.21.0-0 || <1" "0.5.0" }}`, want: `false true true`},
	{name: "constraint invalid", tmpl: `{{ semverCompare "<<1" "1.0.0" }}`, wantErr: `error calling semverCompare: improper constraint: "<<1"`},
	// Helm's .Values is a common.Values: a map with methods (pkg/chart/common/values.go).
	{name: "values type", tmpl: `{{ typeOf .Values }} {{ kindOf .Values }} {{ kindIs "map" .Values }} {{ len .Values }}`, want: `common.Values map true 6`},
	{name: "values methods", tmpl: `{{ dig "m" "k" "d" .Values.AsMap }} {{ (.Values.Table "m").k }} {{ .Values.PathValue "m.j" }} {{ typeOf (.Values.Table "m") }}`, want: `v v w common.Values`},
	{name: "values range and index", tmpl: `{{ range $k, $_ := .Values }}{{ $k }},{{ end }} {{ index .Values "m" "k" }} {{ hasKey .Values "num" }}`, want: `m,nested,none,num,s,userNull, v true`},
	{name: "values YAML", tmpl: `{{ (.Values.Table "m").YAML | quote }} {{ (.Values.Table "none").YAML | quote }} {{ (.Values.Table "none").AsMap | len }}`, want: `"j: w\nk: v\n" "{}\n" 0`},
	{name: "values Table of a value", tmpl: `{{ .Values.Table "m.k" }}`, wantErr: `error calling Table: "k" is not a table`},
	{name: "values PathValue of a table", tmpl: `{{ .Values.PathValue "m" }}`, wantErr: `"m" is not a value`},
	// sprig dig asserts a map[string]interface{}: a common.Values is not one.
	{name: "dig refuses common.Values", tmpl: `{{ dig "m" "k" "d" .Values }}`, wantErr: `interface conversion: interface {} is common.Values, not map[string]interface {}`},
	// Helm v4.3.2's coalesce drops the chart's null defaults and the caller's null over a chart key.
	{name: "null values", tmpl: `{{ hasKey .Values "gone" }} {{ hasKey .Values.nested "drop" }} {{ hasKey .Values.nested "keep" }} {{ hasKey .Values "userNull" }} {{ hasKey .Values "dropme" }}`, want: `false false true true false`},
	// sprig now, dateModify, mustDateModify: time.Now and time.ParseDuration; a time compares with eq.
	{name: "durations checked against now", tmpl: `{{ $n := now }}{{ ne $n ($n | dateModify "5m") }} {{ eq $n ($n | dateModify "0s") }} {{ eq $n ($n | dateModify "five") }} {{ $_ := now | mustDateModify "1h30m" }}ok`, want: `true true true ok`},
	{name: "mustDateModify of a bad duration", tmpl: `{{ $_ := now | mustDateModify "five" }}`, wantErr: `time: invalid duration "five"`},
	// sprig regexReplaceAll: regexp.MustCompile(re).ReplaceAllString(s, repl), with $ expansion.
	{name: "regexReplaceAll groups", tmpl: `{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }} {{ regexReplaceAll "^v?([0-9.]+).*" "v1.33.6-r1" "$1" }} {{ "v1.33.6-r1" | regexReplaceAll "^v?([0-9.]+).*" "$1" }}`, want: `-W-xxW- 1.33.6 $1`},
	// Helm's lookup without a cluster (helm template): an empty map, false in if, with and and.
	{name: "lookup finds nothing", tmpl: `{{ with lookup "v1" "Secret" "ns" "n" }}found{{ else }}none{{ end }} {{ and true (lookup "v1" "ConfigMap" "kube-public" "cluster-info") | empty }}`, want: `none true`},
}

// TestHelmFunctions renders every case alone (so one error does not hide the others) and
// compares with what Helm renders.
func TestHelmFunctions(t *testing.T) {
	t.Parallel()

	for i, c := range helmCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()

			files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: cases\nversion: 1.0.0\n", "values.yaml": helmCaseChartValues,
				"templates/c.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c%02d\n# <<%s>>\n", i, c.tmpl)}

			ch, err := Load(archive(t, "cases", files))
			if err != nil {
				t.Fatal(err)
			}

			out, err := Render(ch, Options{ReleaseName: "r", Namespace: "ns", Values: helmCaseValues(), KubeVersion: "1.33.6"})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("%s\n rendered %q, %v\nwant an error with %q", c.tmpl, out, err, c.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatalf("%s: %v", c.tmpl, err)
			}

			_, got, _ := strings.Cut(out, "# <<")
			got, _, _ = strings.Cut(got, ">>\n")

			if got != c.want {
				t.Errorf("%s\n got %q\nwant %q", c.tmpl, got, c.want)
			}
		})
	}
}

// TestRenderRefusesTheClock: a manifest that prints the time would differ on every render;
// Helm prints it, the bot refuses it, naming the reason.
func TestRenderRefusesTheClock(t *testing.T) {
	t.Parallel()

	for _, tmpl := range []string{`{{ now }}`, `{{ now | toString }}`, `{{ now | toJson }}`, `{{ now | toYaml }}`, `{{ printf "%v" (now | dateModify "1h") }}`, `{{ now.Year }}`} {
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: t\nversion: 1.0.0\n",
			"templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n# " + tmpl + "\n"}

		ch, err := Load(archive(t, "t", files))
		if err != nil {
			t.Fatal(err)
		}

		out, err := Render(ch, Options{ReleaseName: "r", Namespace: "ns", KubeVersion: "1.33.6"})
		if !errors.Is(err, ErrClock) || !strings.Contains(err.Error(), "t/templates/c.yaml") {
			t.Errorf("%s: rendered %q, %v; want ErrClock naming the template", tmpl, out, err)
		}
	}
}
