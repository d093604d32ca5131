package chart

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/template/parse"

	"gopkg.in/yaml.v2"
)

// Options are a render's release and cluster: what `helm template` takes as flags.
type Options struct {
	ReleaseName, Namespace string
	// Values are the caller's, over the chart's values.yaml (Coalesce): maps, lists ([]any or
	// []string), strings, booleans and numbers only.
	Values map[string]any
	// KubeVersion is the cluster's Kubernetes version, e.g. "1.33.6" (.Capabilities).
	KubeVersion string
}

// maxIncludeDepth bounds include/template recursion as Helm does (1000).
const maxIncludeDepth = 1000

// Render renders every template of c (partials, named "_…", and NOTES.txt excepted) and
// returns the manifests, each document after its "# Source:" line. A document that is not a
// Kubernetes object (apiVersion, kind, metadata.name) is an error naming its template.
func Render(c *Chart, o Options) (string, error) {
	over, err := normalize(o.Values)
	if err != nil {
		return "", fmt.Errorf("values: %w", err)
	}

	overMap, _ := over.(map[string]any)
	kv, err := parseKubeVersion(o.KubeVersion)
	if err != nil {
		return "", err
	}

	e := &engine{chart: c, trees: map[string]*parse.Tree{}, clockFormatted: new(bool)}
	if err := e.parse(); err != nil {
		return "", err
	}

	top := map[string]any{
		"Values":       chartValues(Coalesce(c.Values, overMap)),
		"Release":      map[string]any{"Name": o.ReleaseName, "Namespace": o.Namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Chart":        c.Meta,
		"Capabilities": capabilities(kv),
		"Files":        files{all: c.Files},
	}

	var out strings.Builder

	for _, p := range c.templatePaths() {
		base := path2base(p)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}

		name := c.Name + "/" + p
		dot := withTemplate(top, name, c.Name+"/templates")

		s, err := e.exec(name, dot)
		if err != nil {
			return "", err
		}

		if *e.clockFormatted {
			return "", fmt.Errorf("%s: %w", name, ErrClock)
		}

		for _, doc := range splitDocs(s) {
			if err := checkObject(doc); err != nil {
				return "", fmt.Errorf("%s: %w", name, err)
			}

			fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", name, doc)
		}
	}

	return out.String(), nil
}

func path2base(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func withTemplate(top map[string]any, name, base string) map[string]any {
	dot := make(map[string]any, len(top)+1)
	for k, v := range top {
		dot[k] = v
	}

	dot["Template"] = map[string]any{"Name": name, "BasePath": base}

	return dot
}

// splitDocs cuts a rendered file into its non-empty YAML documents, at the lines that start
// with "---" (Helm's releaseutil.SplitManifests separator).
func splitDocs(s string) []string {
	var (
		docs []string
		cur  []string
	)

	flush := func() {
		d := strings.Join(cur, "\n")
		if strings.TrimSpace(stripComments(d)) != "" {
			docs = append(docs, strings.Trim(d, " \n"))
		}

		cur = nil
	}

	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "---") {
			flush()

			continue
		}

		cur = append(cur, l)
	}

	flush()

	return docs
}

func stripComments(d string) string {
	var b strings.Builder

	for _, l := range strings.Split(d, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}

	return b.String()
}

func checkObject(doc string) error {
	var obj struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}

	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		return fmt.Errorf("rendered document is not YAML: %w", err)
	}

	if obj.APIVersion == "" || obj.Kind == "" || obj.Metadata.Name == "" {
		return errors.New("rendered document is not a Kubernetes object (apiVersion, kind and metadata.name)")
	}

	return nil
}

// engine holds a chart's parsed templates: one namespace of named templates, as Helm's.
type engine struct {
	chart *Chart
	trees map[string]*parse.Tree
	// clockFormatted is set when a time from now is turned into text (see clock.go).
	clockFormatted *bool
}

func (e *engine) parse() error {
	names := knownFuncs()

	for _, p := range e.chart.templatePaths() {
		name := e.chart.Name + "/" + p

		trees, err := parse.Parse(name, e.chart.Templates[p], "", "", names)
		if err != nil {
			return fmt.Errorf("parse %s: %w", name, err)
		}

		for n, t := range trees {
			if t.Root == nil {
				continue
			}

			// A define overrides an earlier one of the same name, as text/template's AddParseTree.
			e.trees[n] = t
		}

		if _, ok := e.trees[name]; !ok {
			e.trees[name] = &parse.Tree{Name: name, Root: &parse.ListNode{NodeType: parse.NodeList}}
		}
	}

	return nil
}

func (e *engine) exec(name string, dot any) (string, error) {
	var b strings.Builder

	s := &state{e: e, out: &b}
	if err := s.run(name, dot); err != nil {
		return "", err
	}

	return b.String(), nil
}

// sortedKeys is the iteration order of a map in range and printing: Go's, by key.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	sort.Strings(keys)

	return keys
}
