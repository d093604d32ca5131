package chart

import (
	"errors"
	"fmt"
	"math"
	"path"
	"reflect"
	"strconv"
	"strings"
)

// sprigFuncs are the deterministic sprig v3.3.0 functions charts use, with sprig's argument
// order (the string last, for pipelines) and its lenient conversions.
func sprigFuncs() map[string]fn {
	m := map[string]fn{}

	for _, part := range []func() map[string]fn{sprigPart1, sprigPart2, sprigPart3, sprigPart4, sprigPart5, sprigPart6, sprigPart7, sprigPart8, sprigPart9} {
		for k, v := range part() {
			m[k] = v
		}
	}

	for _, n := range []string{"mustRegexMatch", "mustRegexFind", "mustRegexFindAll", "mustRegexReplaceAll", "mustRegexReplaceAllLiteral", "mustRegexSplit",
		"mustFirst", "mustLast", "mustRest", "mustInitial", "mustReverse", "mustUniq", "mustCompact", "mustWithout", "mustHas", "mustSlice", "mustPrepend"} {
		m[n] = m[strings.ToLower(n[4:5])+n[5:]] // mustX is X: errors are errors here already
	}

	return m
}

func sprigPart1() map[string]fn {
	return map[string]fn{
		"trim":      str1(func(s string) any { return strings.TrimSpace(s) }),
		"upper":     str1(func(s string) any { return strings.ToUpper(s) }),
		"lower":     str1(func(s string) any { return strings.ToLower(s) }),
		"title":     str1(title),
		"nospace":   str1(func(s string) any { return strings.Join(strings.Fields(s), "") }),
		"toString":  str1(func(s string) any { return s }),
		"b64enc":    str1(func(s string) any { return b64(s) }),
		"b64dec":    str1(func(s string) any { return unb64(s) }),
		"sha256sum": str1(func(s string) any { return sha256sum(s) }),
		"sha1sum":   str1(func(s string) any { return sha1sum(s) }),
		"base":      str1(func(s string) any { return path.Base(s) }),
		"dir":       str1(func(s string) any { return path.Dir(s) }),
		"ext":       str1(func(s string) any { return path.Ext(s) }),
		"clean":     str1(func(s string) any { return path.Clean(s) }),
		"squote": func(_ *state, a []any) (any, error) {
			return quoteAll(a, func(s string) string { return "'" + s + "'" }), nil
		},
		"quote":      func(_ *state, a []any) (any, error) { return quoteAll(a, strconv.Quote), nil },
		"trimAll":    str2(func(c, s string) any { return strings.Trim(s, c) }),
		"trimall":    str2(func(c, s string) any { return strings.Trim(s, c) }),
		"trimSuffix": str2(func(x, s string) any { return strings.TrimSuffix(s, x) }),
		"trimPrefix": str2(func(x, s string) any { return strings.TrimPrefix(s, x) }),
		"contains":   str2(func(x, s string) any { return strings.Contains(s, x) }),
		"hasPrefix":  str2(func(x, s string) any { return strings.HasPrefix(s, x) }),
		"hasSuffix":  str2(func(x, s string) any { return strings.HasSuffix(s, x) }),
		"splitList":  str2(func(sep, s string) any { return anyList(strings.Split(s, sep)) }),
		"split": str2(func(sep, s string) any {
			out := map[string]any{}
			for i, p := range strings.Split(s, sep) {
				out["_"+strconv.Itoa(i)] = p
			}

			return out
		}),
		"cat": func(_ *state, a []any) (any, error) {
			var parts []string
			for _, v := range a {
				if v != nil {
					parts = append(parts, strval(v))
				}
			}

			return strings.Join(parts, " "), nil
		},
		"indent":  func(_ *state, a []any) (any, error) { return indent(a, "") },
		"nindent": func(_ *state, a []any) (any, error) { return indent(a, "\n") },
		"replace": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			return strings.ReplaceAll(strval(a[2]), strval(a[0]), strval(a[1])), nil
		},
		"repeat": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			n := toInt64(a[0])
			if n < 0 || n > 1<<16 {
				return nil, fmt.Errorf("repeat count %d out of range", n)
			}

			return strings.Repeat(strval(a[1]), int(n)), nil
		},
	}
}

