package talos

import (
	"sync"
	"time"
)

// Latency is how long a node's own transitions take, before a world's time factor scales them.
// None was recorded (SPEC §9 gives 1–3 min per Talos phase): every figure is an estimate, kept
// next to the Scaleway emulator's profile so that the whole cluster's lower bound is computed
// from one set of figures.
type Latency struct {
	// Boot: a cloud instance running -> its Talos API up (configured from user data, or in
	// maintenance). Estimate 60 s. The world waits it before starting the node.
	Boot time.Duration
	// ApplyReboot: ApplyConfiguration accepted -> the node back up with its new config (the
	// reply comes first, then the node reboots; a metal image already on disk skips the
	// install). Estimate 60 s.
	ApplyReboot time.Duration
	// KubeReady: Bootstrap accepted -> kube-apiserver answers /readyz (etcd, static pods).
	// Estimate 90 s.
	KubeReady time.Duration
	// ResetReboot: Reset accepted -> wiped and back up in the mode the wipe left (a physical
	// machine's reboot: the Elastic Metal normal reboot estimate, 3 min).
	ResetReboot time.Duration
}

// DefaultLatency is the estimate profile at factor 1.
func DefaultLatency() Latency {
	return Latency{Boot: time.Minute, ApplyReboot: time.Minute, KubeReady: 90 * time.Second, ResetReboot: 3 * time.Minute}
}

// Scale multiplies every figure by f.
func (l Latency) Scale(f float64) Latency {
	s := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return Latency{Boot: s(l.Boot), ApplyReboot: s(l.ApplyReboot), KubeReady: s(l.KubeReady), ResetReboot: s(l.ResetReboot)}
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

func (r *reboot) down() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(r.until)
}
