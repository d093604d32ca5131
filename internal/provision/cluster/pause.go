package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// A pause takes the cluster's etcd snapshot into the state bucket, verifies it there, and only
// then deletes the machines: the control planes (servers, their volumes) and the worker (or
// parks it). What makes the cluster the same cluster stays: the reserved IPs, the security group
// and its rules, the DNS records of the kept IPs, the SSH key, the secrets bundle and talosconfig
// in the state, the shared image. A DNS record whose address leaves the cluster goes before it
// does (the edge's always, every one with --release-ips): nothing is left pointing at an address
// the cluster no longer holds. The pause is the Down of a graph of those nodes only (BuildPause), under one
// more node whose destroy is the snapshot: a node is destroyed only once every node that needs it
// is, so the snapshot node needs every machine.
//
// A resume is an Up of the whole graph: the missing machines are created again on the kept IPs
// from the kept configs, and the bootstrap node, finding the snapshot recorded in OutEtcdSnapshot,
// recovers etcd from it instead of starting an empty one.

// NodeEtcdSnapshot is the pause graph's snapshot node.
const NodeEtcdSnapshot = "etcd-snapshot"

// OutEtcdSnapshot records the verified snapshot a resume recovers from: "<size>:<sha256 hex>".
// Set by a pause once the bucket's copy is verified, cleared once a resume is complete.
const OutEtcdSnapshot = "etcd_snapshot"

// Snapshots keeps a cluster's etcd snapshot (clusterops implements it on the state store: an
// encrypted streamed artifact).
type Snapshots interface {
	// Put stores what r yields as the cluster's snapshot, replacing an earlier one only once
	// complete, and returns its size and SHA-256.
	Put(ctx context.Context, cluster string, r io.Reader) (talos.SnapshotInfo, error)
	// Verify reads the stored snapshot back and checks it is want.
	Verify(ctx context.Context, cluster string, want talos.SnapshotInfo) error
	// Open reads the stored snapshot.
	Open(ctx context.Context, cluster string) (io.ReadCloser, error)
}

// PausedNodes are the nodes of spec's graph a pause deletes; releaseIPs adds the reserved IPs
// (`--release-ips`: the resume gets new ones, new certificates from the same CA, a new kubeconfig)
// and, with a DNS zone, the cluster's records, which would otherwise point at addresses given back
// to Scaleway (anyone can be given them). Without it the edge records go all the same, in the
// node BuildPause adds (scaleway.EdgeDNSNode): the worker's address leaves the cluster.
func PausedNodes(spec provision.Spec, releaseIPs bool) []string {
	names := []string{scaleway.NodeWorker}
	for i := range spec.CPCount {
		names = append(names, scaleway.NodePoweron(i), scaleway.NodeServer(i), scaleway.NodeVolume(i))
		if releaseIPs {
			names = append(names, scaleway.NodeIP(i))
		}
	}
	if releaseIPs && spec.DNSZone != "" {
		names = append(names, scaleway.NodeDNS)
	}
	return names
}

