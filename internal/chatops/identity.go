package chatops

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
)

// ownComment says whether a comment is the bot's own (its bot login, from the client): a status
// comment found by marker or by a remembered id that someone else wrote is never trusted.
func (r *run) ownComment(ctx context.Context) func(github.Comment) bool {
	self, err := r.h.GitHub.SelfLogin(ctx)
	if err != nil {
		r.h.log().Warn("could not learn the App's own login: every status comment will be a new one", "err", err)
	}
	return func(c github.Comment) bool {
		return self != "" && c.AuthorIsBot && strings.EqualFold(c.Author, self)
	}
}

// checkRequester makes sure the account that sent the event (its immutable id) still holds the
// login the event named: a login renamed and re-registered while `up` ran must not receive the
// kubeconfig. It returns the mismatch to report, or nil when the binding holds. phase names the
// moment, for the log.
func (r *run) checkRequester(ctx context.Context, phase string) (*commands.IdentityMismatch, error) {
	login, id := r.ev.Sender, r.ev.SenderID
	if id == 0 {
		return nil, fmt.Errorf("the event names no account id for %s: cannot bind the kubeconfig to an account", login)
	}
	now, err := r.h.GitHub.UserLogin(ctx, id)
	switch {
	case errorsIsNotFound(err):
		r.h.log().Warn("the requester's account is gone", "login", login, "id", id, "at", phase)
		return &commands.IdentityMismatch{ID: id}, nil
	case err != nil:
		return nil, fmt.Errorf("look up account %d (%s): %w", id, login, err)
	case !strings.EqualFold(now, login):
		r.h.log().Warn("the requester's account was renamed", "login", login, "id", id, "now", now, "at", phase)
		return &commands.IdentityMismatch{ID: id, Now: now}, nil
	}
	holder, err := r.h.GitHub.UserID(ctx, login)
	switch {
	case errorsIsNotFound(err):
		return &commands.IdentityMismatch{ID: id, Now: now}, nil
	case err != nil:
		return nil, fmt.Errorf("look up who holds the login %s: %w", login, err)
	case holder != id:
		r.h.log().Warn("the requester's login is held by another account", "login", login, "id", id, "holder", holder, "at", phase)
		return &commands.IdentityMismatch{ID: id, Now: now}, nil
	}
	return nil, nil
}

// keepState says whether the keep label on the issue pauses expiry: only when the user who
// last added it has write permission now (anyone with triage can label). The refusal is what
// to tell the user when the label is there but does not count.
func (r *run) keepState(ctx context.Context) (bool, *commands.KeepRefusal) {
	if !r.hasLabel(r.cfg.KeepLabel) {
		return false, nil
	}
	return KeepAllowed(ctx, r.h.GitHub, r.ev.Number, r.cfg.KeepLabel)
}

// KeepAllowed decides on a keep label that is on issue number (clusterops.KeepVouched, the one
// keep rule).
func KeepAllowed(ctx context.Context, gh clusterops.Labelers, number int, label string) (bool, *commands.KeepRefusal) {
	refusal := clusterops.KeepVouched(ctx, gh, number, label)
	return refusal == nil, refusal
}

func errorsIsNotFound(err error) bool { return err != nil && errors.Is(err, github.ErrNotFound) }
