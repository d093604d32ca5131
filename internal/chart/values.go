package chart

import (
	"errors"
	"fmt"
	"strings"
)

// Coalesce merges the caller's values over a chart's defaults as Helm v4.3.2 does
// (pkg/chart/common/util/coalesce.go, coalesceValues and coalesceTablesFullKey, without
// subcharts): maps merge key by key, the caller's scalars and lists replace the defaults, the
// chart's own nulls are dropped, and the caller's null removes a key the chart sets. A caller's
// null for a key the chart does not set stays (a key whose value is nil). Neither argument is
// modified.
func Coalesce(defaults, over map[string]any) map[string]any {
	out := deepCopyMap(over)

	for k, dv := range defaults {
		v, set := out[k]

		switch {
		case set && v == nil:
			delete(out, k)
		case set:
			vm, vok := v.(map[string]any)
			if dm, ok := dv.(map[string]any); ok && vok {
				coalesceTables(vm, dm)
			}
		case dv != nil:
			out[k] = deepCopyWithoutNil(dv)
		}
	}

	return out
}

// coalesceTables merges the chart's table src under the caller's dst, below the top level:
// the caller's null removes a key the chart sets and stays otherwise.
func coalesceTables(dst, src map[string]any) {
	for k, sv := range src {
		if sv == nil {
			continue // the chart's nulls are dropped before the merge (cleanNilValues)
		}

		dv, set := dst[k]

		switch {
		case set && dv == nil:
			delete(dst, k)
		case !set:
			dst[k] = deepCopyWithoutNil(sv)
		default:
			dm, dok := dv.(map[string]any)
			if sm, ok := sv.(map[string]any); ok && dok {
				coalesceTables(dm, sm)
			}
		}
	}
}

// deepCopyWithoutNil is a copy of a chart's value whose maps lose their null entries, at every
// depth (Helm's cleanNilValues; lists are kept as they are).
func deepCopyWithoutNil(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return deepCopy(v)
	}

	out := make(map[string]any, len(m))

	for k, e := range m {
		if e != nil {
			out[k] = deepCopyWithoutNil(e)
		}
	}

	return out
}

func deepCopyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}

	return out
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return deepCopyMap(x)
	case chartValues:
		return chartValues(deepCopyMap(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}

		return out
	default:
		return v
	}
}

// normalize checks the caller's values hold only what YAML could (maps with string keys,
// lists, strings, booleans, numbers, nil); Go ints become int64, as Helm's --set gives them.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))

		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}

			out[k] = n
		}

		return out, nil
	case []any:
		out := make([]any, len(x))

		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}

			out[i] = n
		}

		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}

		return out, nil
	case int:
		return int64(x), nil
	case int64, float64, string, bool, nil:
		return x, nil
	default:
		return nil, fmt.Errorf("value of type %T: want a map, list, string, number or boolean", v)
	}
}

// chartValues is .Values: Helm's common.Values, a map with methods of its own (AsMap, YAML,
// Table, PathValue). A template's .Values.AsMap is the method, not a key: Cilium's checks of
// removed options are `dig "option" "" .Values.AsMap`, because sprig's dig, which takes any
// value, refuses a common.Values where functions with a map parameter take it as a map.
type chartValues map[string]any

func (chartValues) typeName() string { return "common.Values" }

func (v chartValues) field(name string) (any, bool) { return v[name], true }

func (v chartValues) method(name string) (func([]any) (any, error), bool) {
	switch name {
	case "AsMap":
		return func(args []any) (any, error) {
			if err := nargs(args, 0); err != nil {
				return nil, err
			}

			if len(v) == 0 {
				return map[string]any{}, nil
			}

			return map[string]any(v), nil
		}, true
	case "YAML":
		return func(args []any) (any, error) {
			if err := nargs(args, 0); err != nil {
				return nil, err
			}

			// sigs.k8s.io/yaml's Marshal, as Helm's YAML, ends with a newline ("{}\n" when empty);
			// toYaml trims it.
			s, err := toYAML(map[string]any(v))

			return s + "\n", err
		}, true
	case "Table":
		return func(args []any) (any, error) { return v.table(args) }, true
	case "PathValue":
		return func(args []any) (any, error) { return v.pathValue(args) }, true
	case "Encode":
		return func([]any) (any, error) {
			return nil, errors.New("common.Values.Encode needs an io.Writer, which no template has")
		}, true
	}

	return nil, false
}

// table is Values.Table: the map at a dotted path, or `"key" is not a table`.
func (v chartValues) table(args []any) (any, error) {
	if err := nargs(args, 1); err != nil {
		return nil, err
	}

	name, err := stringArg(args[0])
	if err != nil {
		return nil, err
	}

	t := map[string]any(v)

	for _, k := range strings.Split(name, ".") {
		next, ok := t[k].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%q is not a table", k)
		}

		t = next
	}

	return chartValues(t), nil
}

// pathValue is Values.PathValue: the value (not a map) at a dotted path, or `"key" is not a
// value`.
func (v chartValues) pathValue(args []any) (any, error) {
	if err := nargs(args, 1); err != nil {
		return nil, err
	}

	p, err := stringArg(args[0])
	if err != nil {
		return nil, err
	}

	if p == "" {
		return nil, errors.New("YAML path cannot be empty")
	}

	keys := strings.Split(p, ".")
	key := keys[len(keys)-1]

	t := v
	if len(keys) > 1 {
		tv, err := v.table([]any{strings.Join(keys[:len(keys)-1], ".")})
		if err != nil {
			return nil, fmt.Errorf("%q is not a value", key)
		}

		t = tv.(chartValues)
	}

	e, ok := t[key]
	if _, table := e.(map[string]any); !ok || table {
		return nil, fmt.Errorf("%q is not a value", key)
	}

	return e, nil
}
