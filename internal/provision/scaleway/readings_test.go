package scaleway

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// The driver's up and down under every reading of the Scaleway rows the emulator plays on the
// resources it creates (em-delivery, em-patch-delivering, em-stock, tag-length, user-data-cap),
// with the longest cluster name and a control plane config of the real one's size: each handled
// reading ends with the cluster up, then nothing left; an unhandled one (tag-length=shorter,
// user-data-cap=too-small) fails the up naming what was refused, and the down leaves nothing
// either. The up reports, as first-contact observations, the reading it met of the rows no probe
// of the doctor settles in a run (em-patch-delivering, user-data-cap). The decisions these rows
// feed (the ETA, the offer's stock) are pure tables elsewhere; here the wire.
func TestUpAndDownUnderEveryScalewayReading(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("a", 35) + "-1234" // commands.MaxClusterName characters: the longest tags
	// What an unhandled reading's refusal names.
	refused := map[string]string{assume.TagLength: "tags.", assume.UserDataCap: "register row " + assume.UserDataCap}
	for _, rowID := range []string{assume.EMDelivery, assume.EMPatchDelivering, assume.EMStock, assume.TagLength, assume.UserDataCap} {
		row := assume.MustLookup(rowID)
		for _, r := range row.Readings {
			t.Run(row.ID+"="+r.Value, func(t *testing.T) {
				t.Parallel()
				ctx := t.Context()
				o := scwsim.Options{Readings: assume.Readings{row.ID: r.Value}}
				if row.ID == assume.EMPatchDelivering {
					// The PATCH goes while the order is delivering: a delivery of 3.6 s scaled, not
					// one a loaded machine outruns.
					o.Latency.BMDelivery = 30 * time.Minute
				}
				w := newWorld(t, o)
				spec := testSpec("")
				spec.ImageBucket = typicalBucket
				st, err := provision.NewState(id, spec)
				if err != nil {
					t.Fatal(err)
				}
				for i := range spec.CPCount {
					// A control plane's config weighs about 80 kB (internal/provision/talos).
					st.Secrets[UserDataSecret(i)] = bytes.Repeat([]byte("#"), 80<<10)
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
				case !r.Handled && (err == nil || !strings.Contains(err.Error(), refused[row.ID])):
					t.Fatalf("up under %s=%s: %v, want %q named", row.ID, r.Value, err, refused[row.ID])
				}
				if row.ID == assume.EMPatchDelivering || row.ID == assume.UserDataCap {
					// Met once per worker order, once per control plane's user data, until one is refused.
					got := w.obs.of(row.ID)
					if len(got) == 0 || slices.ContainsFunc(got, func(v string) bool { return v != r.Value }) {
						t.Errorf("the up observed %s %v, the emulator plays %s", row.ID, got, r.Value)
					}
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
