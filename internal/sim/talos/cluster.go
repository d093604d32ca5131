package talos

import (
	"crypto/sha256"
	stdx509 "crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

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
	// members are the control planes' etcd (etcdsvc.go): each one's data directory and
	// service; a keyspace lives as long as a member holds it.
	members map[*Node]*etcdMember
	// applied is when the manifest controller first created the CNI's DaemonSet in a keyspace.
	applied map[*etcdData]time.Time
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
		cl = &clusterState{id: id, osPool: pool, cps: map[*Node]bool{}, members: map[*Node]*etcdMember{}, applied: map[*etcdData]time.Time{}}
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
	// etcd's data lives on the control plane's EPHEMERAL partition: it goes with the node
	// (deleted, reset or reconfigured), and a keyspace with its last member.
	delete(cl.members, n)
	empty := len(cl.nodes) == 0
	cl.mu.Unlock()

	if empty {
		registryMu.Lock()
		if registry[cl.id] == cl {
			delete(registry, cl.id)
		}
		registryMu.Unlock()
	}
}
