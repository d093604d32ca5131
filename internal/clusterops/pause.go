package clusterops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

// Phases of a pause and a resume.
const (
	PhasePausing  = "pausing"  // snapshot taken or being taken; machines being deleted
	PhasePaused   = "paused"   // no machine: reserved IPs, security group, DNS, state and snapshot kept
	PhaseResuming = "resuming" // machines being created again, etcd recovered from the snapshot
)

// ArtifactEtcdSnapshot is the encrypted artifact holding a paused cluster's etcd snapshot.
const ArtifactEtcdSnapshot = "etcd.snapshot"

// ErrNotPausable is a pause of a cluster that is not ready (provisioning, failed, destroying).
var ErrNotPausable = errors.New("cluster cannot be paused now")

// Paused tells whether a header's phase is one of a pause's (the cluster has, or is losing, its
// machines): an up of such a cluster is a resume.
func Paused(h statestore.Header) bool {
	switch h.Phase {
	case PhasePausing, PhasePaused, PhaseResuming:
		return true
	}
	return false
}

// Snapshots keeps etcd snapshots as streamed encrypted artifacts of the state store
// (cluster.Snapshots).
type Snapshots struct{ Store *statestore.Store }

// Put implements cluster.Snapshots.
func (s Snapshots) Put(ctx context.Context, clusterName string, r io.Reader) (talos.SnapshotInfo, error) {
	sum, err := s.Store.PutArtifactStream(ctx, clusterName, ArtifactEtcdSnapshot, r)
	return talos.SnapshotInfo(sum), err
}

// Verify implements cluster.Snapshots.
func (s Snapshots) Verify(ctx context.Context, clusterName string, want talos.SnapshotInfo) error {
	return s.Store.VerifyArtifactStream(ctx, clusterName, ArtifactEtcdSnapshot, statestore.ArtifactSum(want))
}

// Open implements cluster.Snapshots.
func (s Snapshots) Open(ctx context.Context, clusterName string) (io.ReadCloser, error) {
	return s.Store.OpenArtifactStream(ctx, clusterName, ArtifactEtcdSnapshot)
}

// Pause takes a ready cluster's etcd snapshot into the bucket, verifies it there, then deletes
// its machines (cluster.BuildPause), parking the worker when req.ParkFor allows. The phase is
// pausing until the last machine is gone, then paused, with req.DailyCostNanos (the paused
// cost) in the header. A pause that fails stays pausing: a rerun continues it, and an up
// resumes the cluster from wherever it stopped. A paused cluster's pause does nothing.
func (o *Ops) Pause(ctx context.Context, req Request) (*Result, error) {
	if o.BuildPause == nil {
		return nil, errors.New("pause: this bot has no pause graph configured (Ops.BuildPause)")
	}
	h, err := o.acquire(ctx, statestore.ClusterLock(req.Cluster), req, o.lockWait())
	if err != nil {
		return nil, err
	}
	defer o.release(ctx, h)
	ctx = cluster.WithParkFor(h.Context(), req.ParkFor)
	doc, err := o.Store.Get(ctx, req.Cluster)
	if errors.Is(err, statestore.ErrNotFound) {
		return nil, fmt.Errorf("pause %q: %w", req.Cluster, ErrNoCluster)
	}
	if err != nil {
		return nil, err
	}
	if req.Precondition != nil {
		if perr := req.Precondition(doc.Header); perr != nil {
			return &Result{Header: doc.Header}, fmt.Errorf("pause %s: %w: %w", req.Cluster, ErrPrecondition, perr)
		}
	}
	switch doc.Header.Phase {
	case PhaseReady, PhasePausing:
	case PhasePaused:
		st, err := decodeState(doc)
		return &Result{Header: doc.Header, State: st}, err
	default:
		return &Result{Header: doc.Header}, fmt.Errorf("pause %q: %w: it is %s; a cluster is paused once ready (run up first, or down)",
			req.Cluster, ErrNotPausable, doc.Header.Phase)
	}
	st, err := decodeState(doc)
	if err != nil {
		return nil, err
	}
	ds := &docSaver{store: o.Store, cluster: req.Cluster, doc: doc, fault: o.saveFault}
	if err := ds.setPhase(ctx, PhasePausing, nil); err != nil {
		return nil, err
	}
	g := provision.NewGraph()
	if err := o.BuildPause(g, st.Spec, req.ReleaseIPs); err != nil {
		return nil, err
	}
	eopts := o.Engine
	eopts.Progress = req.Progress
	if eopts.Logger == nil {
		eopts.Logger = o.log()
	}
	rep, downErr := provision.New(eopts).Down(ctx, g, st, noCancel{ds})
	res := &Result{Report: rep, State: st, Header: ds.doc.Header}
	if downErr != nil {
		return res, fmt.Errorf("pause %q incomplete (run pause again to finish it, or up to resume): %w", req.Cluster, downErr)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := ds.setPhase(wctx, PhasePaused, func(m *Meta) {
		if req.DailyCostNanos > 0 {
			m.DailyCostNanos = req.DailyCostNanos
		}
		// A paused cluster expires max_paused after its pause; the lifetime it had left running
		// is given back by the resume.
		if h := &ds.doc.Header; req.MaxPaused > 0 && !h.Expires.IsZero() {
			if m.PausedTTLLeft == 0 {
				m.PausedTTLLeft = max(h.Expires.Sub(o.now()), time.Hour).Truncate(time.Second)
			}
			h.Expires = o.now().Add(req.MaxPaused)
		}
	}); err != nil {
		return res, err
	}
	res.Header = ds.doc.Header
	return res, nil
}

// finishResume clears the snapshot a resumed cluster recovered from: the output in its state
// (so a later bootstrap is a plain one) and the artifact.
func (o *Ops) finishResume(ctx context.Context, saver *docSaver, st *provision.State) error {
	if st.Outputs[cluster.OutEtcdSnapshot] == "" {
		return nil
	}
	delete(st.Outputs, cluster.OutEtcdSnapshot)
	if err := saver.Save(ctx, st); err != nil {
		return fmt.Errorf("record the end of the resume of %q: %w", saver.cluster, err)
	}
	if err := o.Store.DeleteArtifact(ctx, saver.cluster, ArtifactEtcdSnapshot); err != nil {
		o.log().Warn("the resumed cluster's snapshot remains in the bucket", "cluster", saver.cluster, "err", err)
	}
	return nil
}
