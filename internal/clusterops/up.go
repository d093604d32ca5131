package clusterops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// actUp carries out an admitted up (a create, a convergence or a resume): the header's one write
// (with the body: a new document exists before anything is created), under the admission lock
// when the budget was checked (releaseAdmission lets it go once written), then the engine, then
// the final phase.
func (o *Ops) actUp(ctx context.Context, in Intent, f Facts, p Plan, out *Outcome, q *queue, releaseAdmission func()) (*Outcome, error) {
	began := o.now() // an up's duration is recorded for the ETA
	doc, st := f.Doc, f.State
	if p.Create {
		var err error
		if st, err = provision.NewState(in.Cluster, p.Spec); err != nil {
			return failed(out, err)
		}
		doc = &statestore.Document{}
	}
	st.Spec = p.Spec
	saver := &docSaver{store: o.Store, cluster: in.Cluster, doc: doc, fault: o.saveFault}
	err := saver.write(ctx, p.Header, st)
	releaseAdmission()
	if err != nil {
		return failed(out, err)
	}
	out.Created, out.Header = p.Create, saver.doc.Header
	out.ETA = o.estimate(ctx, out) // after the admission lock: it reads the bucket and the API
	// A cancel left by a down that found nothing running is stale; one that cannot be removed
	// would stop this up at its first step.
	if err := o.Store.DeleteArtifact(ctx, in.Cluster, artifactCancel); err != nil {
		return failed(out, fmt.Errorf("clear a stale cancel request of %q: %w", in.Cluster, err))
	}
	q.admitted(out)
	if from := unfinishedRebind(saver.doc.Header, st); from != "" {
		// A claim whose run died before the spare's resources carried this cluster's names.
		if err := o.rebind(ctx, st, from, saver); err != nil {
			return failed(out, err)
		}
	}
	delivery := &deliveryClock{next: q.progress()}
	seen := &observations{next: delivery}
	out, err = o.converge(ctx, in, out, seen, st, saver, p.Resume)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	o.recordObservations(rctx, seen) // a failed up's too: a refusal is what they are for
	if err == nil {
		o.recordUp(rctx, out.ETA, o.now().Sub(began), out.Spec.BaremetalOffer, delivery)
	}
	return out, err
}

// converge runs the cluster's graph on st, saving through saver and telling progress, and
// records how it ended: the ready phase (upReady), or the failure (upFailed).
func (o *Ops) converge(ctx context.Context, in Intent, out *Outcome, progress provision.Progress, st *provision.State, saver *docSaver, resuming bool) (*Outcome, error) {
	g, engine, err := o.prepare(st, progress)
	if err != nil {
		return failed(out, err)
	}
	upErr := engine.Up(ctx, g, st, saver)
	// The engine saved every step through saver; read back what it saved.
	final, derr := decodeState(saver.doc)
	if derr != nil {
		return failed(out, derr)
	}
	out.State = final
	// Write the outcome even when ctx is done (a cancelled up still records its phase).
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if upErr != nil {
		return o.upFailed(wctx, in, out, upErr, g, engine, saver, resuming)
	}
	return o.upReady(wctx, in, out, saver, resuming)
}

// upFailed records a failed (or cancelled) up: the runner's temporary admin rule closed, the
// phase failed (resuming for a resume, which an up or resume continues).
func (o *Ops) upFailed(wctx context.Context, in Intent, out *Outcome, upErr error, g *provision.Graph, engine *provision.Engine,
	saver *docSaver, resuming bool) (*Outcome, error) {
	if f := o.closeAdminAfterFailure(wctx, g, engine, out.State, saver, in.Cluster); f != nil {
		out.State = f
	}
	failedPhase := lifecycle.PhaseFailed
	if resuming {
		failedPhase = lifecycle.PhaseResuming
	}
	if err := saver.setPhase(wctx, failedPhase, nil); err != nil {
		o.log().Error("record the failed phase", "cluster", in.Cluster, "err", err)
	}
	out.Header, out.Phase = saver.doc.Header, lifecycle.PhaseFailed
	if errors.Is(upErr, provision.ErrCancelled) {
		out.Phase = lifecycle.PhaseCancelled
	}
	return out, upErr
}

// upReady records a finished up: the resume's snapshot cleared, the kubeconfig artifact, the
// header's ready phase (and, for a resume, the lifetime it had left).
func (o *Ops) upReady(wctx context.Context, in Intent, out *Outcome, saver *docSaver, resuming bool) (*Outcome, error) {
	final := out.State
	if err := o.finishResume(wctx, saver, final); err != nil {
		return failed(out, err)
	}
	if kc, ok := final.Secrets[cluster.SecretKubeconfig]; ok {
		loc, err := o.Store.PutArtifact(wctx, in.Cluster, artifactKubeconfig, kc)
		if err != nil {
			return failed(out, fmt.Errorf("store the kubeconfig of %q: %w", in.Cluster, err))
		}
		out.KubeconfigLocation = loc
	}
	if in.Kind == spare.Kind {
		saver.editHeader(func(h *statestore.Header) { spareReady(h, in, final, o.now()) })
	}
	if err := saver.setPhase(wctx, lifecycle.PhaseReady, func(m *Meta) {
		if out.KubeconfigLocation != "" {
			m.Kubeconfig = out.KubeconfigLocation
		}
		if resuming && m.PausedTTLLeft > 0 {
			// The running lifetime left at the pause, from now: the pause stopped its clock.
			saver.doc.Header.Expires = o.now().Add(m.PausedTTLLeft)
			m.PausedTTLLeft = 0
		}
	}); err != nil {
		return failed(out, err)
	}
	out.Header, out.Phase = saver.doc.Header, lifecycle.PhaseReady
	return out, nil
}

