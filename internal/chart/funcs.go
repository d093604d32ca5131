package chart

import (
	"crypto/sha1" //nolint:gosec // sha1sum is a template function, not a security check
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/template/parse"

	"gopkg.in/yaml.v2"
)

type fn func(s *state, args []any) (any, error)

// sprigNames are every function of sprig v3.3.0's generic map (Helm's library), env and
// expandenv excepted (Helm removes them). Those without an entry in funcs parse and fail when
// called.
var sprigNames = strings.Fields(`hello ago date date_in_zone date_modify dateInZone dateModify duration durationRound
htmlDate htmlDateInZone must_date_modify mustDateModify mustToDate now toDate unixEpoch abbrev abbrevboth trunc trim
upper lower title untitle substr repeat trimall trimAll trimSuffix trimPrefix nospace initials randAlphaNum randAlpha
randAscii randNumeric swapcase shuffle snakecase camelcase kebabcase wrap wrapWith contains hasPrefix hasSuffix quote
squote cat indent nindent replace plural sha1sum sha256sum sha512sum adler32sum toString atoi int64 int float64 seq
toDecimal split splitList splitn toStrings until untilStep add1 add sub div mod mul randInt add1f addf subf divf mulf
biggest max min maxf minf ceil floor round join sortAlpha default empty coalesce all any compact mustCompact fromJson
toJson toPrettyJson toRawJson mustFromJson mustToJson mustToPrettyJson mustToRawJson ternary deepCopy mustDeepCopy
typeOf typeIs typeIsLike kindOf kindIs deepEqual getHostByName base dir clean ext isAbs osBase osClean osDir
osExt osIsAbs b64enc b64dec b32enc b32dec tuple list dict get set unset hasKey pluck keys pick omit merge
mergeOverwrite mustMerge mustMergeOverwrite values append mustAppend prepend mustPrepend first mustFirst rest mustRest
last mustLast initial mustInitial reverse mustReverse uniq mustUniq without mustWithout has mustHas slice mustSlice
concat dig chunk mustChunk bcrypt htpasswd genPrivateKey derivePassword buildCustomCert genCA genCAWithKey
genSelfSignedCert genSelfSignedCertWithKey genSignedCert genSignedCertWithKey encryptAES decryptAES randBytes uuidv4
semver semverCompare fail regexMatch mustRegexMatch regexFindAll mustRegexFindAll regexFind mustRegexFind
regexReplaceAll mustRegexReplaceAll regexReplaceAllLiteral mustRegexReplaceAllLiteral regexSplit mustRegexSplit
regexQuoteMeta urlParse urlJoin`)

// helmNames are Helm's own template functions (pkg/engine funcs.go).
var helmNames = strings.Fields(`include tpl required fail toYaml toYamlPretty mustToYaml fromYaml fromYamlArray toJson
mustToJson fromJson fromJsonArray mustFromJson toToml fromToml lookup`)

var builtinNames = strings.Fields(`and call html index slice js len not or print printf println urlquery eq ge gt le lt ne`)

// knownFuncs is every name a template may use: parse refuses the others, as Helm does.
var knownFuncs = sync.OnceValue(func() map[string]any {
	m := map[string]any{}
	for _, list := range [][]string{builtinNames, sprigNames, helmNames} {
		for _, n := range list {
			m[n] = true
		}
	}

	return m
})

// funcs are the functions this renderer implements (see the package doc for the rest).
var funcs map[string]fn

