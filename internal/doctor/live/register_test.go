package live

import (
	"slices"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"
)

// Every register row has its probe, in the register's order, and only the register's rows do.
func TestEveryRowHasAProbe(t *testing.T) {
	var rows []string
	for _, p := range register() {
		rows = append(rows, p.row)
	}
	if !slices.Equal(rows, assume.IDs()) {
		t.Fatalf("probes %v, register %v", rows, assume.IDs())
	}
}
