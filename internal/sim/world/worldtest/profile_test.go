package worldtest_test

import (
	"testing"

	"github.com/pocbot/pocbot/internal/provision/cluster"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// The ETA's fallback profile (production code, which links no stand-in) is the one the emulated
// world plays: a change to a recorded latency or a host's figure must change both.
func TestDefaultWaitsAreTheWorldsProfile(t *testing.T) {
	if got, want := cluster.DefaultWaits(), world.Profile(scwsim.DefaultLatency(), world.DefaultHosts()); got != want {
		t.Errorf("cluster.DefaultWaits() = %+v\nthe world plays          %+v", got, want)
	}
}
