package chart

import "fmt"

// Coalesce merges the caller's values over a chart's defaults as Helm does: maps merge key by
// key, the caller's scalars and lists replace the defaults, and a nil (YAML null) removes the
// key. Neither argument is modified.
func Coalesce(defaults, over map[string]any) map[string]any {
	out := deepCopyMap(defaults)

	for k, v := range over {
		if v == nil {
			delete(out, k)

			continue
		}

		if vm, ok := v.(map[string]any); ok {
			if dm, ok := out[k].(map[string]any); ok {
				out[k] = Coalesce(dm, vm)

				continue
			}
		}

		out[k] = deepCopy(v)
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
