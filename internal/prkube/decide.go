package prkube

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
)

// Token is what the bot learned from the request's OIDC token: its claims once verified, or
// why it did not verify.
type Token struct {
	Err          error
	Repository   string
	RepositoryID int64
	RunID        int64
	RunAttempt   int
	EventName    string
	Ref          string
}

// Pull is the pull request as GitHub answers it now.
type Pull struct {
	Found    bool
	Open     bool
	HeadSHA  string
	FromFork bool
}

// Run is the requesting workflow run as GitHub answers it now.
type Run struct {
	Found     bool
	Event     string
	Status    string
	HeadSHA   string
	HeadRepo  string
	Attempt   int
	Triggerer string
}

// Facts are what Admit decides on, gathered once by the bot.
type Facts struct {
	Repo   string // this repository, "owner/name" (GITHUB_REPOSITORY of the bot's run)
	RepoID int64  // its id (the event's repository.id)
	Req    Request
	Token  Token
	Pull   Pull
	Run    Run
	// Permission is the role of the run's triggering actor on the repository ("" when unknown).
	Permission string
}

// Verdict is Admit's answer. Drop means the request cannot be trusted to name a pull request at
// all: nothing is written to GitHub (a forged request must not make the bot post). Refuse means
// it is authentic but not granted: the answer says why. Neither: go on to Plan.
type Verdict struct {
	Drop   bool
	Refuse bool
	Why    string
}

// Admit decides whether an authentic pull request run asks: Drop for what cannot be verified,
// Refuse (with what to do) for an authentic request that is not granted.
func Admit(f Facts) Verdict {
	drop := func(format string, a ...any) Verdict { return Verdict{Drop: true, Why: fmt.Sprintf(format, a...)} }
	refuse := func(format string, a ...any) Verdict { return Verdict{Refuse: true, Why: fmt.Sprintf(format, a...)} }
	t, r := f.Token, f.Req
	switch {
	case t.Err != nil:
		return drop("the request's OIDC token does not verify: %v", t.Err)
	case !strings.EqualFold(t.Repository, f.Repo) || (f.RepoID != 0 && t.RepositoryID != f.RepoID):
		return drop("the OIDC token is of repository %s (id %d), not %s (id %d)", t.Repository, t.RepositoryID, f.Repo, f.RepoID)
	case t.RunID != r.RunID || t.RunAttempt != r.RunAttempt:
		return drop("the OIDC token is of run %d attempt %d, the request names run %d attempt %d", t.RunID, t.RunAttempt, r.RunID, r.RunAttempt)
	case t.EventName == "pull_request_target":
		return refuse("run %d is a pull_request_target run: it runs the base branch's workflow with the repository's secrets, so pocbot never hands it a kubeconfig (running the pull request's code there is the classic \"pwn request\"); use a workflow on `pull_request`", r.RunID)
	case t.EventName != "pull_request":
		return refuse("run %d was started by %s: only a pull_request run gets its pull request's kubeconfig", r.RunID, t.EventName)
	case t.Ref != fmt.Sprintf("refs/pull/%d/merge", r.PR) && t.Ref != fmt.Sprintf("refs/pull/%d/head", r.PR):
		return refuse("run %d is of %s, not of pull request #%d", r.RunID, t.Ref, r.PR)
	case !f.Pull.Found:
		return refuse("pull request #%d does not exist", r.PR)
	case !f.Pull.Open:
		return refuse("pull request #%d is closed: its cluster goes with it", r.PR)
	case f.Pull.FromFork:
		return refuse("pull request #%d comes from a fork: a fork's code never gets a cluster's credentials (a maintainer can test it from a branch of this repository)", r.PR)
	case !f.Run.Found:
		return refuse("workflow run %d does not exist in %s", r.RunID, f.Repo)
	case f.Run.Event != "pull_request":
		return refuse("workflow run %d was started by %s, not pull_request", r.RunID, f.Run.Event)
	case f.Run.Status == "completed":
		return refuse("workflow run %d has completed: a kubeconfig goes to a live run only", r.RunID)
	case f.Run.Attempt != r.RunAttempt:
		return refuse("workflow run %d is at attempt %d, the request is of attempt %d", r.RunID, f.Run.Attempt, r.RunAttempt)
	case f.Run.HeadRepo != "" && !strings.EqualFold(f.Run.HeadRepo, f.Repo):
		return refuse("workflow run %d runs code of %s, a fork", r.RunID, f.Run.HeadRepo)
	case f.Run.HeadSHA != f.Pull.HeadSHA || r.HeadSHA != f.Pull.HeadSHA:
		return refuse("pull request #%d is now at %s; run %d (of %s) is of an older commit: the newer push's run gets the kubeconfig", r.PR, short(f.Pull.HeadSHA), r.RunID, short(f.Run.HeadSHA))
	case !commands.Allowed(f.Permission, need):
		who := f.Run.Triggerer
		if who == "" {
			who = "the run's triggering actor"
		}
		return refuse("%s has %s permission on %s: a kubeconfig needs %s, as `/poc kubeconfig` does", who, orNone(f.Permission), f.Repo, need)
	}
	return Verdict{}
}

