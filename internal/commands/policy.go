package commands

import (
	"fmt"
	"strings"
)

// Permission is a GitHub repository role, as the collaborator-permission API names it
// (GET /repos/{owner}/{repo}/collaborators/{user}/permission: prefer `role_name`, which knows
// maintain and triage; the legacy `permission` field folds them into write and read).
type Permission string

// The roles, weakest first.
const (
	PermNone     Permission = "none"
	PermRead     Permission = "read"
	PermTriage   Permission = "triage"
	PermWrite    Permission = "write"
	PermMaintain Permission = "maintain"
	PermAdmin    Permission = "admin"
)

func rank(p Permission) int {
	switch Permission(strings.ToLower(strings.TrimSpace(string(p)))) {
	case PermRead, "pull":
		return 1
	case PermTriage:
		return 2
	case PermWrite, "push":
		return 3
	case PermMaintain:
		return 4
	case PermAdmin:
		return 5
	}
	return 0 // none, empty, anything unknown: least privilege
}

// Required is the permission a verb needs: write for everything that creates, destroys, spends
// or hands out credentials (up — dry-run included, to keep one rule —, down, extend, kubeconfig),
// read for what only reports (cost, status, help). An unknown verb needs admin, so that a verb
// added to the grammar without a policy line fails closed.
func Required(v Verb) Permission {
	switch v {
	case VerbUp, VerbDown, VerbPause, VerbResume, VerbExtend, VerbKubeconfig:
		return PermWrite
	case VerbCost, VerbStatus, VerbHelp:
		return PermRead
	}
	return PermAdmin
}

// Wakes is the rule of a command on a cluster paused inside its repository's pause window
// (pause_schedule): waking it is a resume, which starts machines and hands the commenter the
// kubeconfig, so only a verb that uses the cluster (up, extend, kubeconfig), from a user who may
// `/poc resume`, wakes it. A verb that only reports (status, cost, help) never wakes anything,
// whoever asks: it reports the paused cluster. down, pause and resume act as themselves.
func Wakes(v Verb, have string) bool {
	switch v {
	case VerbUp, VerbExtend, VerbKubeconfig:
		return Allowed(have, Required(v)) && Allowed(have, Required(VerbResume))
	}
	return false
}

// IssuesKubeconfig says whether a verb's reply hands its requester the cluster's admin
// kubeconfig (a link to it, encrypted to their SSH keys): up and resume when the cluster is
// ready, kubeconfig always. Each needs write (TestWakeAndKubeconfigPolicy).
func IssuesKubeconfig(v Verb) bool {
	switch v {
	case VerbUp, VerbResume, VerbKubeconfig:
		return true
	}
	return false
}

// Allowed reports whether a user holding `have` (as returned by GitHub; the legacy names pull
// and push are understood; anything unknown counts as none) may do what needs `need`.
func Allowed(have string, need Permission) bool {
	n := rank(need)
	if n == 0 && need != PermNone {
		return false // an unknown requirement fails closed
	}
	return rank(Permission(have)) >= n
}

// RefusalReply is the reply to a user whose permission is too low for the verb. It names the
// level needed and the level found, and says that nothing ran.
func RefusalReply(login string, v Verb, have string) string {
	need := Required(v)
	h := Permission(strings.ToLower(strings.TrimSpace(have)))
	if rank(h) == 0 {
		h = PermNone
	}
	return fit(fmt.Sprintf("😕 %s, `/poc %s` needs at least **%s** permission on this repository; you have **%s**. Nothing was run.\n\n"+
		"Ask a maintainer to run it, or to grant you write access. `/poc help` lists what read access allows.\n",
		mention(clip(login, maxCellBytes)), v, need, h))
}
