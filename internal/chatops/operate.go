package chatops

import (
	"context"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
)

// command runs a parsed, authorized command on the run's cluster: the command becomes an intent
// (data), clusterops reads, decides and acts (one read, one lock), and the outcome, by what it
// did, becomes the replies. Every refusal is clusterops' (the wake of a paused cluster inside its
// window included: the outcome's verb is then a resume).
func (r *run) command(ctx context.Context, cmd *commands.Command) error {
	in := r.intent(cmd.Verb)
	switch cmd.Verb {
	case commands.VerbUp:
		r.upIntent(&in, cmd.Up)
	case commands.VerbDown:
		in.ParkFor = r.cfg.ParkFor
	case commands.VerbPause:
		in.ParkFor, in.MaxPaused, in.ReleaseIPs = r.cfg.ParkFor, r.cfg.MaxPaused, cmd.ReleaseIPs
	case commands.VerbExtend:
		in.ExtendBy = cmd.Extend
	case commands.VerbStatus:
		in.Health = true
	case commands.VerbResume, commands.VerbCost, commands.VerbKubeconfig:
	default:
		return r.refuse(ctx, "unknown verb", commands.ErrorReply(fmt.Errorf("%w: no runner for %q", commands.ErrSyntax, cmd.Verb), "", r.pcfg))
	}
	return r.operate(ctx, clusterops.Verb(cmd.Verb), in)
}

// operate runs verb with in and answers its outcome.
func (r *run) operate(ctx context.Context, verb clusterops.Verb, in clusterops.Intent) error {
	w := r.watch(ctx, verb)
	res, err := r.backend.Ops.Run(ctx, verb, in, w)
	w.endGroup()
	return r.answer(ctx, in, res, err, w)
}

// answer turns an operation's outcome into its replies, by what it did.
func (r *run) answer(ctx context.Context, in clusterops.Intent, res *clusterops.Outcome, err error, w *watcher) error {
	if res.Refusal != nil {
		return r.refusal(ctx, res)
	}
	switch res.Verb {
	case clusterops.VerbUp, clusterops.VerbResume:
		return r.upAnswer(ctx, in, res, err, w)
	case clusterops.VerbDown:
		return r.downAnswer(ctx, res, err, w)
	case clusterops.VerbPause:
		return r.pauseAnswer(ctx, in, res, err, w)
	}
	if err != nil {
		return r.fail(ctx, err)
	}
	switch res.Verb {
	case clusterops.VerbExtend:
		return r.extendAnswer(ctx, res)
	case clusterops.VerbStatus:
		return r.statusAnswer(ctx, res)
	case clusterops.VerbCost:
		return r.costAnswer(ctx, res)
	case clusterops.VerbKubeconfig:
		return r.kubeconfigAnswer(ctx, res)
	}
	return r.fail(ctx, fmt.Errorf("no answer for %s", res.Verb))
}

// watcher is the run's clusterops.Observer: it opens the status comment of an operation that
// runs the engine once clusterops admitted it, and feeds it the engine's steps. clusterops calls
// it on the run's goroutine, holding no lock; nothing under a lock waits for its GitHub calls.
type watcher struct {
	r       *run
	ctx     context.Context // the run's: the status comment lives as long as the run, not a lock
	steps   *steps
	tr      *tracked
	started time.Time
	group   func() // the Actions group open now
	// ack: 👀 once admitted (a pull request's close, which says nothing when it has no cluster).
	ack bool
}

// watch starts the watcher of verb, in the Actions group of its decision.
func (r *run) watch(ctx context.Context, verb clusterops.Verb) *watcher {
	w := &watcher{r: r, ctx: ctx, steps: newSteps(), started: r.h.now(), group: func() {}}
	switch verb {
	case clusterops.VerbUp, clusterops.VerbResume:
		w.group = r.group("plan and budget")
	case clusterops.VerbDown, clusterops.VerbPause:
		w.group = r.group(string(verb) + " " + r.cluster)
	}
	return w
}

func (w *watcher) endGroup() {
	w.group()
	w.group = func() {}
}

// Admitted implements clusterops.Observer: the status comment of the admitted operation.
func (w *watcher) Admitted(out clusterops.Outcome) {
	r := w.r
	if w.ack {
		r.acknowledge(w.ctx)
	}
	verb := commands.Verb(out.Verb)
	switch out.Verb {
	case clusterops.VerbUp, clusterops.VerbResume:
		verb = commands.VerbUp // a resume is an up of a paused cluster, and its comment says so
		w.endGroup()
		if est := out.ETA; est != nil {
			r.eta = commands.PreflightView{ETA: est.D, ETAFrom: est.From, Path: est.Path.String()}.ETAText()
		}
		r.react(w.ctx, github.ReactionRocket)
		w.group = r.group("up " + r.cluster)
	case clusterops.VerbDown:
		if !out.Exists {
			return // nothing to show: what carries its tag is swept, and one reply says so
		}
	}
	w.tr = r.track(w.ctx, verb, &out, w.steps)
	if verb == commands.VerbUp {
		r.deployment(w.ctx, lifecycle.PhaseProvisioning, "") // a pull request's page: in progress
	}
}

// Step implements clusterops.Observer.
func (w *watcher) Step(e provision.Event) { w.steps.Event(e) }
