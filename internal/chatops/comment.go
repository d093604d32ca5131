package chatops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
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
	if err := r.findStatus(ctx); err != nil {
		return r.fail(ctx, err)
	}
	return r.command(ctx, cmd)
}

// findStatus reads the cluster's status comment before any operation: its id, which the
// header's one write records, and the state serial it recorded, the witness against a
// rolled-back state (clusterops decides on both: they are the intent's data).
func (r *run) findStatus(ctx context.Context) error {
	c, ok, err := r.h.GitHub.FindComment(ctx, r.ev.Number, commands.StickyMarker(r.cluster))
	if err != nil {
		return fmt.Errorf("read the status comment of cluster %q (the witness of its state's serial): %w", r.cluster, err)
	}
	if ok {
		r.status = c
		r.witness, _ = commands.StickyStateSerial(c.Body)
	}
	return nil
}

// fail answers an error outside a runner (config unreadable, backend down): one reply with what
// failed, 😕, and the error returned so the run shows red.
func (r *run) fail(ctx context.Context, err error) error {
	r.h.log().Error("command failed", "verb", r.out.Verb, "cluster", r.cluster, "err", commands.Redact(err.Error()))
	if _, rerr := r.reply(ctx, commands.RenderFailure(err.Error(), r.h.Env.RunURL())); rerr != nil {
		r.h.log().Error("could not post the failure", "err", rerr)
	}
	r.react(ctx, "confused")
	return fmt.Errorf("%w: %w", ErrCommandFailed, err)
}

// lockView is the reply's view of a lock's holder.
func lockView(h statestore.LockInfo, waited time.Duration) commands.LockView {
	return commands.LockView{Command: h.Command, Actor: h.Actor, RunID: h.RunID, Since: h.Since, Waited: waited}
}

func (r *run) help(ctx context.Context, cmd *commands.Command) error {
	if _, err := r.reply(ctx, commands.HelpText(r.pcfg, cmd.Topic)); err != nil {
		return err
	}
	r.out.OK = true
	return nil
}
