package talos

import (
	"errors"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/constants"
)

// The etcd service of each control plane, as Talos v1.13.9 runs it (contract rows in doc.go,
// "Contract: etcd and the Kubernetes objects"). etcd.go is the keyspace; etcdapi.go the API.
//
// A control plane that has never run etcd starts the service at boot: Waiting (container
// runtime, time sync, /var/lib and the etcd data volume mounted), then Preparing ("Running pre
// state": the pre-step looks for a running etcd cluster to join, for EtcdJoinTimeout), then
// Failed with an empty data directory when it found none; the boot sequence gives up at
// BootTimeout and the node reboots, which starts the service again. Bootstrap (recover or not)
// stops whatever runs and starts etcd in bootstrap mode on that node alone, so a Bootstrap on a
// node while another control plane runs etcd starts a second etcd cluster.

// etcdMember is one control plane's etcd: its data directory and its service's state.
type etcdMember struct {
	data    *etcdData // the keyspace it serves while it runs; the members of one etcd cluster share it
	dirty   bool      // the data directory is not empty
	failErr error     // the service failed with this (a restore), until the node is reset or replaced
	since   time.Time // running since
}

// etcdTimeline is what a node's etcd service timeline depends on, read under the node's lock.
type etcdTimeline struct {
	now, origin       time.Time     // now, and when the node was configured (its services started)
	ready             time.Duration // runtime up, time synced, /var/lib mounted: Waiting ends
	join              time.Duration // Preparing with a running cluster → joined (Latency.EtcdJoin)
	joinTimeout, boot time.Duration // constants.EtcdJoinTimeout, constants.BootTimeout
}

func (n *Node) etcdTimeline() etcdTimeline {
	n.mu.Lock()
	defer n.mu.Unlock()

	tl := etcdTimeline{now: n.opts.now(), origin: n.configuredAt, join: n.opts.Latency.EtcdJoin,
		ready: max(n.opts.CRIDelay+n.opts.TimeSyncDelay, n.opts.VarLibDelay), joinTimeout: n.opts.EtcdJoinTimeout, boot: n.opts.BootTimeout}
	if tl.joinTimeout <= 0 {
		tl.joinTimeout = constants.EtcdJoinTimeout
	}

	if tl.boot <= 0 {
		tl.boot = constants.BootTimeout
	}

	return tl
}

// varLibMounted: EtcdRecover's stat of /var/lib succeeds (VarLibDelay after the node was configured).
func (n *Node) varLibMounted() bool { return n.sinceConfigured() >= n.opts.VarLibDelay }

// etcdView is a control plane's etcd service as ServiceList shows it.
type etcdView struct {
	state, msg string
	data       *etcdData // the keyspace, when Running
	failed     error     // why, when Failed
}

func (cl *clusterState) member(n *Node) *etcdMember {
	m := cl.members[n]
	if m == nil {
		m = &etcdMember{}
		cl.members[n] = m
	}

	return m
}

// running is the keyspace of the first-started running member other than n, and since when.
func (cl *clusterState) running(n *Node) (*etcdData, time.Time) {
	var (
		d     *etcdData
		since time.Time
	)

	for o, m := range cl.members {
		if o != n && m.data != nil && (d == nil || m.since.Before(since)) {
			d, since = m.data, m.since
		}
	}

	return d, since
}

