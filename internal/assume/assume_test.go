package assume_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"
)

// The generated register is committed; it must be what the table makes today.
func TestGeneratedDocIsFresh(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", assume.DocPath))
	if err != nil {
		t.Fatalf("%s: %v (run `make generate`)", assume.DocPath, err)
	}
	if !bytes.Equal(got, assume.Markdown()) {
		t.Errorf("%s is stale: run `make generate` and commit it", assume.DocPath)
	}
}

// Every row is whole: an id used once, a default among its readings, every reading saying what
// the bot does, a probe, what it leaves, a source; and the probes together stay within the
// issue's bound of five cents.
func TestRegisterIsWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range assume.Register {
		if r.ID == "" || seen[r.ID] {
			t.Errorf("row id %q empty or repeated", r.ID)
		}
		seen[r.ID] = true
		if _, ok := r.Reading(r.Default); !ok {
			t.Errorf("%s: default %q is not one of its readings %v", r.ID, r.Default, r.Values())
		}
		if len(r.Readings) < 2 {
			t.Errorf("%s: a silent source has at least two readings, got %v", r.ID, r.Values())
		}
		for _, x := range r.Readings {
			if x.Means == "" || x.How == "" {
				t.Errorf("%s=%s: says neither what the system does nor what the bot does", r.ID, x.Value)
			}
		}
		if r.Probe == "" || r.Leaves == "" || len(r.Sources) == 0 || r.Assumes == "" {
			t.Errorf("%s: probe, leaves, sources and assumption are required", r.ID)
		}
	}
	if total := assume.TotalCost(); total > 50_000_000 {
		t.Errorf("the probes cost up to %d nano-euros together, more than € 0.05", total)
	}
}

func TestParse(t *testing.T) {
	rs, err := assume.Parse("dns-comment=echoed", "quota-read=refused,em-stock=low")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{assume.DNSComment: "echoed", assume.QuotaRead: "refused", assume.EMStock: "low", assume.TagLength: "70"} {
		if got := rs.Of(id); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if got := rs.String(); got != "dns-comment=echoed,em-stock=low,quota-read=refused" {
		t.Errorf("String() = %q", got)
	}
	for _, bad := range []string{"dns-comment", "nope=1", "dns-comment=maybe"} {
		if _, err := assume.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestListingNamesEveryRowAndDefault(t *testing.T) {
	l := assume.Listing()
	for _, r := range assume.Register {
		if !strings.Contains(l, r.ID) || !strings.Contains(l, r.Default+" (default)") {
			t.Errorf("listing misses %s or its default:\n%s", r.ID, l)
		}
	}
	if !slices.Equal(assume.IDs()[:1], []string{assume.QuotaRead}) {
		t.Errorf("IDs() does not follow the register's order: %v", assume.IDs())
	}
}