func sprigPart2() map[string]fn {
	return map[string]fn{
		"trunc": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			c, s := int(toInt64(a[0])), strval(a[1])

			switch {
			case c < 0 && len(s)+c > 0:
				return s[len(s)+c:], nil
			case c >= 0 && len(s) > c:
				return s[:c], nil
			}

			return s, nil
		},
		"substr": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			start, end, s := int(toInt64(a[0])), int(toInt64(a[1])), strval(a[2])
			if start < 0 {
				return s[:min(max(end, 0), len(s))], nil
			}

			if end < 0 || end > len(s) {
				end = len(s)
			}

			if start > end {
				return "", nil
			}

			return s[start:end], nil
		},
		"join": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			l, err := list(a[1])
			if err != nil {
				return strval(a[1]), nil //nolint:nilerr // sprig joins a non-list as its string
			}

			parts := make([]string, 0, len(l))
			for _, e := range l {
				if e != nil {
					parts = append(parts, strval(e))
				}
			}

			return strings.Join(parts, strval(a[0])), nil
		},
		"sortAlpha": func(_ *state, a []any) (any, error) {
			l, err := list(first(a))
			if err != nil {
				return []any{strval(first(a))}, nil //nolint:nilerr // sprig's
			}

			return sortedStrings(l), nil
		},
		"toStrings": func(_ *state, a []any) (any, error) {
			l, err := list(first(a))
			if err != nil {
				return nil, err
			}

			out := make([]any, len(l))
			for i, e := range l {
				out[i] = strval(e)
			}

			return out, nil
		},
		"atoi":    func(_ *state, a []any) (any, error) { i, _ := strconv.Atoi(strval(first(a))); return i, nil },
		"int":     func(_ *state, a []any) (any, error) { return int(toInt64(first(a))), nil },
		"int64":   func(_ *state, a []any) (any, error) { return toInt64(first(a)), nil },
		"float64": func(_ *state, a []any) (any, error) { return toFloat64(first(a)), nil },
	}
}

func sprigPart3() map[string]fn {
	return map[string]fn{
		"add": ints(func(x []int64) int64 {
			var s int64
			for _, v := range x {
				s += v
			}
			return s
		}),
		"add1": ints(func(x []int64) int64 { return x[0] + 1 }),
		"mul": ints(func(x []int64) int64 {
			p := int64(1)
			for _, v := range x {
				p *= v
			}
			return p
		}),
		"sub": ints(func(x []int64) int64 { return x[0] - x[1] }),
		"max": ints(func(x []int64) int64 {
			m := x[0]
			for _, v := range x {
				m = max(m, v)
			}
			return m
		}),
		"biggest": ints(func(x []int64) int64 {
			m := x[0]
			for _, v := range x {
				m = max(m, v)
			}
			return m
		}),
		"min": ints(func(x []int64) int64 {
			m := x[0]
			for _, v := range x {
				m = min(m, v)
			}
			return m
		}),
		"addf": floats(func(x []float64) float64 {
			var s float64
			for _, v := range x {
				s += v
			}
			return s
		}),
		"subf": floats(func(x []float64) float64 { return x[0] - x[1] }),
		"mulf": floats(func(x []float64) float64 {
			p := 1.0
			for _, v := range x {
				p *= v
			}
			return p
		}),
		"ceil":  floats(func(x []float64) float64 { return math.Ceil(x[0]) }),
		"floor": floats(func(x []float64) float64 { return math.Floor(x[0]) }),
		"div": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			d := toInt64(a[1])
			if d == 0 {
				return nil, errors.New("division by zero")
			}

			return toInt64(a[0]) / d, nil
		},
		"mod": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			d := toInt64(a[1])
			if d == 0 {
				return nil, errors.New("division by zero")
			}

			return toInt64(a[0]) % d, nil
		},
		"until": func(_ *state, a []any) (any, error) { return untilStep(0, toInt64(first(a)), 1) },
	}
}

func sprigPart4() map[string]fn {
	return map[string]fn{
		"untilStep": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			return untilStep(toInt64(a[0]), toInt64(a[1]), toInt64(a[2]))
		},
		"default": func(_ *state, a []any) (any, error) {
			if len(a) < 2 || empty(a[1]) {
				return first(a), nil
			}

			return a[1], nil
		},
		"empty": func(_ *state, a []any) (any, error) { return one(a, func(v any) any { return empty(v) }) },
		"coalesce": func(_ *state, a []any) (any, error) {
			for _, v := range a {
				if !empty(v) {
					return v, nil
				}
			}

			return nil, nil
		},
		"all": func(_ *state, a []any) (any, error) {
			for _, v := range a {
				if empty(v) {
					return false, nil
				}
			}

			return true, nil
		},
		"any": func(_ *state, a []any) (any, error) {
			for _, v := range a {
				if !empty(v) {
					return true, nil
				}
			}

			return false, nil
		},
		"ternary": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			if truth(a[2]) {
				return a[0], nil
			}

			return a[1], nil
		},
		"list":  func(_ *state, a []any) (any, error) { return append([]any{}, a...), nil },
		"tuple": func(_ *state, a []any) (any, error) { return append([]any{}, a...), nil },
		"dict": func(_ *state, a []any) (any, error) {
			m := map[string]any{}
			for i := 0; i < len(a); i += 2 {
				var v any
				if i+1 < len(a) {
					v = a[i+1]
				}

				m[strval(a[i])] = v
			}

			return m, nil
		},
	}
}

