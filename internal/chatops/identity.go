package chatops

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

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

// kubeconfigSecrets lists the values of a kubeconfig that are secrets, for ::add-mask::. Actions
// masks line by line, so masking the whole file would also mask generic lines such as `users:`
// and turn every log line holding them into `***`; only the credential values are registered:
// client key and certificate data, tokens, passwords (and the key's PEM body lines, in case it
// is ever printed decoded). An unparsable kubeconfig falls back to its long lines.
func kubeconfigSecrets(kc []byte) []string {
	var doc any
	if err := yaml.Unmarshal(kc, &doc); err != nil {
		var out []string
		for _, l := range strings.Split(string(kc), "\n") {
			if l = strings.TrimSpace(l); len(l) >= 32 {
				out = append(out, l)
			}
		}
		return out
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				s, isString := x.(string)
				if !isString || s == "" {
					walk(x)
					continue
				}
				switch k {
				case "client-key-data", "client-certificate-data", "token", "password":
					out = append(out, s)
					if k == "client-key-data" {
						out = append(out, pemBodyLines(s)...)
					}
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

func pemBodyLines(b64 string) []string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "-----") {
			out = append(out, l)
		}
	}
	return out
}

func errorsIsNotFound(err error) bool { return err != nil && errors.Is(err, github.ErrNotFound) }