// BuildPause adds to g the pause of spec's cluster: the nodes PausedNodes names, as Build makes
// them (the worker parks under WithParkFor), their needs among themselves, and the snapshot node
// that needs them all. g gets no sweeper: a pause removes only what its nodes record.
func BuildPause(g *provision.Graph, spec provision.Spec, cfg Config, releaseIPs bool) error {
	if cfg.Snapshots == nil {
		return errors.New("cluster: a pause needs Config.Snapshots (where the etcd snapshot is kept)")
	}
	full := provision.NewGraph()
	if err := Build(full, spec, cfg); err != nil {
		return err
	}
	keep := PausedNodes(spec, releaseIPs)
	for _, name := range keep {
		n, ok := full.Node(name)
		if !ok {
			return fmt.Errorf("cluster: the pause needs node %q, which the cluster's graph lacks", name)
		}
		n.Needs = slices.DeleteFunc(n.Needs, func(need string) bool { return !slices.Contains(keep, need) })
		n.Preflight = nil // checks for creating, not deleting
		if name == scaleway.NodeWorker {
			// The worker goes (deleted, or parked under another configuration): what its
			// triggers say was written and applied no longer runs on it, and the resume must
			// write or apply it again — or adopt it — rather than wait for a config it lost.
			destroy := n.Destroy
			n.Destroy = func(ctx context.Context, r *provision.Run) error {
				if destroy != nil {
					if err := destroy(ctx, r); err != nil {
						return err
					}
				}
				for _, t := range []string{NodeWorkerConfig, NodeWorkerImage} {
					if err := r.SetTrigger(ctx, t, ""); err != nil {
						return err
					}
				}
				if outputOf(r, OutWorkerAdopted) != "" {
					return r.SetOutput(ctx, OutWorkerAdopted, "")
				}
				return nil
			}
		}
		if err := g.Add(n); err != nil {
			return err
		}
	}
	if spec.DNSZone != "" && !releaseIPs {
		// The edge records name the worker's address, which the pause gives up; the control
		// planes' stay on the kept IPs. The resume's dns-records node writes the edge again.
		if err := g.Add(cfg.Driver.EdgeDNSNode()); err != nil {
			return err
		}
		keep = append(keep, scaleway.NodeDNSEdge)
	}
	if cfg.TalosPort == 0 {
		cfg.TalosPort = netpolicy.PortApid
	}
	b := &builder{cfg: cfg, spec: spec}
	if err := g.Add(provision.Node{
		Name: NodeEtcdSnapshot, Kind: "talos.etcd_snapshot", Needs: keep, Timeout: 15 * time.Minute,
		Apply:   func(context.Context, *provision.Run) error { return errors.New("the pause graph is only destroyed") },
		Destroy: b.snapshotEtcd,
	}); err != nil {
		return err
	}
	return g.Validate()
}

// EncodeSnapshot and ParseSnapshot are OutEtcdSnapshot's format.
func EncodeSnapshot(info talos.SnapshotInfo) string {
	return strconv.FormatInt(info.Size, 10) + ":" + hex.EncodeToString(info.SHA256[:])
}

func ParseSnapshot(s string) (talos.SnapshotInfo, error) {
	size, sum, ok := strings.Cut(s, ":")
	n, err := strconv.ParseInt(size, 10, 64)
	b, herr := hex.DecodeString(sum)
	if !ok || err != nil || herr != nil || len(b) != sha256.Size || n < 0 {
		return talos.SnapshotInfo{}, fmt.Errorf("recorded etcd snapshot %q is not <size>:<sha256>", s)
	}
	var info talos.SnapshotInfo
	info.Size = n
	copy(info.SHA256[:], b)
	return info, nil
}

// snapshotEtcd takes the snapshot from the first control plane into the bucket, reads it back,
// and records it. On a rerun the records cannot say which machines the crashed run deleted (a
// deletion that happened but whose record was not saved): with a verified snapshot recorded, a
// fresh one is tried for a short while only (the cluster may have changed since), and the
// recorded one is kept when the control plane does not answer; without one, a control plane
// known gone means there is nothing to resume from.
func (b *builder) snapshotEtcd(ctx context.Context, r *provision.Run) error {
	ctx = talos.WithRetryInterval(ctx, r.PollInterval())
	recorded, _ := r.Output(OutEtcdSnapshot)
	allThere := true
	for i := range r.Spec().CPCount {
		if _, ok := r.Resource(scaleway.NodeServer(i)); !ok {
			allThere = false
		}
	}
	if !allThere && recorded == "" {
		return errors.New("a control plane is gone and no etcd snapshot was recorded: nothing to resume from; run down, or up to recreate the cluster empty")
	}
	var fresh error
	if allThere {
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if recorded != "" {
			sctx, cancel = context.WithTimeout(ctx, max(20*r.PollInterval(), 10*time.Second))
		}
		fresh = b.withRunnerAdmitted(sctx, r, b.takeSnapshot)
		cancel()
		if fresh == nil || recorded == "" {
			return fresh
		}
	}
	info, err := ParseSnapshot(recorded)
	if err != nil {
		return err
	}
	// Still in the bucket, still whole: the machines go only if it is.
	if err := b.cfg.Snapshots.Verify(ctx, r.ClusterID(), info); err != nil {
		return fmt.Errorf("the recorded etcd snapshot no longer verifies (%w), and no fresh one could be taken: %v", err, fresh)
	}
	r.Note(NodeEtcdSnapshot, "kept the snapshot verified before the first deletion: "+info.String())
	return nil
}

