package scaleway

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/provision"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// Every tag the bot gives a resource fits Scaleway's tag length (provision.MaxTagLen), for the
// longest cluster name and a typical bucket: the emulator refuses a longer tag, as the stricter
// reading of the documentation says. The image snapshot's tag was "pocbot-image=<bucket>/<key>",
// ≈ 129 characters here, and the up failed at the snapshot import.
func TestEveryTagFitsTheLimit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t, scwsim.Options{})
	spec := testSpec("")
	spec.ImageBucket = typicalBucket
	id := strings.Repeat("a", 35) + "-1234" // commands.MaxClusterName characters
	st, err := provision.NewState(id, spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.eng.Up(ctx, w.graph(t, spec), st, provision.NewMemorySaver()); err != nil {
		t.Fatalf("up with a %d-character cluster name and bucket %s: %v", len(id), typicalBucket, err)
	}
	n := 0
	for _, r := range w.emu.Inventory() {
		for _, tag := range r.Tags {
			n++
			if len(tag) > provision.MaxTagLen {
				t.Errorf("%s %s carries a %d-character tag %q (limit %d)", r.Kind, r.ID, len(tag), tag, provision.MaxTagLen)
			}
		}
	}
	if n == 0 {
		t.Fatal("no tag seen: the inventory is empty")
	}
	if scwsim.MaxTagLen != provision.MaxTagLen {
		t.Errorf("the emulator enforces %d characters, the bot keeps to %d", scwsim.MaxTagLen, provision.MaxTagLen)
	}
	if old := imageTagPrefix + typicalBucket + "/" + spec.ImageKey; len(old) <= provision.MaxTagLen {
		t.Errorf("the former image tag %q is only %d characters: the test no longer shows the limit", old, len(old))
	}
}
