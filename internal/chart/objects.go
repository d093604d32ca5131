package chart

import (
	"encoding/base64"
	"fmt"
	"path"
	"sort"
	"strings"
)

// files is .Files: the chart's files other than templates, by path.
type files struct{ all map[string][]byte }

func (f files) typeName() string         { return "chart.Files" }
func (f files) field(string) (any, bool) { return nil, false }
func (f files) names() []string {
	out := make([]string, 0, len(f.all))
	for n := range f.all {
		out = append(out, n)
	}

	sort.Strings(out)

	return out
}

func (f files) method(name string) (func([]any) (any, error), bool) {
	one := func(args []any) (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("Files.%s takes one path, got %d arguments", name, len(args))
		}

		return strval(args[0]), nil
	}

	switch name {
	case "Get":
		return func(args []any) (any, error) {
			p, err := one(args)
			return string(f.all[p]), err
		}, true
	case "GetBytes":
		return func(args []any) (any, error) {
			p, err := one(args)
			return string(f.all[p]), err
		}, true
	case "Lines":
		return func(args []any) (any, error) {
			p, err := one(args)
			if err != nil || len(f.all[p]) == 0 {
				return []any{}, err
			}

			var out []any
			for _, l := range strings.Split(string(f.all[p]), "\n") {
				out = append(out, l)
			}

			return out, nil
		}, true
	case "Glob":
		return func(args []any) (any, error) {
			p, err := one(args)
			if err != nil {
				return nil, err
			}

			sub := files{all: map[string][]byte{}}
			for n, b := range f.all {
				if ok, _ := path.Match(p, n); ok || globMatch(p, n) {
					sub.all[n] = b
				}
			}

			return sub, nil
		}, true
	case "AsConfig", "AsSecrets":
		return func(args []any) (any, error) {
			if len(args) != 0 {
				return nil, fmt.Errorf("Files.%s takes no argument", name)
			}

			m := map[string]any{}
			for _, n := range f.names() {
				v := string(f.all[n])
				if name == "AsSecrets" {
					v = base64.StdEncoding.EncodeToString(f.all[n])
				}

				m[path.Base(n)] = v
			}

			if len(m) == 0 {
				return "", nil
			}

			return toYAML(m)
		}, true
	}

	return nil, false
}

// globMatch adds "**" (any number of directories) to path.Match, as Helm's glob library has.
func globMatch(pattern, name string) bool {
	if !strings.Contains(pattern, "**") {
		return false
	}

	prefix, rest, _ := strings.Cut(pattern, "**")
	if !strings.HasPrefix(name, prefix) {
		return false
	}

	rest = strings.TrimPrefix(rest, "/")
	tail := strings.TrimPrefix(name, prefix)

	for {
		if ok, _ := path.Match(rest, tail); ok {
			return true
		}

		i := strings.IndexByte(tail, '/')
		if i < 0 {
			return false
		}

		tail = tail[i+1:]
	}
}

// kubeVersion is .Capabilities.KubeVersion.
type kubeVersion struct{ version, major, minor string }

func parseKubeVersion(v string) (kubeVersion, error) {
	v = strings.TrimPrefix(v, "v")

	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return kubeVersion{}, fmt.Errorf("kubernetes version %q: want major.minor.patch", v)
	}

	return kubeVersion{version: "v" + v, major: parts[0], minor: parts[1]}, nil
}

func (k kubeVersion) typeName() string { return "chart.KubeVersion" }

func (k kubeVersion) field(name string) (any, bool) {
	switch name {
	case "Version", "GitVersion":
		return k.version, true
	case "Major":
		return k.major, true
	case "Minor":
		return k.minor, true
	}

	return nil, false
}

func (k kubeVersion) method(name string) (func([]any) (any, error), bool) {
	if name == "String" {
		return func([]any) (any, error) { return k.version, nil }, true
	}

	return nil, false
}

// builtinAPIVersions are the group/versions a Kubernetes 1.30–1.33 API server serves without
// CRDs (the release notes' API tables), what APIVersions.Has answers for: a chart that checks
// for a CRD's group (monitoring.coreos.com/v1, …) sees it absent, as `helm template` does.
var builtinAPIVersions = []string{
	"v1", "admissionregistration.k8s.io/v1", "apiextensions.k8s.io/v1", "apiregistration.k8s.io/v1", "apps/v1",
	"authentication.k8s.io/v1", "authorization.k8s.io/v1", "autoscaling/v1", "autoscaling/v2", "batch/v1",
	"certificates.k8s.io/v1", "coordination.k8s.io/v1", "discovery.k8s.io/v1", "events.k8s.io/v1",
	"flowcontrol.apiserver.k8s.io/v1", "networking.k8s.io/v1", "node.k8s.io/v1", "policy/v1",
	"rbac.authorization.k8s.io/v1", "scheduling.k8s.io/v1", "storage.k8s.io/v1",
}

type apiVersions struct{}

func (apiVersions) typeName() string         { return "chart.VersionSet" }
func (apiVersions) field(string) (any, bool) { return nil, false }

func (apiVersions) method(name string) (func([]any) (any, error), bool) {
	if name != "Has" {
		return nil, false
	}

	return func(args []any) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("APIVersions.Has takes one argument, got %d", len(args))
		}

		want := strval(args[0])

		for _, gv := range builtinAPIVersions {
			// "group/version" or "group/version/Kind": any kind of a built-in group version.
			if want == gv || strings.HasPrefix(want, gv+"/") && !strings.Contains(want[len(gv)+1:], "/") {
				return true, nil
			}
		}

		return false, nil
	}, true
}

func capabilities(kv kubeVersion) map[string]any {
	return map[string]any{
		"KubeVersion": kv,
		"APIVersions": apiVersions{},
		"HelmVersion": map[string]any{"Version": "v3.21.4"},
	}
}