func sprigPart5() map[string]fn {
	return map[string]fn{
		"get": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			d, err := dictOf(a[0])
			if err != nil {
				return nil, err
			}

			if v, ok := d[strval(a[1])]; ok {
				return v, nil
			}

			return "", nil
		},
		"set": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			d, err := dictOf(a[0])
			if err != nil {
				return nil, err
			}

			d[strval(a[1])] = a[2]

			return d, nil
		},
		"unset": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			d, err := dictOf(a[0])
			if err != nil {
				return nil, err
			}

			delete(d, strval(a[1]))

			return d, nil
		},
		"hasKey": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			d, err := dictOf(a[0])
			if err != nil {
				return nil, err
			}

			_, ok := d[strval(a[1])]

			return ok, nil
		},
		"keys": func(_ *state, a []any) (any, error) {
			var out []any

			for _, v := range a {
				d, err := dictOf(v)
				if err != nil {
					return nil, err
				}

				for _, k := range sortedKeys(d) {
					out = append(out, k)
				}
			}

			return out, nil
		},
	}
}

func sprigPart6() map[string]fn {
	return map[string]fn{
		"values": func(_ *state, a []any) (any, error) {
			d, err := dictOf(first(a))
			if err != nil {
				return nil, err
			}

			out := make([]any, 0, len(d))
			for _, k := range sortedKeys(d) {
				out = append(out, d[k])
			}

			return out, nil
		},
		"pluck": func(_ *state, a []any) (any, error) {
			var out []any

			for _, v := range a[1:] {
				d, err := dictOf(v)
				if err != nil {
					return nil, err
				}

				if e, ok := d[strval(a[0])]; ok {
					out = append(out, e)
				}
			}

			return out, nil
		},
		"pick":               func(_ *state, a []any) (any, error) { return pickOmit(a, true) },
		"omit":               func(_ *state, a []any) (any, error) { return pickOmit(a, false) },
		"merge":              func(_ *state, a []any) (any, error) { return mergeDicts(a, false) },
		"mustMerge":          func(_ *state, a []any) (any, error) { return mergeDicts(a, false) },
		"mergeOverwrite":     func(_ *state, a []any) (any, error) { return mergeDicts(a, true) },
		"mustMergeOverwrite": func(_ *state, a []any) (any, error) { return mergeDicts(a, true) },
		"deepCopy":           func(_ *state, a []any) (any, error) { return one(a, deepCopy) },
		"mustDeepCopy":       func(_ *state, a []any) (any, error) { return one(a, deepCopy) },
		"dig": func(_ *state, a []any) (any, error) {
			if len(a) < 3 {
				return nil, errors.New("dig needs keys, a default and a dict")
			}

			// sprig's dig asserts its any argument is a map[string]interface{}: a
			// common.Values (.Values itself) is not one, as .Values.AsMap is.
			if _, ok := a[len(a)-1].(chartValues); ok {
				return nil, errors.New("interface conversion: interface {} is common.Values, not map[string]interface {}")
			}

			d, err := dictOf(a[len(a)-1])
			if err != nil {
				return nil, err
			}

			var v any = d

			for _, k := range a[:len(a)-2] {
				m, ok := v.(map[string]any)
				if !ok {
					return a[len(a)-2], nil
				}

				if v, ok = m[strval(k)]; !ok {
					return a[len(a)-2], nil
				}
			}

			return v, nil
		},
		"append":     listFn(func(l, rest []any) ([]any, error) { return append(append([]any{}, l...), rest...), nil }),
		"mustAppend": listFn(func(l, rest []any) ([]any, error) { return append(append([]any{}, l...), rest...), nil }),
		"prepend":    listFn(func(l, rest []any) ([]any, error) { return append(append([]any{}, rest...), l...), nil }),
		"concat": func(_ *state, a []any) (any, error) {
			var out []any

			for _, v := range a {
				l, err := list(v)
				if err != nil {
					return nil, err
				}

				out = append(out, l...)
			}

			return out, nil
		},
		"first": listPick(func(l []any) any { return l[0] }),
	}
}