func init() {
	funcs = map[string]fn{
		// Go's builtins.
		"not":     func(_ *state, a []any) (any, error) { return one(a, func(v any) any { return !truth(v) }) },
		"len":     fnLen,
		"index":   fnIndex,
		"print":   func(_ *state, a []any) (any, error) { return fmt.Sprint(a...), nil },
		"println": func(_ *state, a []any) (any, error) { return fmt.Sprintln(a...), nil },
		"printf":  fnPrintf,
		"eq":      fnEq,
		"ne":      func(s *state, a []any) (any, error) { v, err := fnEq(s, a); return v != true, err },
		"lt":      cmpFn(func(c int) bool { return c < 0 }),
		"le":      cmpFn(func(c int) bool { return c <= 0 }),
		"gt":      cmpFn(func(c int) bool { return c > 0 }),
		"ge":      cmpFn(func(c int) bool { return c >= 0 }),
		// Helm's.
		"include":       fnInclude,
		"tpl":           fnTpl,
		"required":      fnRequired,
		"fail":          func(_ *state, a []any) (any, error) { return nil, errors.New(strval(first(a))) },
		"toYaml":        func(_ *state, a []any) (any, error) { s, _ := toYAML(first(a)); return s, nil },
		"mustToYaml":    func(_ *state, a []any) (any, error) { return toYAML(first(a)) },
		"fromYaml":      func(_ *state, a []any) (any, error) { return fromYAML(strval(first(a)), false), nil },
		"fromYamlArray": func(_ *state, a []any) (any, error) { return fromYAML(strval(first(a)), true), nil },
		"toJson":        func(_ *state, a []any) (any, error) { b, _ := json.Marshal(jsonable(first(a))); return string(b), nil },
		"mustToJson": func(_ *state, a []any) (any, error) {
			b, err := json.Marshal(jsonable(first(a)))
			return string(b), err
		},
		"toPrettyJson": func(_ *state, a []any) (any, error) {
			b, _ := json.MarshalIndent(jsonable(first(a)), "", "  ")
			return string(b), nil
		},
		"toRawJson":     fnToRawJSON,
		"fromJson":      func(_ *state, a []any) (any, error) { return fromJSON(strval(first(a)), false), nil },
		"fromJsonArray": func(_ *state, a []any) (any, error) { return fromJSON(strval(first(a)), true), nil },
		// `helm template` has no cluster to look in: lookup finds nothing.
		"lookup": func(*state, []any) (any, error) { return map[string]any{}, nil },
		// sprig's clock, for the charts that check durations with it (clock.go).
		"now":              fnNow,
		"dateModify":       func(_ *state, a []any) (any, error) { return dateModify(a, false) },
		"date_modify":      func(_ *state, a []any) (any, error) { return dateModify(a, false) },
		"mustDateModify":   func(_ *state, a []any) (any, error) { return dateModify(a, true) },
		"must_date_modify": func(_ *state, a []any) (any, error) { return dateModify(a, true) },
	}

	for n, f := range sprigFuncs() {
		funcs[n] = f
	}
}

func first(a []any) any {
	if len(a) == 0 {
		return nil
	}

	return a[0]
}

func one(a []any, f func(any) any) (any, error) {
	if len(a) != 1 {
		return nil, fmt.Errorf("wrong number of args: want 1 got %d", len(a))
	}

	return f(a[0]), nil
}

func nargs(a []any, n int) error {
	if len(a) != n {
		return fmt.Errorf("wrong number of args: want %d got %d", n, len(a))
	}

	return nil
}

// strval is sprig's: a string as is, nil as "", anything else as fmt prints it.
func strval(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case error:
		return x.Error()
	default:
		return fmt.Sprint(x)
	}
}

func fnLen(_ *state, a []any) (any, error) {
	if err := nargs(a, 1); err != nil {
		return nil, err
	}

	switch x := plainMap(a[0]).(type) {
	case string:
		return len(x), nil
	case []any:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	default:
		return nil, fmt.Errorf("len of type %T", a[0])
	}
}

func fnIndex(_ *state, a []any) (any, error) {
	if len(a) == 0 {
		return nil, errors.New("index of nothing")
	}

	v := a[0]

	for _, k := range a[1:] {
		switch x := plainMap(v).(type) {
		case map[string]any:
			v = x[strval(k)]
		case []any:
			i, ok := asInt(k)
			if !ok || i < 0 || i >= len(x) {
				return nil, fmt.Errorf("index out of range: %v", k)
			}

			v = x[i]
		case nil:
			return nil, errors.New("index of untyped nil")
		default:
			return nil, fmt.Errorf("can't index item of type %T", v)
		}
	}

	return v, nil
}

func fnPrintf(_ *state, a []any) (any, error) {
	if len(a) == 0 {
		return nil, errors.New("printf needs a format")
	}

	return fmt.Sprintf(strval(a[0]), a[1:]...), nil
}

