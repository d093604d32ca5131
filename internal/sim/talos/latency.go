package talos

import (
	"sync"
	"time"
)

// Latency is how long a node's transitions after its boot take (the boot itself, the container
// runtime and the time sync are NodeOptions' BootDelay, CRIDelay and TimeSyncDelay), before a
// world's time factor scales them. None was recorded (docs/seed.md, Latencies: 1–3 min per Talos phase):
// every figure is an estimate, part of the whole cluster's profile (cluster.Waits).
type Latency struct {
	// ApplyReboot: ApplyConfiguration accepted -> the node back up with its new config (the
	// reply comes first, then the node reboots; a metal image already on disk skips the
	// install). Estimate 60 s.
	ApplyReboot time.Duration
	// KubeReady: Bootstrap accepted -> kube-apiserver answers /readyz (etcd, static pods).
	// Estimate 90 s.
	KubeReady time.Duration
	// ResetWipe: Reset accepted -> its sequence done (pods and etcd stopped, partitions
	// unmounted and wiped), the reboot starts. The node's API answers as configured meanwhile:
	// apid is not among the services the sequence stops (talos v1.14.0-rc.1
	// internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go Reset, and
	// v1alpha1_sequencer_tasks.go StopServicesEphemeral: cri and trustd only). Estimate 15 s.
	ResetWipe time.Duration
	// ResetReboot: the reset's reboot -> back up in the mode the wipe left: a physical
	// machine's reboot and Talos's boot (the world sets the Elastic Metal reboot plus its Talos
	// boot; 3 min here, the low estimate of docs/seed.md, Latencies, when used alone).
	ResetReboot time.Duration
	// CNIReady: a node's kubelet registered (a control plane's API up, the worker trusted) ->
	// its Cilium agent ready and its pods' network up (the install Job, image pulls, the agent's
	// start). Source silent: estimate 60 s.
	CNIReady time.Duration
	// EtcdSnapshot: EtcdSnapshot called -> its stream starts (etcd's maintenance Snapshot writes
	// the database to a temporary file before apid streams it: a POC's tens of MiB on a
	// PLAY2-NANO's block volume). Source silent: estimate 5 s.
	EtcdSnapshot time.Duration
	// EtcdRestore: Bootstrap with recover_etcd -> the restore done, before etcd starts (the
	// etcd service's pre-step restores the uploaded snapshot into the data directory; the
	// kube-apiserver's readiness, KubeReady, comes after it). Source silent: estimate 5 s.
	EtcdRestore time.Duration
	// EtcdJoin: a control plane's etcd in Preparing while another control plane runs etcd ->
	// it runs as a member of that cluster (its pre-step adds it as a learner, retrying every
	// 3 s: services/etcd.go buildInitialCluster @v1.13.9, then etcd starts). Source silent on
	// the whole: estimate 10 s.
	EtcdJoin time.Duration
	// NetProbe: a network probe pod created on a Ready node -> its connections tried and its
	// phase final (the agent image is on the node already: no pull). Source silent: estimate 5 s.
	NetProbe time.Duration
}

// DefaultLatency is the estimate profile at factor 1.
func DefaultLatency() Latency {
	return Latency{ApplyReboot: time.Minute, KubeReady: 90 * time.Second, ResetWipe: 15 * time.Second, ResetReboot: 3 * time.Minute, CNIReady: time.Minute, NetProbe: 5 * time.Second,
		EtcdSnapshot: 5 * time.Second, EtcdRestore: 5 * time.Second, EtcdJoin: 10 * time.Second}
}

// Scale multiplies every figure by f.
func (l Latency) Scale(f float64) Latency {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Latency{ApplyReboot: s(l.ApplyReboot), KubeReady: s(l.KubeReady), ResetWipe: s(l.ResetWipe), ResetReboot: s(l.ResetReboot), CNIReady: s(l.CNIReady), NetProbe: s(l.NetProbe),
		EtcdSnapshot: s(l.EtcdSnapshot), EtcdRestore: s(l.EtcdRestore), EtcdJoin: s(l.EtcdJoin)}
}

// reboot tracks a node that is down for a while: its TLS handshakes fail until then, as a
// rebooting machine's port answers nothing.
type reboot struct {
	mu    sync.Mutex
	until time.Time
}

func (r *reboot) start(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.until = time.Now().Add(d)
}

// left is how long the reboot still lasts (0: up).
func (r *reboot) left() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(time.Until(r.until), 0)
}

func (r *reboot) down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(r.until)
}
