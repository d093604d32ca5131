package chart

import (
	"fmt"
	"strconv"
	"strings"
)

// semverCompare is sprig's for the constraints charts write about Kubernetes versions:
// comparisons (=, !=, >, >=, <, <=, ~, ^) joined by commas or spaces (and) and "||" (or), on
// versions major[.minor[.patch]][-prerelease]. A trailing "-0" on a constraint's version lets
// pre-releases match, as in Masterminds/semver; otherwise a pre-release version never matches.
func semverCompare(constraint, version string) (bool, error) {
	v, err := parseSemver(version)
	if err != nil {
		return false, err
	}

	for _, alt := range strings.Split(constraint, "||") {
		ok, err := semverAll(strings.TrimSpace(alt), v)
		if err != nil {
			return false, err
		}

		if ok {
			return true, nil
		}
	}

	return false, nil
}

type semver struct {
	n   [3]int
	pre string
}

func parseSemver(s string) (semver, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")

	core, pre, _ := strings.Cut(s, "-")
	core, _, _ = strings.Cut(core, "+")

	var v semver

	v.pre = pre

	parts := strings.Split(core, ".")
	if len(parts) > 3 || parts[0] == "" {
		return v, fmt.Errorf("invalid semantic version %q", s)
	}

	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			if p == "x" || p == "X" || p == "*" {
				continue
			}

			return v, fmt.Errorf("invalid semantic version %q", s)
		}

		v.n[i] = n
	}

	return v, nil
}

func (a semver) cmp(b semver) int {
	for i := range a.n {
		if a.n[i] != b.n[i] {
			if a.n[i] < b.n[i] {
				return -1
			}

			return 1
		}
	}

	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	case a.pre < b.pre:
		return -1
	default:
		return 1
	}
}

func semverAll(c string, v semver) (bool, error) {
	for _, term := range strings.FieldsFunc(c, func(r rune) bool { return r == ',' || r == ' ' }) {
		ok, err := semverTerm(term, v)
		if err != nil || !ok {
			return false, err
		}
	}

	return true, nil
}

func semverTerm(term string, v semver) (bool, error) {
	op := strings.TrimRight(term[:len(term)-len(strings.TrimLeft(term, "=!<>~^"))], " ")

	c, err := parseSemver(term[len(op):])
	if err != nil {
		return false, err
	}

	if v.pre != "" && c.pre == "" {
		return false, nil // a pre-release matches only a constraint that names one (e.g. "-0")
	}

	cmp := v.cmp(c)
	if c.pre == "0" && v.pre == "" {
		cmp = semver{n: v.n}.cmp(semver{n: c.n})
	}

	switch op {
	case "", "=":
		return cmp == 0, nil
	case "!=":
		return cmp != 0, nil
	case ">":
		return cmp > 0, nil
	case ">=", "=>":
		return cmp >= 0, nil
	case "<":
		return cmp < 0, nil
	case "<=", "=<":
		return cmp <= 0, nil
	case "~":
		return cmp >= 0 && v.n[0] == c.n[0] && v.n[1] == c.n[1], nil
	case "^":
		return cmp >= 0 && v.n[0] == c.n[0], nil
	default:
		return false, fmt.Errorf("semver constraint %q: unknown operator %q", term, op)
	}
}
