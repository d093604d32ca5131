package chatops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
)

// PRActions are the pull_request(_target) actions the bot acts on; every other action is
// ignored. The workflows must subscribe to each of them (workflow_test.go reads the files):
// GitHub starts no run for an action missing from a workflow's `types`.
var PRActions = []string{"opened", "reopened", "labeled", "ready_for_review", "closed"}

// CommentActions are the issue_comment actions the bot acts on (github.DecodeEvent ignores the rest).
var CommentActions = github.CommentActions

// pullRequest handles pull_request / pull_request_target: a cluster per PR when it is labeled
// (or opened, with `pull_requests: always`), destroyed when it closes or merges. Forks never get
// one automatically: their events run with the base repository's secrets under
// pull_request_target, so only a maintainer's explicit `/poc up` comment may spend money for them.
func (r *run) pullRequest(ctx context.Context) error {
	ev := r.ev
	r.cluster = commands.ClusterName(ev.Owner, ev.Repo, ev.Number)
	r.out.Cluster = r.cluster
	switch {
	case ev.Action == "closed":
		return r.prClosed(ctx)
	case slices.Contains(PRActions, ev.Action):
	default:
		// synchronize (new commits) and the rest: the cluster is the PR's, not the commit's.
		r.out.Ignored = "pull_request " + ev.Action + ": nothing to do"
		r.h.log().Info("pull request event ignored", "action", ev.Action, "number", ev.Number)
		return nil
	}
	if ev.PR.FromFork {
		r.out.Ignored = "pull request from a fork: never provisioned automatically; a maintainer can comment /poc up"
		r.h.log().Info("fork pull request: no automatic cluster", "number", ev.Number, "head", ev.PR.HeadRepo)
		return nil
	}
	if err := r.loadConfig(ctx); err != nil {
		// No comment to answer on a label event: the run log says what is wrong.
		return fmt.Errorf("pull request #%d: %w", ev.Number, err)
	}
	if why := r.prTrigger(); why != "" {
		r.out.Ignored = why
		r.h.log().Info("pull request event ignored", "action", ev.Action, "number", ev.Number, "why", why)
		return nil
	}
	r.out.Verb = commands.VerbUp
	r.acknowledge(ctx)
	perm, err := r.h.GitHub.Permission(ctx, ev.Sender)
	if err != nil {
		return r.fail(ctx, fmt.Errorf("ask GitHub for %s's permission: %w", ev.Sender, err))
	}
	r.perm = perm
	if !commands.Allowed(perm, commands.Required(commands.VerbUp)) {
		return r.refuse(ctx, "permission "+perm, commands.RefusalReply(ev.Sender, commands.VerbUp, perm))
	}
	if _, err := r.open(ctx); err != nil {
		return r.fail(ctx, err)
	}
	// Runs are not serialized by GitHub: a close may have been handled while this run started,
	// finding no cluster to remove. Ask again right before creating anything.
	if open, _, _, _, err := r.h.GitHub.IssueState(ctx, r.ev.Number); err != nil {
		return r.fail(ctx, fmt.Errorf("check that pull request #%d is still open: %w", r.ev.Number, err))
	} else if !open {
		r.out.Ignored = "pull request closed meanwhile"
		r.h.log().Info("pull request closed before its cluster was made", "number", r.ev.Number)
		return nil
	}
	if err := r.findStatus(ctx); err != nil {
		return r.fail(ctx, err)
	}
	in := r.intent(commands.VerbUp)
	r.upIntent(&in, commands.UpOptions{})
	return r.operate(ctx, clusterops.VerbUp, in)
}

// prTrigger says why an open/label event does not ask for a cluster ("" when it does).
func (r *run) prTrigger() string {
	ev, cfg := r.ev, r.cfg
	if cfg.PullRequests == repoconfig.PRNever {
		return "pull_requests: never in " + repoconfig.Path
	}
	if ev.PR.Draft && !cfg.Drafts {
		return "draft pull request (drafts: false in " + repoconfig.Path + ")"
	}
	switch ev.Action {
	case "labeled":
		if !strings.EqualFold(ev.Label, cfg.PRLabel) {
			return "label " + ev.Label + " is not " + cfg.PRLabel
		}
		return ""
	default: // opened, reopened, ready_for_review
		if cfg.PullRequests == repoconfig.PRAlways {
			return ""
		}
		if cfg.PullRequests == repoconfig.PRLabel && r.hasLabel(cfg.PRLabel) && ev.Action != "opened" {
			return "" // reopened or ready with the label: bring the cluster back
		}
		return "pull_requests: " + string(cfg.PullRequests) + " and this is not the " + cfg.PRLabel + " label being added"
	}
}

// prClosed tears down the PR's cluster, merged or not. A close costs nothing to honour, so it
// needs no permission check and applies to forks and bots too; a pull request without a cluster
// is left alone, without a word (👀 comes once the down is admitted).
func (r *run) prClosed(ctx context.Context) error {
	r.out.Verb = commands.VerbDown
	if _, err := r.open(ctx); err != nil {
		return fmt.Errorf("pull request #%d closed: %w", r.ev.Number, err)
	}
	if err := r.findStatus(ctx); err != nil {
		return fmt.Errorf("pull request #%d closed: %w", r.ev.Number, err)
	}
	if err := r.loadConfig(ctx); err != nil {
		r.h.log().Warn("closed pull request: configuration unreadable, using defaults", "err", err)
		r.cfg = repoconfig.Default()
	}
	in := r.intent(commands.VerbDown)
	in.ParkFor, in.IfExists = r.cfg.ParkFor, true
	w := r.watch(ctx, clusterops.VerbDown)
	w.ack = true
	res, err := r.backend.Ops.Run(ctx, clusterops.VerbDown, in, w)
	w.endGroup()
	if res.Refusal != nil && res.Refusal.Kind == lifecycle.RefuseNoCluster {
		r.out.Ignored = "pull request closed: it has no cluster"
		r.h.log().Info("pull request closed without a cluster", "number", r.ev.Number)
		return nil
	}
	return r.answer(ctx, in, res, err, w)
}