// kind is text/template's basic kind of a value, for the comparisons.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case bool:
		return "bool"
	case int, int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "string"
	default:
		return "other"
	}
}

func fnEq(_ *state, a []any) (any, error) {
	if len(a) < 2 {
		return nil, errors.New("missing argument for comparison")
	}

	for _, b := range a[1:] {
		ka, kb := kind(a[0]), kind(b)

		switch {
		case ka == "nil" || kb == "nil":
			if ka == kb {
				return true, nil
			}
		case ka == "other" || kb == "other":
			x, xok := a[0].(instant)
			y, yok := b.(instant)

			if !xok || !yok {
				return nil, errors.New("non-comparable type")
			}

			if x.t == y.t { //nolint:gocritic // text/template compares a time.Time with ==, as here
				return true, nil
			}
		case ka != kb:
			return nil, errors.New("incompatible types for comparison")
		case ka == "int":
			x, _ := asInt(a[0])
			y, _ := asInt(b)

			if x == y {
				return true, nil
			}
		case a[0] == b:
			return true, nil
		}
	}

	return false, nil
}

func cmpFn(ok func(int) bool) fn {
	return func(_ *state, a []any) (any, error) {
		if err := nargs(a, 2); err != nil {
			return nil, err
		}

		ka, kb := kind(a[0]), kind(b1(a))
		if ka != kb || ka == "nil" || ka == "other" || ka == "bool" {
			return nil, errors.New("incompatible types for comparison")
		}

		var c int

		switch ka {
		case "int":
			x, _ := asInt(a[0])
			y, _ := asInt(a[1])
			c = cmpOrdered(x, y)
		case "float":
			c = cmpOrdered(a[0].(float64), a[1].(float64))
		case "string":
			c = strings.Compare(a[0].(string), a[1].(string))
		}

		return ok(c), nil
	}
}

func b1(a []any) any { return a[1] }

func cmpOrdered[T int | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	default:
		return 0
	}
}

func fnInclude(s *state, a []any) (any, error) {
	if len(a) != 2 {
		return nil, fmt.Errorf("include takes a name and a value, got %d arguments", len(a))
	}

	var b strings.Builder

	sub := s.sub(s.e, &b)
	if err := sub.run(strval(a[0]), a[1]); err != nil {
		return nil, err
	}

	return b.String(), nil
}

func fnTpl(s *state, a []any) (any, error) {
	if len(a) != 2 {
		return nil, fmt.Errorf("tpl takes a template and a value, got %d arguments", len(a))
	}

	name := s.tmpl
	if m, ok := a[1].(map[string]any); ok {
		if t, ok := m["Template"].(map[string]any); ok {
			name = strval(t["Name"])
		}
	}

	trees, err := parse.Parse(name, strval(a[0]), "", "", knownFuncs())
	if err != nil {
		return nil, err
	}

	e := &engine{chart: s.e.chart, trees: make(map[string]*parse.Tree, len(s.e.trees)+len(trees)), clockFormatted: s.e.clockFormatted}
	for n, t := range s.e.trees {
		e.trees[n] = t
	}

	for n, t := range trees {
		e.trees[n] = t
	}

	var b strings.Builder

	sub := s.sub(e, &b)
	if err := sub.run(name, a[1]); err != nil {
		return nil, err
	}

	return b.String(), nil
}

func fnRequired(_ *state, a []any) (any, error) {
	if err := nargs(a, 2); err != nil {
		return nil, err
	}

	if v := a[1]; v == nil || v == "" {
		return nil, errors.New(strval(a[0]))
	}

	return a[1], nil
}

// toYAML is Helm's toYaml: sigs.k8s.io/yaml's Marshal (JSON, then YAML with sorted keys),
// without the trailing newline.
func toYAML(v any) (string, error) {
	j, err := json.Marshal(jsonable(v))
	if err != nil {
		return "", err
	}

	var obj any
	if err := yaml.Unmarshal(j, &obj); err != nil {
		return "", err
	}

	b, err := yaml.Marshal(obj)
	if err != nil {
		return "", err
	}

	return strings.TrimSuffix(string(b), "\n"), nil
}

