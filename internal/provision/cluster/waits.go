package cluster

import (
	"time"

	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// Waits is the latency profile of the whole seed cluster: the driver's transitions plus what the
// hosts take (Talos, the rescue system). Graph.CriticalPath(w.Of) on a graph Build made is the
// lower bound of an up on that profile; the same figures give the modeled real-time table.
type Waits struct {
	Scaleway     scaleway.Waits
	RescueReboot time.Duration // worker-image: the API's reboot into rescue
	RescueBoot   time.Duration // worker-image: the rescue system boots until its SSH answers
	ImageWrite   time.Duration // worker-image: the metal image streamed to the disk
	NormalReboot time.Duration // worker-image: reboot onto the written disk, Talos in maintenance
	TalosBoot    time.Duration // a node's boot to its Talos API (a control plane after poweron, the worker after its normal reboot)
	TalosReady   time.Duration // bootstrap: configured -> container runtime up and time in sync
	ApplyReboot  time.Duration // worker-config: the config applied, the node back with mTLS
	// KubeReady: bootstrap -> /readyz. It runs from the bootstrap, not from the kubeconfig
	// node's start, so it is counted on the bootstrap node: every path through bootstrap ends
	// at admin-access-close, which needs /readyz, so the bound stays a lower bound.
	KubeReady time.Duration
	// CNIReady: the kubeconfig fetched (API up, worker joined) -> the network checks pass
	// (cluster-ready: the Cilium agents, CoreDNS, host → remote pod, then the pod-network
	// probe, whose pods start only once the nodes and the agents are ready).
	CNIReady time.Duration
	// EtcdSnapshot: a pause's snapshot, before any machine goes (etcd writes it out, then it
	// streams); EtcdRestore: a resume's restore of it, between the bootstrap and /readyz.
	EtcdSnapshot, EtcdRestore time.Duration

	// Parked: the worker is adopted from the pool (no delivery, no rescue, no image write:
	// an authenticated apply and its reboot only).
	Parked bool
	// SharedImage: the image object and its snapshot exist already (every up but the first
	// of a Talos version and schematic).
	SharedImage bool
	// Resume: the up of a paused cluster (the bootstrap recovers etcd, EtcdRestore).
	Resume bool
}

// Of is the duration node waits for during an up.
func (w Waits) Of(node string) time.Duration {
	switch node {
	case scaleway.NodeWorker:
		if w.Parked {
			return 0
		}
	case scaleway.NodeSnapshot, NodeImageObject:
		if w.SharedImage {
			return 0
		}
	case NodeWorkerImage:
		if w.Parked {
			return 0
		}
		return w.RescueReboot + w.RescueBoot + w.ImageWrite + w.NormalReboot
	case NodeWorkerConfig:
		if w.Parked {
			return w.ApplyReboot // up and running its park configuration already
		}
		return w.TalosBoot + w.ApplyReboot
	case NodeBootstrap:
		if w.Resume {
			return w.TalosBoot + w.TalosReady + w.EtcdRestore + w.KubeReady
		}
		return w.TalosBoot + w.TalosReady + w.KubeReady
	case NodeClusterReady:
		return w.CNIReady
	}
	return w.Scaleway.Of(node)
}

// Pause is the lower bound of a pause: the snapshot first, then the machines' down.
func (w Waits) Pause(park bool) time.Duration { return w.EtcdSnapshot + w.Down(park) }

// Down is the lower bound of a down; parking replaces the worker's delete by its park (Park).
func (w Waits) Down(park bool) time.Duration {
	if park {
		return max(w.Scaleway.Terminate, w.Park())
	}
	return w.Scaleway.Down()
}

// Park is the lower bound of a park: the worker's disk written again from rescue as an up's
// first write does (reboot into rescue, its boot, the write and read-back, the reboot onto the
// disk), Talos's boot into maintenance mode, then the park configuration's apply and reboot.
func (w Waits) Park() time.Duration {
	return w.RescueReboot + w.RescueBoot + w.ImageWrite + w.NormalReboot + w.TalosBoot + w.ApplyReboot
}

// DefaultWaits is the latency profile the ETA falls back to (internal/eta) while a project has
// no past ups of a path: the Scaleway API's recorded latencies (snapshot import 212 s, Elastic
// Metal delivery 4 min 47 s, … — each field of the emulator's Latency names its recording), the
// rescue system's boot (the low estimate of docs/seed.md, Latencies: 3 min) and image write (45 s), Talos's boot
// (60 s), runtime and time sync (20 s), apply and reboot (60 s), bootstrap to /readyz (90 s), the
// network checks (60 s, then 5 s of the pod-network probe), a pause's etcd snapshot and a resume's restore (5 s each).
// The emulated world plays the same figures: TestDefaultWaitsAreTheWorldsProfile
// (internal/sim/world/worldtest) keeps them equal to world.Profile.
func DefaultWaits() Waits {
	return Waits{
		Scaleway: scaleway.Waits{SnapshotImport: 212 * time.Second, BMDelivery: 287 * time.Second, SGRules: time.Second,
			VolumeCreate: 5 * time.Second, Poweron: 5 * time.Second, Terminate: 16 * time.Second, BMDelete: 5 * time.Second},
		RescueReboot: 15 * time.Second, RescueBoot: 3 * time.Minute, ImageWrite: 45 * time.Second, NormalReboot: 15 * time.Second,
		TalosBoot: 60 * time.Second, TalosReady: 20 * time.Second, ApplyReboot: 60 * time.Second, KubeReady: 90 * time.Second,
		CNIReady: time.Minute + 5*time.Second, EtcdSnapshot: 5 * time.Second, EtcdRestore: 5 * time.Second,
	}
}
