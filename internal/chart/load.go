package chart

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v2"
)

// Limits of a chart archive: Cilium's chart is a few hundred KiB packed and a few MiB unpacked.
const (
	MaxArchive   = 16 << 20
	maxUnpacked  = 64 << 20
	maxFileCount = 5000
)

// Chart is a loaded chart: its metadata, default values and files by path inside the chart.
type Chart struct {
	Name, Version, AppVersion string
	// Meta is Chart.yaml as .Chart sees it (capitalised keys).
	Meta      map[string]any
	Values    map[string]any
	Templates map[string]string // templates/… → text
	Files     map[string][]byte // every other file (for .Files), by path
}

// Load reads a chart archive (.tgz): one top directory holding Chart.yaml, values.yaml and
// templates/. It refuses what Render does not support (subcharts) and archives over the limits.
func Load(archive []byte) (*Chart, error) {
	if len(archive) > MaxArchive {
		return nil, fmt.Errorf("chart archive of %d bytes: over the %d-byte limit", len(archive), MaxArchive)
	}

	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("chart archive is not gzip: %w", err)
	}

	files, err := untar(gz)
	if err != nil {
		return nil, err
	}

	return fromFiles(files)
}

func untar(r io.Reader) (map[string][]byte, error) {
	tr := tar.NewReader(r)
	files := map[string][]byte{}
	total := 0

	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}

		if err != nil {
			return nil, fmt.Errorf("chart archive: %w", err)
		}

		if h.Typeflag != tar.TypeReg {
			continue // directories; links and devices have no place in a chart
		}

		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if strings.HasPrefix(name, "../") || strings.HasPrefix(name, "/") || name == ".." {
			return nil, fmt.Errorf("chart archive: path %q leaves the chart", h.Name)
		}

		if len(files) >= maxFileCount {
			return nil, fmt.Errorf("chart archive: more than %d files", maxFileCount)
		}

		b, err := io.ReadAll(io.LimitReader(tr, int64(maxUnpacked-total)+1))
		if err != nil {
			return nil, fmt.Errorf("chart archive: %s: %w", name, err)
		}

		if total += len(b); total > maxUnpacked {
			return nil, fmt.Errorf("chart archive: over %d bytes unpacked", maxUnpacked)
		}

		files[name] = b
	}
}

func fromFiles(files map[string][]byte) (*Chart, error) {
	var top string

	for name := range files {
		dir, _, ok := strings.Cut(name, "/")
		if !ok {
			return nil, fmt.Errorf("chart archive: %q is outside the chart's directory", name)
		}

		if top != "" && dir != top {
			return nil, fmt.Errorf("chart archive: two top directories (%s, %s)", top, dir)
		}

		top = dir
	}

	meta, ok := files[top+"/Chart.yaml"]
	if !ok {
		return nil, errors.New("chart archive: no Chart.yaml")
	}

	c := &Chart{Templates: map[string]string{}, Files: map[string][]byte{}}

	var m map[string]any
	if err := decodeYAML(meta, &m); err != nil {
		return nil, fmt.Errorf("Chart.yaml: %w", err)
	}

	c.Name, _ = m["name"].(string)
	c.Version = fmt.Sprint(m["version"])
	c.AppVersion, _ = m["appVersion"].(string)

	if c.Name == "" || m["version"] == nil {
		return nil, errors.New("Chart.yaml: name and version are required")
	}

	if api, _ := m["apiVersion"].(string); api != "v1" && api != "v2" {
		return nil, fmt.Errorf("Chart.yaml: apiVersion %q (want v1 or v2)", api)
	}

	if t, _ := m["type"].(string); t == "library" {
		return nil, errors.New("Chart.yaml: a library chart renders nothing")
	}

	if deps, _ := m["dependencies"].([]any); len(deps) > 0 {
		return nil, errors.New("Chart.yaml: dependencies (subcharts) are not supported by this renderer")
	}

	c.Meta = map[string]any{}
	for k, v := range m {
		c.Meta[strings.ToUpper(k[:1])+k[1:]] = v
	}

	if v, ok := files[top+"/values.yaml"]; ok {
		if err := decodeYAML(v, &c.Values); err != nil {
			return nil, fmt.Errorf("values.yaml: %w", err)
		}
	}

	if c.Values == nil {
		c.Values = map[string]any{}
	}

	for name, b := range files {
		rel := strings.TrimPrefix(name, top+"/")

		switch {
		case strings.HasPrefix(rel, "charts/"):
			return nil, fmt.Errorf("chart archive: %s: subcharts are not supported by this renderer", rel)
		case strings.HasPrefix(rel, "templates/"):
			c.Templates[rel] = string(b)
		default:
			c.Files[rel] = b
		}
	}

	return c, nil
}

// decodeYAML decodes YAML as Helm does (sigs.k8s.io/yaml): through JSON's types, numbers as float64.
func decodeYAML(b []byte, out *map[string]any) error {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return err
	}

	j, err := jsonish(v)
	if err != nil {
		return err
	}

	if j == nil {
		*out = nil

		return nil
	}

	m, ok := j.(map[string]any)
	if !ok {
		return fmt.Errorf("a %T, not a map", j)
	}

	*out = m

	return nil
}

// jsonish turns what yaml.v2 decodes into JSON's types: string keys, float64 numbers.
func jsonish(v any) (any, error) {
	switch x := v.(type) {
	case map[any]any:
		m := make(map[string]any, len(x))

		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				ks = fmt.Sprint(k)
			}

			j, err := jsonish(e)
			if err != nil {
				return nil, err
			}

			m[ks] = j
		}

		return m, nil
	case []any:
		out := make([]any, len(x))

		for i, e := range x {
			j, err := jsonish(e)
			if err != nil {
				return nil, err
			}

			out[i] = j
		}

		return out, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float64, string, bool, nil:
		return x, nil
	default:
		return nil, fmt.Errorf("unsupported YAML value %T", v)
	}
}

// templatePaths lists the chart's template files in path order.
func (c *Chart) templatePaths() []string {
	out := make([]string, 0, len(c.Templates))
	for p := range c.Templates {
		out = append(out, p)
	}

	sort.Strings(out)

	return out
}
