package scaleway

import (
	"strings"
	"time"
)

// Waits are the durations of the asynchronous transitions the driver's nodes wait for (a
// latency profile: the first profile's (docs/seed.md, Latencies), or a recording's). They are the one definition of "what
// each node waits for" behind every lower bound: Graph.CriticalPath(w.Of) is the least time a
// fully parallel up can take on that profile.
type Waits struct {
	SnapshotImport time.Duration // image-snapshot: import from Object Storage
	BMDelivery     time.Duration // worker: Elastic Metal delivery
	SGRules        time.Duration // security-group, security-group-rules: syncing
	VolumeCreate   time.Duration // volume-i: from the snapshot
	Poweron        time.Duration // poweron-i: starting -> running
	Terminate      time.Duration // down: an Instance terminated (its volumes available once it is gone)
	BMDelete       time.Duration // down: the Elastic Metal server deleted
}

// Of is the duration node waits for during an up.
func (w Waits) Of(node string) time.Duration {
	switch {
	case node == NodeSnapshot:
		return w.SnapshotImport
	case node == NodeWorker:
		return w.BMDelivery
	case node == NodeSecGroup || node == NodeSecRules:
		return w.SGRules
	case strings.HasPrefix(node, "volume-"):
		return w.VolumeCreate
	case strings.HasPrefix(node, "poweron-"):
		return w.Poweron
	}
	return 0
}

// Down is the lower bound of a down: the Instances' terminations and the worker's delete run
// side by side (a terminated server's volumes are available as soon as it is gone, their
// deletes answer at once), and nothing else of the driver waits.
func (w Waits) Down() time.Duration { return max(w.Terminate, w.BMDelete) }
