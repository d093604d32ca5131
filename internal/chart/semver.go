package chart

import (
	"errors"
	"fmt"

	"github.com/Masterminds/semver/v3"
)

// sprig's semver and semverCompare are Masterminds/semver's NewVersion and NewConstraint/Check,
// linked here as Helm links them (Helm v4.3.2 selects semver v3.5.0; +0.1 MB to the release
// binary): its version grammar, its "dirty" wildcard constraints (">1.2" means a higher minor),
// ranges ("1.2 - 1.4") and pre-release rules are what charts are written against, and no copy
// of them could stay as exact.

// semverCompare is sprig's: the constraint and the version are strings, as its Go signature
// makes text/template require.
func semverCompare(a []any) (any, error) {
	if err := nargs(a, 2); err != nil {
		return nil, err
	}

	constraint, err1 := stringArg(a[0])
	version, err2 := stringArg(a[1])

	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}

	c, err := semver.NewConstraint(constraint)
	if err != nil {
		return nil, err
	}

	v, err := semver.NewVersion(version)
	if err != nil {
		return nil, err
	}

	return c.Check(v), nil
}

// semverFn is sprig's semver: a *semver.Version, whose methods a template calls.
func semverFn(a []any) (any, error) {
	if err := nargs(a, 1); err != nil {
		return nil, err
	}

	s, err := stringArg(a[0])
	if err != nil {
		return nil, err
	}

	v, err := semver.NewVersion(s)
	if err != nil {
		return nil, err
	}

	return version{v: v, ptr: true}, nil
}

// stringArg is text/template's conversion to a string parameter: a string, or an error.
func stringArg(v any) (string, error) {
	s, ok := v.(string)
	switch {
	case v == nil:
		return "", errors.New("invalid value; expected string")
	case !ok:
		return "", fmt.Errorf("wrong type for value; expected string; got %s", goType(v))
	}

	return s, nil
}

// version is a Masterminds semver Version as a template sees it. sprig's semver answers a
// *Version, whose every method a template may call; IncMajor, SetPrerelease and the like
// answer a Version value, which text/template cannot take the address of, so only the
// methods with a value receiver are reachable from it (ptr false).
type version struct {
	v   *semver.Version
	ptr bool
}

func (v version) String() string { return v.v.String() }

func (v version) typeName() string {
	if v.ptr {
		return "*semver.Version"
	}

	return "semver.Version"
}

func (v version) field(name string) (any, bool) { return nil, false }

func (v version) method(name string) (func([]any) (any, error), bool) {
	if m, ok := versionValueMethods[name]; ok {
		return func(args []any) (any, error) { return m(v.v, args) }, true
	}

	if m, ok := versionPointerMethods[name]; ok && v.ptr {
		return func(args []any) (any, error) { return m(v.v, args) }, true
	}

	if m, ok := versionUnsupported[name]; ok && (v.ptr || !m) {
		return func([]any) (any, error) {
			return nil, fmt.Errorf("%s.%s is not supported by pocbot's chart renderer (see internal/chart)", v.typeName(), name)
		}, true
	}

	return nil, false
}

type versionMethod func(v *semver.Version, args []any) (any, error)

// versionValueMethods are Version's methods with a value receiver, reachable from both.
var versionValueMethods = map[string]versionMethod{
	"String":     noArgs(func(v *semver.Version) any { return v.String() }),
	"Major":      noArgs(func(v *semver.Version) any { return v.Major() }),
	"Minor":      noArgs(func(v *semver.Version) any { return v.Minor() }),
	"Patch":      noArgs(func(v *semver.Version) any { return v.Patch() }),
	"Prerelease": noArgs(func(v *semver.Version) any { return v.Prerelease() }),
	"Metadata":   noArgs(func(v *semver.Version) any { return v.Metadata() }),
	"IncPatch":   noArgs(func(v *semver.Version) any { n := v.IncPatch(); return version{v: &n} }),
	"IncMinor":   noArgs(func(v *semver.Version) any { n := v.IncMinor(); return version{v: &n} }),
	"IncMajor":   noArgs(func(v *semver.Version) any { n := v.IncMajor(); return version{v: &n} }),
	"SetPrerelease": func(v *semver.Version, args []any) (any, error) {
		return setPart(args, v.SetPrerelease)
	},
	"SetMetadata": func(v *semver.Version, args []any) (any, error) {
		return setPart(args, v.SetMetadata)
	},
}

// versionPointerMethods are those with a pointer receiver: only a *Version has them.
var versionPointerMethods = map[string]versionMethod{
	"Original":         noArgs(func(v *semver.Version) any { return v.Original() }),
	"LessThan":         versus(func(v, o *semver.Version) any { return v.LessThan(o) }),
	"LessThanEqual":    versus(func(v, o *semver.Version) any { return v.LessThanEqual(o) }),
	"GreaterThan":      versus(func(v, o *semver.Version) any { return v.GreaterThan(o) }),
	"GreaterThanEqual": versus(func(v, o *semver.Version) any { return v.GreaterThanEqual(o) }),
	"Equal":            versus(func(v, o *semver.Version) any { return v.Equal(o) }),
	"Compare":          versus(func(v, o *semver.Version) any { return v.Compare(o) }),
}

// versionUnsupported are Version's other exported methods (encoders and decoders, which no
// chart has a use for): true for those with a pointer receiver.
var versionUnsupported = map[string]bool{
	"MarshalJSON": false, "MarshalText": false, "Value": false,
	"UnmarshalJSON": true, "UnmarshalText": true, "Scan": true,
}

func noArgs(f func(v *semver.Version) any) versionMethod {
	return func(v *semver.Version, args []any) (any, error) {
		if len(args) != 0 {
			return nil, fmt.Errorf("wrong number of args: want 0 got %d", len(args))
		}

		return f(v), nil
	}
}

// versus is a comparison with another *Version: a Version value or anything else is the
// wrong type for its parameter, as in text/template.
func versus(f func(v, o *semver.Version) any) versionMethod {
	return func(v *semver.Version, args []any) (any, error) {
		if len(args) != 1 {
			return nil, fmt.Errorf("wrong number of args: want 1 got %d", len(args))
		}

		if args[0] == nil {
			return nilVersus(v, f)
		}

		o, ok := args[0].(version)
		if !ok || !o.ptr {
			return nil, fmt.Errorf("wrong type for value; expected *semver.Version; got %s", goType(args[0]))
		}

		return f(v, o.v), nil
	}
}

// nilVersus is a comparison with a nil *Version: Equal answers false, the others dereference
// it, a panic text/template turns into an error.
func nilVersus(v *semver.Version, f func(v, o *semver.Version) any) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%v", r)
		}
	}()

	return f(v, nil), nil
}

func setPart(args []any, set func(string) (semver.Version, error)) (any, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("wrong number of args: want 1 got %d", len(args))
	}

	s, err := stringArg(args[0])
	if err != nil {
		return nil, err
	}

	n, err := set(s)
	if err != nil {
		return nil, err
	}

	return version{v: &n}, nil
}