// lockForDown takes the cluster's lock for a down. When an up holds it, it records a cancel
// request that the up honours at its next step and waits for the lock (taking the request back
// when nobody takes over); with NoCancel (the reaper) a busy lock is given up at once.
func (o *Ops) lockForDown(ctx context.Context, in Intent) (*statestore.Held, error) {
	h, err := o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, 0)
	var locked *statestore.LockedError
	if !errors.As(err, &locked) || in.NoCancel {
		return h, err
	}
	if _, perr := o.Store.PutArtifact(ctx, in.Cluster, artifactCancel, []byte(in.RequestedBy)); perr != nil {
		return nil, fmt.Errorf("ask the running %s to stop: %w", locked.Holder.Command, perr)
	}
	o.log().Info("asked the run holding the lock to stop", "cluster", in.Cluster, "holder", locked.Holder.Command, "run", locked.Holder.RunID)
	// The holder stops at its next step, and one step (an Elastic Metal delivery, the rescue
	// write) can last longer than the usual wait: having stopped it, this down must take over.
	h, err = o.acquire(ctx, statestore.ClusterLock(in.Cluster), in, max(o.lockWait(), o.cancelWait()))
	if err != nil {
		// Nobody takes over: take the request back, or the up would stop for nothing.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if derr := o.Store.DeleteArtifact(dctx, in.Cluster, artifactCancel); derr != nil {
			o.log().Error("take back the cancel request", "cluster", in.Cluster, "err", derr)
		}
		cancel()
	}
	return h, err
}

// actDown carries out a down: the destroying phase written once, the engine's teardown, then
// the artifacts, the users' kubeconfig objects and the document removed. A cluster without a
// document has what carries its exact tag swept.
func (o *Ops) actDown(ctx context.Context, in Intent, f Facts, p Plan, out *Outcome, q *queue) (*Outcome, error) {
	ctx = cluster.WithParkFor(ctx, in.ParkFor)
	st := f.State
	if st == nil {
		var err error
		if st, err = provision.NewState(in.Cluster, p.Spec); err != nil {
			return failed(out, err)
		}
	}
	var saver provision.Saver = provision.NewMemorySaver()
	var ds *docSaver
	if f.Doc != nil {
		ds = &docSaver{store: o.Store, cluster: in.Cluster, doc: f.Doc, fault: o.saveFault}
		if err := ds.write(ctx, p.Header, nil); err != nil {
			return failed(out, err)
		}
		saver = ds
		out.Header = ds.doc.Header
	}
	q.admitted(out)
	g, engine, err := o.prepare(st, q.progress())
	if err != nil {
		return failed(out, err)
	}
	// The request was for the up this down replaced: clear it before the engine's checks.
	if err := o.Store.DeleteArtifact(ctx, in.Cluster, artifactCancel); err != nil {
		return failed(out, fmt.Errorf("clear the cancel request of %q: %w", in.Cluster, err))
	}
	rep, downErr := engine.Down(ctx, g, st, noCancel{saver})
	out.Report = rep
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if downErr != nil {
		if ds != nil {
			_ = ds.setPhase(wctx, lifecycle.PhaseFailed, func(m *Meta) { m.DownFailed = o.now() })
			out.Header = ds.doc.Header
		}
		return failed(out, downErr)
	}
	if err := o.Store.DeleteArtifacts(wctx, in.Cluster); err != nil {
		return failed(out, fmt.Errorf("cluster %q destroyed, but its artifacts remain: %w", in.Cluster, err))
	}
	if err := o.Store.DeletePublic(wctx, PublicKubeconfigDir(in.Cluster)); err != nil {
		return failed(out, fmt.Errorf("cluster %q destroyed, but its users' kubeconfig objects remain: %w", in.Cluster, err))
	}
	if ds != nil {
		if err := o.Store.Delete(wctx, ds.doc); err != nil {
			return failed(out, fmt.Errorf("cluster %q destroyed, but its state document remains: %w", in.Cluster, err))
		}
	}
	out.Phase = lifecycle.PhaseDestroyed
	return out, nil
}

// graph is spec's whole graph.
func (o *Ops) graph(spec provision.Spec) (*provision.Graph, error) {
	g := provision.NewGraph()
	if err := o.Build(g, spec); err != nil {
		return nil, err
	}
	return g, nil
}