func sprigPart7() map[string]fn {
	return map[string]fn{
		"last":    listPick(func(l []any) any { return l[len(l)-1] }),
		"rest":    listPick(func(l []any) any { return append([]any{}, l[1:]...) }),
		"initial": listPick(func(l []any) any { return append([]any{}, l[:len(l)-1]...) }),
		"reverse": listFn(func(l, _ []any) ([]any, error) {
			out := make([]any, len(l))
			for i, e := range l {
				out[len(l)-1-i] = e
			}

			return out, nil
		}),
		"uniq": listFn(func(l, _ []any) ([]any, error) {
			var out []any
			for _, e := range l {
				if !containsValue(out, e) {
					out = append(out, e)
				}
			}

			return out, nil
		}),
		"compact": listFn(func(l, _ []any) ([]any, error) {
			var out []any
			for _, e := range l {
				if !empty(e) {
					out = append(out, e)
				}
			}

			return out, nil
		}),
		"without": listFn(func(l, rest []any) ([]any, error) {
			var out []any
			for _, e := range l {
				if !containsValue(rest, e) {
					out = append(out, e)
				}
			}

			return out, nil
		}),
		"has": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			l, err := list(a[1])
			if err != nil {
				return false, nil //nolint:nilerr // sprig's has on a non-list is false
			}

			return containsValue(l, a[0]), nil
		},
	}
}

func sprigPart8() map[string]fn {
	return map[string]fn{
		"slice": func(_ *state, a []any) (any, error) {
			if len(a) == 0 {
				return nil, errors.New("slice of nothing")
			}

			if s, ok := a[0].(string); ok && len(a) <= 3 {
				lo, hi := 0, len(s)
				if len(a) > 1 {
					lo = int(toInt64(a[1]))
				}

				if len(a) > 2 {
					hi = int(toInt64(a[2]))
				}

				if lo < 0 || hi > len(s) || lo > hi {
					return nil, errors.New("slice index out of range")
				}

				return s[lo:hi], nil
			}

			l, err := list(a[0])
			if err != nil {
				return nil, err
			}

			lo, hi := 0, len(l)
			if len(a) > 1 {
				lo = int(toInt64(a[1]))
			}

			if len(a) > 2 {
				hi = int(toInt64(a[2]))
			}

			if lo < 0 || hi > len(l) || lo > hi {
				return nil, errors.New("slice index out of range")
			}

			return append([]any{}, l[lo:hi]...), nil
		},
		"typeOf": func(_ *state, a []any) (any, error) { return goType(first(a)), nil },
		"kindOf": func(_ *state, a []any) (any, error) { return kindName(first(a)), nil },
		"kindIs": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			return strval(a[0]) == kindName(a[1]), nil
		},
		"typeIs": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			return strval(a[0]) == goType(a[1]), nil
		},
		"deepEqual": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 2); err != nil {
				return nil, err
			}

			return reflect.DeepEqual(a[0], a[1]), nil
		},
		"regexMatch": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 2)
			if err != nil {
				return nil, err
			}

			return re.MatchString(strval(a[1])), nil
		},
	}
}

func sprigPart9() map[string]fn {
	return map[string]fn{
		"regexFind": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 2)
			if err != nil {
				return nil, err
			}

			return re.FindString(strval(a[1])), nil
		},
		"regexFindAll": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 3)
			if err != nil {
				return nil, err
			}

			return anyList(re.FindAllString(strval(a[1]), int(toInt64(a[2])))), nil
		},
		"regexReplaceAll": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 3)
			if err != nil {
				return nil, err
			}

			return re.ReplaceAllString(strval(a[1]), strval(a[2])), nil
		},
		"regexReplaceAllLiteral": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 3)
			if err != nil {
				return nil, err
			}

			return re.ReplaceAllLiteralString(strval(a[1]), strval(a[2])), nil
		},
		"regexSplit": func(_ *state, a []any) (any, error) {
			re, err := regex(a, 3)
			if err != nil {
				return nil, err
			}

			return anyList(re.Split(strval(a[1]), int(toInt64(a[2])))), nil
		},
		"semverCompare": func(_ *state, a []any) (any, error) { return semverCompare(a) },
		"semver":        func(_ *state, a []any) (any, error) { return semverFn(a) },
		"plural": func(_ *state, a []any) (any, error) {
			if err := nargs(a, 3); err != nil {
				return nil, err
			}

			if toInt64(a[2]) == 1 {
				return strval(a[0]), nil
			}

			return strval(a[1]), nil
		},
	}
}

