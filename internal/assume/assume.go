// Package assume is the assumptions register: every behaviour of Scaleway, Object Storage, GitHub,
// the Talos nodes, the Image Factory and the container registries that pocbot relies on and that
// no source settles. One row per behaviour: what the bot assumes, the readings it tolerates (and
// the ones it does not), the probe of `bot doctor --live` that settles it on a real account, and
// what that probe costs and leaves behind.
//
// The register is one table in code (Register), read by three parties: the stand-ins play each
// reading (`bot sim --reading ID=VALUE`; their contract tables point at the row ids), `bot doctor
// --live` maps what its probes find to a reading and fails on one the bot does not handle, and
// docs/assumptions.md is generated from it (`go generate ./internal/assume`; a test fails while it
// is stale). The package imports nothing but the standard library: the stand-ins, the doctor and
// the pure packages can all read it.
package assume

//go:generate go run ./gen -root ../..

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// System is who behaves.
type System string

// The systems pocbot talks to.
const (
	Scaleway     System = "Scaleway API"
	ObjectStore  System = "Object Storage"
	GitHub       System = "GitHub"
	TalosNodes   System = "Talos nodes"
	ImageFactory System = "Image Factory"
	Registries   System = "container registries"
)

// Reading is one plausible behaviour of a silent source.
type Reading struct {
	Value string // as `--reading ID=VALUE` names it
	Means string // what the system does under it
	// Handled is true when the bot works under this reading; How says how (or, when not handled,
	// what the user must do: `bot doctor --live` prints it and fails).
	Handled bool
	How     string
}

// Row is one assumption.
type Row struct {
	ID      string
	System  System
	Assumes string // what the bot relies on
	// Readings are every plausible behaviour; Default is the one the stand-ins play without
	// --reading (the one the recordings or the documentation lean to, else the stricter).
	Readings []Reading
	Default  string
	Probe    string // what `bot doctor --live` does to settle it
	// Cost is the probe's worst-case cost in nano-euros (Scaleway bills a flexible IP by the
	// hour: a probe that holds one for seconds pays that hour); Leaves says what it leaves
	// behind, and what sweeps it when a probe is killed.
	Cost    int64
	Leaves  string
	Sources []string // where the readings come from, and what is silent
}

// Reading returns the row's reading value, if it has it.
func (r Row) Reading(value string) (Reading, bool) {
	for _, x := range r.Readings {
		if x.Value == value {
			return x, true
		}
	}
	return Reading{}, false
}

// Values lists the row's reading values, in the row's order.
func (r Row) Values() []string {
	out := make([]string, len(r.Readings))
	for i, x := range r.Readings {
		out[i] = x.Value
	}
	return out
}

// Lookup finds a row by id.
func Lookup(id string) (Row, bool) {
	for _, r := range Register {
		if r.ID == id {
			return r, true
		}
	}
	return Row{}, false
}

// MustLookup is Lookup for ids the code names: an unknown one is a programming error the tests
// catch.
func MustLookup(id string) Row {
	r, ok := Lookup(id)
	if !ok {
		panic("assume: no register row " + id)
	}
	return r
}

// TotalCost is the worst case of every probe together, in nano-euros.
func TotalCost() int64 {
	var n int64
	for _, r := range Register {
		n += r.Cost
	}
	return n
}

// Readings chooses one reading per row, as `bot sim --reading` does; a row it does not name plays
// its Default.
type Readings map[string]string

// Of is the reading of row id: the chosen one, else the row's default.
func (rs Readings) Of(id string) string {
	if v, ok := rs[id]; ok {
		return v
	}
	return MustLookup(id).Default
}

// Is tells whether row id plays value.
func (rs Readings) Is(id, value string) bool { return rs.Of(id) == value }

// Parse reads `ID=VALUE` pairs (one per --reading flag, or comma-separated); an unknown id or a
// value the row does not list is an error naming what is valid.
func Parse(pairs ...string) (Readings, error) {
	out := Readings{}
	for _, p := range pairs {
		for _, kv := range strings.Split(p, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			id, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("--reading %q: want ID=VALUE, like dns-comment=dropped (`bot sim --readings` lists them)", kv)
			}
			row, found := Lookup(strings.TrimSpace(id))
			if !found {
				return nil, fmt.Errorf("--reading %q: no register row %q (rows: %s)", kv, id, strings.Join(IDs(), ", "))
			}
			if _, ok := row.Reading(strings.TrimSpace(v)); !ok {
				return nil, fmt.Errorf("--reading %q: %s plays %s", kv, row.ID, strings.Join(row.Values(), ", "))
			}
			out[row.ID] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// String is the chosen readings as Parse reads them, sorted by id.
func (rs Readings) String() string {
	ids := make([]string, 0, len(rs))
	for id := range rs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, id+"="+rs[id])
	}
	return strings.Join(parts, ",")
}

// IDs lists the rows' ids in register order.
func IDs() []string {
	out := make([]string, len(Register))
	for i, r := range Register {
		out[i] = r.ID
	}
	return out
}

// Listing is what `bot sim --readings` prints: one line per row, its values, the default marked.
func Listing() string {
	var b strings.Builder
	for _, r := range Register {
		vals := slices.Clone(r.Values())
		for i, v := range vals {
			if v == r.Default {
				vals[i] = v + " (default)"
			}
		}
		fmt.Fprintf(&b, "%-22s %s\n", r.ID, strings.Join(vals, " | "))
	}
	return b.String()
}