// need is the permission a run's triggering actor must hold: the policy's for `/poc kubeconfig`
// (SECURITY.md's table), one rule for both ways to a cluster's credentials.
var need = commands.Required(commands.VerbKubeconfig)

func orNone(p string) string {
	if p == "" {
		return "no"
	}
	return p
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// Cluster is the pull request's cluster as its state header says (nil: none).
type Cluster struct {
	Phase   lifecycle.Phase
	Expires time.Time
}

// Action is what Plan says to do.
type Action string

// Plan's actions.
const (
	Issue  Action = "issue"  // sign the certificate now
	Create Action = "create" // run the pull request's up, then sign
	Wait   Action = "wait"   // another run is making the cluster: wait for it, then sign
	Refuse Action = "refuse"
)

// Plan decides what the bot does for an admitted request at now: c is the cluster (nil when there
// is none), noCreate says why a new one would not be made ("" when the repository's settings make
// one for this pull request).
func Plan(c *Cluster, noCreate string, now time.Time) (Action, string) {
	if c == nil {
		if noCreate != "" {
			return Refuse, "the pull request has no cluster, and none is made for it: " + noCreate
		}
		return Create, ""
	}
	switch c.Phase {
	case lifecycle.PhaseReady:
		// A certificate never outlives its cluster (kubecert.Lifetime): an expired one, which the
		// reaper is about to tear down, gets none.
		if !c.Expires.IsZero() && !c.Expires.After(now) {
			return Refuse, fmt.Sprintf("the cluster expired at %s and the reaper tears it down: comment `/poc extend 4h` on the pull request to keep it, then run the job again",
				c.Expires.UTC().Format("2006-01-02 15:04 UTC"))
		}
		return Issue, ""
	case lifecycle.PhaseProvisioning, lifecycle.PhaseResuming:
		return Wait, ""
	case lifecycle.PhasePaused, lifecycle.PhasePausing:
		return Refuse, "the cluster is paused: comment `/poc resume` on the pull request, then run the job again"
	case lifecycle.PhaseFailed:
		return Refuse, "the cluster's last up failed: comment `/poc up` on the pull request to resume it, then run the job again"
	case lifecycle.PhaseDestroying:
		return Refuse, "the cluster is being torn down"
	}
	return Refuse, "the cluster is " + string(c.Phase)
}

// CheckJob is the job's own check before it asks: the event it runs for. The bot decides again
// (Admit) on what GitHub says, since the job runs the pull request's code; this only turns the
// cases the bot would refuse into a clear message at once, without a request.
func CheckJob(eventName string, pr int, fromFork bool, headRepo string) error {
	switch {
	case eventName == "pull_request_target":
		return errors.New("this job runs on pull_request_target: it runs the base branch's workflow with the repository's secrets, so pocbot never hands it a kubeconfig (running the pull request's code there is the classic \"pwn request\"); run the job on `pull_request`")
	case eventName != "pull_request":
		return fmt.Errorf("this job runs on %q: only a pull_request run gets its pull request's kubeconfig", eventName)
	case pr <= 0:
		return errors.New("the pull_request event names no pull request number")
	case fromFork:
		return fmt.Errorf("pull request #%d comes from the fork %s: a fork's code never gets a cluster's credentials (a maintainer can push the branch to this repository)", pr, orUnknown(headRepo))
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(deleted)"
	}
	return s
}
