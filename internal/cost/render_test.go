package cost_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/cost"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s (run with -update to create): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestWriteText(t *testing.T) {
	created := time.Date(2026, 10, 18, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		items []cost.Item
		opts  cost.QuoteOptions
		at    cost.Times
	}{
		{"defaults", cost.DefaultCluster().Items(), cost.QuoteOptions{Now: quoteTime},
			cost.Times{Created: created, Now: created.Add(5*time.Hour + time.Minute), Expires: created.Add(8 * time.Hour)}},
		{"unknown and alternative", append(cost.DefaultCluster().Items(), cost.Item{Name: "extra", Kind: cost.KindInstance, SKU: "PLAY9-HUGE", Zone: scw.ZoneFrPar1}),
			cost.QuoteOptions{Now: quoteTime, AllowUnknown: true, Lifetime: 30 * 24 * time.Hour}, cost.Times{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := cost.NewQuoter(cost.TableSource{}).Quote(ctxT(t), tc.items, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := q.WriteText(&b, tc.at); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(b.String()), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Total per day: € ") {
				t.Errorf("last line %q", last)
			}
			golden(t, strings.ReplaceAll(tc.name, " ", "_")+".txt", b.Bytes())
		})
	}
}
