package talos

import (
	"crypto/sha256"
	stdx509 "crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/config"
)

// clusterState is what the nodes of one cluster share in this process: the role etcd and trustd
// play on a real cluster (bootstrapped once; control planes sign workers' certificates).
type clusterState struct {
	id     [32]byte
	osPool *stdx509.CertPool

	mu    sync.Mutex
	nodes []*Node
	cps   map[*Node]bool             // the configured control planes among nodes: they hold etcd
	ca    *x509.CertificateAuthority // from a configured control plane; nil until one joins
	token string
	// bootstrapped: the etcd data directory is not empty (a Bootstrap claimed it); etcd: the
	// keyspace etcd serves, nil until a Bootstrap started etcd (or when its recovery failed,
	// etcdErr saying why); both go with the last control plane.
	bootstrapped bool
	etcd         *etcdData
	etcdErr      error
	// probes are the network probe pods the bot created (netprobe.go), by name.
	probes map[string]*probePod
}

var (
	registryMu sync.Mutex
	registry   = map[[32]byte]*clusterState{}
)

// join registers a configured node with its cluster, keyed by the Talos OS CA certificate.
func join(cfg config.Provider, n *Node) (*clusterState, error) {
	osCA := cfg.Machine().Security().IssuingCA()

	pool := stdx509.NewCertPool()
	if !pool.AppendCertsFromPEM(osCA.Crt) {
		return nil, errors.New("config's Talos OS CA certificate (.machine.ca.crt) does not parse")
	}

	id := sha256.Sum256(osCA.Crt)

	registryMu.Lock()
	cl, ok := registry[id]

	if !ok {
		cl = &clusterState{id: id, osPool: pool, cps: map[*Node]bool{}}
		registry[id] = cl
	}
	registryMu.Unlock()

	cl.mu.Lock()
	defer cl.mu.Unlock()

	if cfg.Machine().Type().IsControlPlane() && cl.ca == nil {
		ca, err := x509.NewCertificateAuthorityFromCertificateAndKey(osCA)
		if err != nil {
			return nil, fmt.Errorf("load Talos OS CA of a control-plane config: %w", err)
		}

		cl.ca, cl.token = ca, cfg.Machine().Security().Token()
	}

	cl.nodes = append(cl.nodes, n)

	if cfg.Machine().Type().IsControlPlane() {
		cl.cps[n] = true
	}

	return cl, nil
}

// issuer returns the CA that signs a node's Talos API certificate, refusing a wrong machine token
// as trustd does.
func (cl *clusterState) issuer(token string) (*x509.CertificateAuthority, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	if cl.ca == nil {
		return nil, errors.New("no control plane of this cluster is configured yet: cannot issue the Talos API certificate (trustd unreachable)")
	}

	if token != cl.token {
		return nil, errors.New("machine token rejected by trustd")
	}

	return cl.ca, nil
}

func (cl *clusterState) bootstrap() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	if cl.bootstrapped {
		return false
	}

	cl.bootstrapped = true

	return true
}

// isBootstrapped is true while etcd runs: the Kubernetes API has a store to serve.
func (cl *clusterState) isBootstrapped() bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	return cl.etcd != nil
}

// startEtcd makes d the keyspace etcd serves (after a Bootstrap claimed the data directory).
func (cl *clusterState) startEtcd(d *etcdData) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	cl.etcd, cl.etcdErr = d, nil
}

// failEtcd records a recovery that failed; an empty data directory lets a later Bootstrap try
// again, one the restore wrote into does not.
func (cl *clusterState) failEtcd(err error, dataDirEmpty bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	cl.etcd, cl.etcdErr = nil, err
	if dataDirEmpty {
		cl.bootstrapped = false
	}
}

// store is the running etcd keyspace and, when there is none, why.
func (cl *clusterState) store() (*etcdData, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()

	switch {
	case cl.etcd != nil:
		return cl.etcd, nil
	case cl.etcdErr != nil:
		return nil, cl.etcdErr
	default:
		return nil, errors.New("etcd is not running: the cluster is not bootstrapped")
	}
}

// controlPlanes reads the node list under cl.mu and each node's config after releasing it: a
// node takes its own lock and then cl.mu (apidCertificate → issuer), so holding cl.mu while
// taking a node's lock would deadlock with a handshake.
func (cl *clusterState) controlPlanes() []*Node {
	cl.mu.Lock()
	nodes := slices.Clone(cl.nodes)
	cl.mu.Unlock()

	var cps []*Node

	for _, n := range nodes {
		if cfg, _, err := n.configured(); err == nil && cfg.Machine().Type().IsControlPlane() {
			cps = append(cps, n)
		}
	}

	return cps
}

// remove forgets a closed node; the cluster goes when its last node does, so a later test or
// sim run with the same CA starts afresh.
func (cl *clusterState) remove(n *Node) {
	cl.mu.Lock()
	cl.nodes = slices.DeleteFunc(cl.nodes, func(o *Node) bool { return o == n })
	delete(cl.cps, n)
	empty := len(cl.nodes) == 0

	// etcd's data lives on the control planes' EPHEMERAL partitions: with the last of them
	// gone (deleted, reset or reconfigured), so is the keyspace.
	if len(cl.cps) == 0 {
		cl.bootstrapped, cl.etcd, cl.etcdErr = false, nil, nil
	}
	cl.mu.Unlock()

	if empty {
		registryMu.Lock()
		if registry[cl.id] == cl {
			delete(registry, cl.id)
		}
		registryMu.Unlock()
	}
}