// etcdOf is n's etcd service now. A member that never ran joins a running cluster lazily: at
// the first moment it was Preparing while another member ran, plus the join's latency, if that
// came before its join timeout (the pre-step's buildInitialCluster, retried every 3 s).
func (cl *clusterState) etcdOf(n *Node, tl etcdTimeline) etcdView {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	m := cl.member(n)

	switch {
	case m.data != nil:
		return etcdView{state: "Running", msg: "Health check successful", data: m.data}
	case m.failErr != nil:
		return etcdView{state: "Failed", msg: m.failErr.Error(), failed: m.failErr}
	}

	// The boot's service, started again by the reboot that follows each failed boot.
	t := max(tl.now.Sub(tl.origin), 0)
	cycle := t / tl.boot
	start := tl.origin.Add(cycle * tl.boot)

	if t -= cycle * tl.boot; t < tl.ready {
		return etcdView{state: "Waiting", msg: `Waiting for service "cri" to be "up", time sync, volume "/var/lib" to be mounted`}
	}

	prepared, deadline := start.Add(tl.ready), start.Add(tl.ready+tl.joinTimeout)

	if d, since := cl.running(n); d != nil && !m.dirty {
		if at := maxTime(prepared, since).Add(tl.join); at.Before(deadline) && !tl.now.Before(at) {
			m.data, m.dirty, m.since = d, true, at

			return etcdView{state: "Running", msg: "Health check successful", data: d}
		}
	}

	if !tl.now.Before(deadline) {
		err := errors.New("Failed to run pre stage: failed to build initial etcd cluster: failed to build cluster arguments: time limit exceeded")

		return etcdView{state: "Failed", msg: err.Error(), failed: err}
	}

	return etcdView{state: "Preparing", msg: "Running pre state"}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}

	return b
}

// claim takes n's data directory for a Bootstrap: false when it is not empty (AlreadyExists).
func (cl *clusterState) claim(n *Node) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	m := cl.member(n)
	if m.dirty {
		return false
	}

	m.dirty = true

	return true
}

// startEtcd runs d as n's etcd in bootstrap mode (after claim). It reports whether another
// member already runs another keyspace: a second etcd cluster.
func (cl *clusterState) startEtcd(n *Node, d *etcdData, now time.Time) (split bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	other, _ := cl.running(n)
	m := cl.member(n)
	m.data, m.dirty, m.failErr, m.since = d, true, nil, now

	return other != nil && other != d
}

// failEtcd records a recovery that failed on n; an empty data directory lets a later Bootstrap
// try again, one the restore wrote into does not.
func (cl *clusterState) failEtcd(n *Node, err error, dataDirEmpty bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	m := cl.member(n)
	m.data, m.failErr, m.dirty = nil, err, !dataDirEmpty
}

// isBootstrapped is true while some member runs etcd: the Kubernetes API has a store to serve.
func (cl *clusterState) isBootstrapped() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	d, _ := cl.running(nil)

	return d != nil
}

// localStore is n's own etcd member's keyspace (etcd's local client, as EtcdSnapshot uses it).
func (n *Node) localStore(cl *clusterState) (*etcdData, error) {
	v := cl.etcdOf(n, n.etcdTimeline())

	switch {
	case v.data != nil:
		return v.data, nil
	case v.failed != nil:
		return nil, v.failed
	default:
		return nil, fmt.Errorf("etcd is not running on this node (%s): the cluster is not bootstrapped, or this member has not joined it", v.state)
	}
}

// apiStore is the keyspace n's kube-apiserver serves: its own member's, else (a simplification,
// see doc.go) the cluster's first-started running one.
func (n *Node) apiStore(cl *clusterState) (*etcdData, error) {
	d, err := n.localStore(cl)
	if err == nil {
		return d, nil
	}

	cl.mu.Lock()
	d, _ = cl.running(n)
	cl.mu.Unlock()

	if d != nil {
		return d, nil
	}

	return nil, err
}

// EtcdClusters counts the distinct etcd clusters the control planes of n's cluster run now:
// more than one is a split the bot must never cause (a Bootstrap while etcd ran elsewhere).
func (n *Node) EtcdClusters() int {
	_, cl, err := n.configured()
	if err != nil {
		return 0
	}

	seen := map[*etcdData]bool{}

	for _, cp := range cl.controlPlanes() {
		if v := cl.etcdOf(cp, cp.etcdTimeline()); v.data != nil {
			seen[v.data] = true
		}
	}

	return len(seen)
}
