package commands

import "fmt"

// KeepRefusal says why the keep label on an issue does not pause expiry (issue 11 hole 8):
// anyone with triage can label, so the label counts only when the user who added it has write
// permission (the same level as `/poc extend`). Actor "" means who added it is not known.
type KeepRefusal struct {
	Actor      string // login named by the last "labeled" event for the label
	Permission string // their permission on the repository now
	Unknown    string // why the actor could not be checked ("" when Actor/Permission are set)
}

// KeepVouched is the policy: a keep label counts when the user who last added it (actor, ""
// when unknown) has at least write permission (perm). nil means it counts.
func KeepVouched(actor, perm string) *KeepRefusal {
	if actor == "" {
		return &KeepRefusal{Unknown: "no labeled event names who added it"}
	}
	if !Allowed(perm, Required(VerbExtend)) {
		return &KeepRefusal{Actor: actor, Permission: perm}
	}
	return nil
}

// String is the refusal in a few words, for logs and the reaper's table.
func (k *KeepRefusal) String() string {
	if k.Unknown != "" {
		return "who added it is unknown: " + k.Unknown
	}
	return "added by " + k.Actor + " (" + orNone(k.Permission) + ")"
}

// note is the sentence shown in the reply, the status and the expiry warning.
func (k *KeepRefusal) note(label string) string {
	if label == "" {
		label = "poc/keep"
	}
	why := ""
	switch {
	case k.Unknown != "":
		why = "who added it could not be checked (" + EscapeText(k.Unknown) + ")"
	default:
		why = fmt.Sprintf("it was added by %s, who has **%s** permission", inlineCode(k.Actor), EscapeText(orNone(k.Permission)))
	}
	return fmt.Sprintf("> [!NOTE]\n> The `%s` label is **ignored**: %s. Only users with write permission can pause the expiry; "+
		"one of them can add the label again, or run `/poc extend`.\n", label, why)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// IdentityMismatch is an account that asked for a kubeconfig and no longer holds the login it
// asked under (issue 11 hole 3): the kubeconfig follows the immutable account id, never a login.
type IdentityMismatch struct {
	ID  int64  // the account id from the event
	Now string // the account's login now; "" when the account is gone
}

func (m *IdentityMismatch) note(login string) string {
	now := "no longer exists"
	if m.Now != "" {
		now = "is now " + inlineCode(m.Now)
	}
	return fmt.Sprintf("not issued: the GitHub account that asked (id %d, %s when it asked) %s, and the login %s may belong to "+
		"someone else by now, so nothing was encrypted to its keys. If you renamed your account, comment again under your "+
		"new name:\n\n```\n/poc kubeconfig\n```\n", m.ID, inlineCode(login), now, inlineCode(login))
}
