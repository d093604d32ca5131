package chatops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/statestore"
)

// comment handles an issue_comment: 👀, config, parse, authorize, name, run the verb.
func (r *run) comment(ctx context.Context) error {
	r.acknowledge(ctx)
	doneParse := r.group("parse and authorize")
	if err := r.loadConfig(ctx); err != nil {
		doneParse()
		var ce *configError
		if errors.As(err, &ce) {
			return r.refuse(ctx, "invalid "+".github/poc.yml", configReply(ce.err))
		}
		return r.fail(ctx, err)
	}
	res := commands.Parse(r.ev.Body, r.pcfg)
	switch {
	case res.Ignore: // Triage already checked; kept for safety
		doneParse()
		r.out.Ignored = "comment holds no /poc command"
		return nil
	case res.Command == nil:
		doneParse()
		return r.refuse(ctx, "parse error", res.Reply)
	}
	cmd := res.Command
	r.out.Verb = cmd.Verb
	r.cluster = commands.ClusterName(r.ev.Owner, r.ev.Repo, r.ev.Number)
	r.out.Cluster = r.cluster
	perm, err := r.h.GitHub.Permission(ctx, r.ev.Sender)
	if err != nil {
		doneParse()
		return r.fail(ctx, fmt.Errorf("ask GitHub for %s's permission: %w", r.ev.Sender, err))
	}
	doneParse()
	r.perm = perm
	if !commands.Allowed(perm, commands.Required(cmd.Verb)) {
		return r.refuse(ctx, "permission "+perm, commands.RefusalReply(r.ev.Sender, cmd.Verb, perm))
	}
	r.h.log().Info("command", "verb", cmd.Verb, "cluster", r.cluster, "by", r.ev.Sender, "permission", perm)
	if cmd.Verb == commands.VerbHelp {
		return r.help(ctx, cmd)
	}
	if _, err := r.open(ctx); err != nil {
		return r.fail(ctx, err)
	}
	// up and down decide ownership and rollback in clusterops, under the cluster's lock.
	if cmd.Verb != commands.VerbUp && cmd.Verb != commands.VerbDown {
		if refused, err := r.collision(ctx); err != nil || refused {
			return err
		}
	}
	if r.wakeInWindow(cmd.Verb) {
		// A command that uses a cluster the schedule paused, inside its window, from a user who
		// may resume it: somebody works late.
		return r.resume(ctx)
	}
	switch cmd.Verb {
	case commands.VerbUp:
		return r.up(ctx, cmd.Up)
	case commands.VerbDown:
		return r.down(ctx)
	case commands.VerbCost:
		return r.cost(ctx)
	case commands.VerbStatus:
		return r.status(ctx)
	case commands.VerbExtend:
		return r.extend(ctx, cmd.Extend)
	case commands.VerbKubeconfig:
		return r.kubeconfigVerb(ctx)
	case commands.VerbPause:
		return r.pause(ctx, cmd.ReleaseIPs)
	case commands.VerbResume:
		return r.resume(ctx)
	}
	return r.refuse(ctx, "unknown verb", commands.ErrorReply(fmt.Errorf("%w: no runner for %q", commands.ErrSyntax, cmd.Verb), "", r.pcfg))
}

// collision reads the cluster's header for the verbs that act on it outside clusterops' own
// operations (status, cost, extend, kubeconfig, a pull request's close) and applies the rules
// of an existing cluster there: it is this (clusterops.Owned, the documented owner/repo
// boundary ambiguity of ClusterName) and its state is not rolled back (clusterops.RolledBack).
func (r *run) collision(ctx context.Context) (bool, error) {
	doc, err := r.backend.Ops.Store.Get(ctx, r.cluster)
	if errors.Is(err, statestore.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, r.fail(ctx, fmt.Errorf("read the state of cluster %q: %w", r.cluster, err))
	}
	h := doc.Header
	r.header = &h
	out := &clusterops.Outcome{Exists: true, Header: h}
	if out.Refusal = clusterops.Owned(h, r.intent("")); out.Refusal != nil {
		return true, r.refusal(ctx, out)
	}
	witness, err := r.witness(ctx)
	if err != nil {
		return true, r.fail(ctx, err)
	}
	if clusterops.RolledBack(h, witness) == nil {
		return false, nil
	}
	// Another run may have moved the state and its comment on between our read and now: read
	// the state again before calling it a rollback.
	if doc, err := r.backend.Ops.Store.Get(ctx, r.cluster); err == nil && doc.Header.Serial >= witness {
		h := doc.Header
		r.header = &h
		return false, nil
	}
	r.h.log().Error("rolled-back state refused", "cluster", r.cluster, "serial", r.header.Serial, "witness", witness)
	out.Refusal = clusterops.RolledBack(h, witness)
	return true, r.refusal(ctx, out)
}

// witness is the state serial recorded in the cluster's status comment (0 when there is none).
func (r *run) witness(ctx context.Context) (int64, error) {
	c, ok, err := r.h.GitHub.FindComment(ctx, r.ev.Number, commands.StickyMarker(r.cluster))
	if err != nil {
		return 0, fmt.Errorf("read the status comment of cluster %q (the witness of its state's serial): %w", r.cluster, err)
	}
	if !ok {
		return 0, nil
	}
	n, _ := commands.StickyStateSerial(c.Body)
	return n, nil
}

// fail answers an error outside a runner (config unreadable, backend down): one reply with what
// failed, 😕, and the error returned so the run shows red.
func (r *run) fail(ctx context.Context, err error) error {
	r.h.log().Error("command failed", "verb", r.out.Verb, "cluster", r.cluster, "err", commands.Redact(err.Error()))
	body := fmt.Sprintf("😕 **Failed:** the bot could not run this command.\n\n```text\n%s\n```\n", commands.Redact(err.Error()))
	if u := r.h.Env.RunURL(); u != "" {
		body += "\n[Run log](" + u + ")\n"
	}
	if _, rerr := r.reply(ctx, body); rerr != nil {
		r.h.log().Error("could not post the failure", "err", rerr)
	}
	r.react(ctx, "confused")
	return fmt.Errorf("%w: %w", ErrCommandFailed, err)
}

// lockView is the reply's view of a lock's holder.
func lockView(h statestore.LockInfo, waited time.Duration) commands.LockView {
	return commands.LockView{Command: h.Command, Actor: h.Actor, RunID: h.RunID, Since: h.Since, Waited: waited}
}

// lockWait is how long a run waits for a cluster's lock (clusterops decides it).
func (r *run) lockWait() time.Duration {
	if r.backend == nil {
		return (&clusterops.Ops{}).LockWaitBound()
	}
	return r.backend.Ops.LockWaitBound()
}

func (r *run) help(ctx context.Context, cmd *commands.Command) error {
	if _, err := r.reply(ctx, commands.HelpText(r.pcfg, cmd.Topic)); err != nil {
		return err
	}
	r.out.OK = true
	return nil
}

// lockedOrFail answers an operation error: a busy lock is a refusal, anything else a failure.
func (r *run) lockedOrFail(ctx context.Context, err error) error {
	var le *statestore.LockedError
	if errors.As(err, &le) {
		return r.refuse(ctx, "locked", commands.RenderRefused(commands.RefusedView{Kind: lifecycle.RefuseLocked, Cluster: r.cluster, Lock: lockView(le.Holder, r.lockWait())}))
	}
	if errors.Is(err, clusterops.ErrNoCluster) {
		return r.refuse(ctx, "no cluster", commands.RenderStatus(commands.StatusView{Cluster: r.cluster}))
	}
	return r.fail(ctx, err)
}