// jsonable turns the renderer's special values into plain data for the encoders.
func jsonable(v any) any {
	switch x := plainMap(v).(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}

		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}

		return out
	case methoder:
		return fmt.Sprint(x)
	default:
		return v
	}
}

// fromYAML is Helm's fromYaml (a map, or {"Error": …}) and fromYamlArray (a list, or [error]).
func fromYAML(s string, array bool) any {
	var v any

	err := yaml.Unmarshal([]byte(s), &v)
	if err == nil {
		v, err = jsonish(v)
	}

	return decoded(v, err, array)
}

func fromJSON(s string, array bool) any {
	var v any

	err := json.Unmarshal([]byte(s), &v)

	return decoded(v, err, array)
}

func decoded(v any, err error, array bool) any {
	if array {
		l, ok := v.([]any)
		if err != nil || !ok && v != nil {
			return []any{errText(err, "not a list")}
		}

		if l == nil {
			l = []any{}
		}

		return l
	}

	m, ok := v.(map[string]any)
	if err != nil || !ok && v != nil {
		return map[string]any{"Error": errText(err, "not a map")}
	}

	if m == nil {
		m = map[string]any{}
	}

	return m
}

func errText(err error, otherwise string) string {
	if err != nil {
		return err.Error()
	}

	return otherwise
}

func fnToRawJSON(_ *state, a []any) (any, error) {
	var b strings.Builder

	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)

	if err := enc.Encode(jsonable(first(a))); err != nil {
		return "", nil //nolint:nilerr // sprig's toRawJson prints nothing on error
	}

	return strings.TrimSuffix(b.String(), "\n"), nil
}

// empty is sprig's: nil, false, zero numbers, and empty strings, lists and maps.
func empty(v any) bool { return !truth(v) }

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		return int64(x)
	case bool:
		if x {
			return 1
		}

		return 0
	case string:
		if i, err := strconv.ParseInt(x, 0, 64); err == nil {
			return i
		}

		if f, err := strconv.ParseFloat(x, 64); err == nil {
			return int64(f)
		}
	}

	return 0
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case float64:
		return x
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	case bool:
		if x {
			return 1
		}
	}

	return 0
}

func list(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("cannot use %T as a list", v)
	}
}

func dictOf(v any) (map[string]any, error) {
	m, ok := plainMap(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("cannot use %T as a dict", v)
	}

	return m, nil
}

// plainMap is .Values as the map it is, what text/template hands a function whose parameter is
// a map; anything else as it is.
func plainMap(v any) any {
	if cv, ok := v.(chartValues); ok {
		return map[string]any(cv)
	}

	return v
}

// kindName is reflect's kind name, what sprig's kindOf answers.
func kindName(v any) string {
	if v == nil {
		return "invalid"
	}

	switch x := v.(type) {
	case chartValues:
		return "map"
	case version:
		if x.ptr {
			return "ptr"
		}

		return "struct"
	case files:
		return "map"
	case apiVersions:
		return "slice"
	case methoder:
		return "struct"
	}

	return reflect.TypeOf(v).Kind().String()
}

// goType is the Go type Helm's value would have, what sprig's typeOf answers and
// text/template's errors name.
func goType(v any) string {
	if m, ok := v.(methoder); ok {
		return m.typeName()
	}

	return fmt.Sprintf("%T", v)
}

func sum(h []byte) string { return hex.EncodeToString(h) }

func sha256sum(s string) string { h := sha256.Sum256([]byte(s)); return sum(h[:]) }

func sha1sum(s string) string { h := sha1.Sum([]byte(s)); return sum(h[:]) } //nolint:gosec

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func unb64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err.Error()
	}

	return string(b)
}

func regex(a []any, n int) (*regexp.Regexp, error) {
	if len(a) < n {
		return nil, fmt.Errorf("wrong number of args: want %d got %d", n, len(a))
	}

	return regexp.Compile(strval(a[0]))
}

func sortedStrings(l []any) []any {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = strval(e)
	}

	sort.Strings(s)

	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}

	return out
}
