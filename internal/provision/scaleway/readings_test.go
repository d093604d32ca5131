package scaleway

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// The driver's up and down under every reading of the Scaleway rows the emulator plays on the
// resources it creates (em-delivery, em-patch-delivering, em-stock, tag-length), with the longest
// cluster name: each handled reading ends with the cluster up, then nothing left; an unhandled one
// (tag-length=shorter) fails the up naming the tag, and the down leaves nothing either. The
// decisions these rows feed (the ETA, the offer's stock) are pure tables elsewhere; here the wire.
func TestUpAndDownUnderEveryScalewayReading(t *testing.T) {
	id := strings.Repeat("a", 35) + "-1234" // commands.MaxClusterName characters: the longest tags
	for _, rowID := range []string{assume.EMDelivery, assume.EMPatchDelivering, assume.EMStock, assume.TagLength} {
		row := assume.MustLookup(rowID)
		for _, r := range row.Readings {
			t.Run(row.ID+"="+r.Value, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				w := newWorld(t, scwsim.Options{Readings: assume.Readings{row.ID: r.Value}})
				spec := testSpec("")
				spec.ImageBucket = typicalBucket
				st, err := provision.NewState(id, spec)
				if err != nil {
					t.Fatal(err)
				}
				err = w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver())
				switch {
				case row.ID == assume.EMStock && r.Value == "empty":
					// Out of stock: refused before anything is created (the pre-flight chooses
					// another offer first; preflight's table).
					if err == nil || !strings.Contains(err.Error(), "out of stock") {
						t.Fatalf("up with the offer out of stock: %v", err)
					}
				case r.Handled && err != nil:
					t.Fatalf("up under a handled reading: %v", err)
				case !r.Handled && (err == nil || !strings.Contains(err.Error(), "tags.")):
					t.Fatalf("up under %s=%s: %v, want the refused tag named", row.ID, r.Value, err)
				}
				if _, err := w.eng.Down(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
					t.Fatalf("down: %v", err)
				}
				if left := w.owned(id); len(left) != 0 {
					t.Errorf("the down left %v", left)
				}
			})
		}
	}
}
