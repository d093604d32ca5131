package clusterops

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

// ArtifactEtcdSnapshot is the encrypted artifact holding a paused cluster's etcd snapshot.
const ArtifactEtcdSnapshot = "etcd.snapshot"

// Paused tells whether a header's phase is one of a pause's (the cluster has, or is losing, its
// machines): an up of such a cluster is a resume.
func Paused(h statestore.Header) bool {
	switch Phase(h.Phase) {
	case lifecycle.PhasePausing, lifecycle.PhasePaused, lifecycle.PhaseResuming:
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

// actPause carries out a pause: a ready cluster's etcd snapshot into the bucket, verified
// there, then its machines deleted (cluster.BuildPause), the worker parked when in.ParkFor
// allows. The phase is pausing until the last machine is gone, then paused, with the paused cost
// (Outcome.Quote, priced with the snapshot's size) in the header. A pause that fails stays
// pausing: a rerun continues it, and an up resumes the cluster from wherever it stopped. A paused
// cluster's pause writes nothing.
func (o *Ops) actPause(ctx context.Context, in Intent, f Facts, p Plan, out *Outcome, q *queue) (*Outcome, error) {
	st := f.State
	out.State = st
	if !p.Write { // paused already: nothing to do; its status says so
		out.Phase, out.Quote = lifecycle.PhasePaused, o.pausedQuote(ctx, st)
		q.admitted(out)
		return out, nil
	}
	ctx = cluster.WithParkWhileScarce(cluster.WithParkFor(ctx, in.ParkFor), in.ParkWhileScarce)
	ds := &docSaver{store: o.Store, cluster: in.Cluster, doc: f.Doc, fault: o.saveFault}
	if err := ds.write(ctx, p.Header, nil); err != nil {
		return failed(out, err)
	}
	out.Header = ds.doc.Header
	q.admitted(out)
	g := provision.NewGraph()
	if err := o.BuildPause(g, st.Spec, in.ReleaseIPs); err != nil {
		return failed(out, err)
	}
	rep, downErr := o.engine(q.progress()).Down(ctx, g, st, noCancel{ds})
	out.Report, out.State, out.Header = rep, st, ds.doc.Header
	if downErr != nil {
		return out, fmt.Errorf("pause %q incomplete (run pause again to finish it, or up to resume): %w", in.Cluster, downErr)
	}
	out.Quote = o.pausedQuote(ctx, st)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := ds.setPhase(wctx, lifecycle.PhasePaused, func(m *Meta) {
		if !out.Quote.Daily.IsZero() {
			m.DailyCostNanos = out.Quote.Daily.Nanos
		}
		// A paused cluster expires max_paused after its pause; the lifetime it had left running
		// is given back by the resume.
		if h := &ds.doc.Header; in.MaxPaused > 0 && !h.Expires.IsZero() {
			if m.PausedTTLLeft == 0 {
				m.PausedTTLLeft = max(h.Expires.Sub(o.now()), time.Hour).Truncate(time.Second)
			}
			h.Expires = o.now().Add(in.MaxPaused)
		}
	}); err != nil {
		return out, err
	}
	out.Header, out.Phase = ds.doc.Header, lifecycle.PhasePaused
	return out, nil
}

// pausedQuote prices a paused cluster (its snapshot's size as recorded); zero when it cannot.
func (o *Ops) pausedQuote(ctx context.Context, st *provision.State) cost.Quote {
	if o.Quoter == nil {
		return cost.Quote{}
	}
	q, err := QuoteStatePaused(ctx, o.Quoter, st, 0)
	if err != nil {
		return cost.Quote{}
	}
	return q
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