// withRunnerAdmitted runs f with the runner admitted to the control planes by the security group
// when the admin CIDRs miss it, as an up's admin-access-open … admin-access-close do: the only
// step of a pause that talks to a node is the snapshot, so the rule lives for that step only,
// and goes even when f fails (a crash in between leaves it in the state for the reaper's
// closeRunners and the next run).
func (b *builder) withRunnerAdmitted(ctx context.Context, r *provision.Run, f func(context.Context, *provision.Run) error) error {
	if err := b.adminOpen(ctx, r); err != nil {
		return err
	}
	if v, _ := r.Output(scaleway.OutAdminTemporary); v != "" {
		if err := b.cfg.Driver.RefreshRules(ctx, r); err != nil {
			return fmt.Errorf("admit the runner %s to the control planes for the snapshot: %w", v, err)
		}
	}
	ferr := f(ctx, r)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := b.adminClose(cctx, r); err != nil {
		return errors.Join(ferr, fmt.Errorf("remove the runner's temporary rule after the snapshot: %w", err))
	}
	return ferr
}

// takeSnapshot streams the first control plane's snapshot into the bucket, verifies it there and
// records it.
func (b *builder) takeSnapshot(ctx context.Context, r *provision.Run) error {
	ip, tc, err := b.firstCP(r)
	if err != nil {
		return err
	}
	var stored talos.SnapshotInfo
	info, err := talos.SnapshotEtcd(ctx, net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort)), tc, func(ctx context.Context, rd io.Reader) error {
		var err error
		stored, err = b.cfg.Snapshots.Put(ctx, r.ClusterID(), rd)
		return err
	})
	if err != nil {
		return err
	}
	if stored != info {
		return fmt.Errorf("%w: the node sent %s, the bucket stored %s", talos.ErrSnapshotInvalid, info, stored)
	}
	if err := b.cfg.Snapshots.Verify(ctx, r.ClusterID(), info); err != nil {
		return fmt.Errorf("etcd snapshot in the bucket does not read back: %w", err)
	}
	r.Note(NodeEtcdSnapshot, "etcd snapshot verified in the bucket: "+info.String())
	return r.SetOutput(ctx, OutEtcdSnapshot, EncodeSnapshot(info))
}

// recoverEtcd is the bootstrap of a resumed cluster: etcd from the recorded snapshot.
func (b *builder) recoverEtcd(ctx context.Context, r *provision.Run, recorded string) error {
	if b.cfg.Snapshots == nil {
		return errors.New("the cluster is paused (an etcd snapshot is recorded) but this bot has no snapshot store configured")
	}
	info, err := ParseSnapshot(recorded)
	if err != nil {
		return err
	}
	ips, err := cpIPs(r)
	if err != nil {
		return err
	}
	tc, ok := r.Secret(SecretTalosconfig)
	if !ok {
		return errors.New("no talosconfig in state")
	}
	addrs := make([]string, len(ips))
	for i, ip := range ips {
		addrs[i] = net.JoinHostPort(ip, strconv.Itoa(b.cfg.TalosPort))
	}
	r.Note(NodeBootstrap, "recovering etcd from the paused cluster's snapshot: "+info.String())
	// Every control plane's etcd is read first: the recover runs on the first one only when
	// etcd runs on none (talos.DecideRecover).
	return talos.RecoverEtcd(ctx, addrs, tc, info, func(ctx context.Context) (io.ReadCloser, error) {
		return b.cfg.Snapshots.Open(ctx, r.ClusterID())
	})
}