func str1(f func(string) any) fn {
	return func(_ *state, a []any) (any, error) {
		if err := nargs(a, 1); err != nil {
			return nil, err
		}

		return f(strval(a[0])), nil
	}
}

func str2(f func(x, s string) any) fn {
	return func(_ *state, a []any) (any, error) {
		if err := nargs(a, 2); err != nil {
			return nil, err
		}

		return f(strval(a[0]), strval(a[1])), nil
	}
}

func ints(f func(x []int64) int64) fn {
	return func(_ *state, a []any) (any, error) {
		if len(a) == 0 {
			return nil, errors.New("missing argument")
		}

		x := make([]int64, len(a))
		for i, v := range a {
			x[i] = toInt64(v)
		}

		return f(x), nil
	}
}

func floats(f func(x []float64) float64) fn {
	return func(_ *state, a []any) (any, error) {
		if len(a) == 0 {
			return nil, errors.New("missing argument")
		}

		x := make([]float64, len(a))
		for i, v := range a {
			x[i] = toFloat64(v)
		}

		return f(x), nil
	}
}

func anyList(s []string) []any {
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}

	return out
}

func title(s string) any {
	b := []byte(s)
	up := true

	for i, c := range b {
		if up && c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}

		up = c == ' ' || c == '\t' || c == '\n' || c == '-' || c == '_'
	}

	return string(b)
}

func quoteAll(a []any, q func(string) string) string {
	var parts []string

	for _, v := range a {
		if v != nil {
			parts = append(parts, q(strval(v)))
		}
	}

	return strings.Join(parts, " ")
}

func indent(a []any, lead string) (any, error) {
	if err := nargs(a, 2); err != nil {
		return nil, err
	}

	pad := strings.Repeat(" ", max(int(toInt64(a[0])), 0))

	return lead + pad + strings.ReplaceAll(strval(a[1]), "\n", "\n"+pad), nil
}

func untilStep(start, stop, step int64) (any, error) {
	if step == 0 || (stop-start)/step > 1<<16 {
		return nil, errors.New("untilStep: too many steps")
	}

	var out []any

	for i := start; step > 0 && i < stop || step < 0 && i > stop; i += step {
		out = append(out, int(i))
	}

	return out, nil
}

func listFn(f func(l, rest []any) ([]any, error)) fn {
	return func(_ *state, a []any) (any, error) {
		if len(a) == 0 {
			return nil, errors.New("missing list argument")
		}

		l, err := list(a[0])
		if err != nil {
			return nil, err
		}

		return f(l, a[1:])
	}
}

func listPick(f func(l []any) any) fn {
	return func(_ *state, a []any) (any, error) {
		if err := nargs(a, 1); err != nil {
			return nil, err
		}

		l, err := list(a[0])
		if err != nil {
			return nil, err
		}

		if len(l) == 0 {
			return nil, nil
		}

		return f(l), nil
	}
}

func containsValue(l []any, v any) bool {
	for _, e := range l {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}

	return false
}

func pickOmit(a []any, pick bool) (any, error) {
	if len(a) == 0 {
		return nil, errors.New("missing dict")
	}

	d, err := dictOf(a[0])
	if err != nil {
		return nil, err
	}

	keys := map[string]bool{}
	for _, k := range a[1:] {
		keys[strval(k)] = true
	}

	out := map[string]any{}

	for k, v := range d {
		if keys[k] == pick {
			out[k] = v
		}
	}

	return out, nil
}

// mergeDicts is sprig's merge (mergo: the destination's values win, maps merge deeply) and
// mergeOverwrite (the later dicts' values win). It modifies and returns the first dict.
func mergeDicts(a []any, overwrite bool) (any, error) {
	if len(a) == 0 {
		return nil, errors.New("missing dict")
	}

	dst, err := dictOf(a[0])
	if err != nil {
		return nil, err
	}

	for _, v := range a[1:] {
		src, err := dictOf(v)
		if err != nil {
			return nil, err
		}

		mergeInto(dst, src, overwrite)
	}

	return dst, nil
}

func mergeInto(dst, src map[string]any, overwrite bool) {
	for k, sv := range src {
		dv, ok := dst[k]
		dm, dIsMap := dv.(map[string]any)
		sm, sIsMap := sv.(map[string]any)

		switch {
		case dIsMap && sIsMap:
			mergeInto(dm, sm, overwrite)
		case !ok || empty(dv):
			dst[k] = deepCopy(sv)
		case overwrite && !empty(sv):
			dst[k] = deepCopy(sv)
		}
	}
}
