package chatops

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/kubecert"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/prkube"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TokenVerifier checks an Actions OIDC token against an audience; *github.OIDCVerifier
// implements it.
type TokenVerifier interface {
	Verify(ctx context.Context, token, audience string) (github.IDClaims, error)
}

// request answers a pull request's job asking for its kubeconfig (a repository_dispatch of
// prkube.EventType): prkube decides who may ask (Admit) and what to do (Plan); this runner gathers
// the facts once, answers in the check run prkube names, creates or waits for the cluster, and
// signs the job's certificate. A request that cannot be verified is dropped: nothing is written
// to GitHub for it.
func (r *run) request(ctx context.Context) error {
	r.out.Verb = commands.VerbKubeconfig
	req, err := prkube.Decode(r.ev.Payload)
	if err != nil {
		return r.drop(err.Error())
	}
	f := prkube.Facts{Repo: r.h.Env.Repository, RepoID: r.ev.RepoID, Req: req, Token: r.verifyToken(ctx, req)}
	if v := prkube.Admit(f); v.Drop {
		return r.drop(v.Why) // no further call for an unverified request
	}
	pull, err := r.h.GitHub.PullRequest(ctx, req.PR)
	switch {
	case errors.Is(err, github.ErrNotFound):
	case err != nil:
		return fmt.Errorf("kubeconfig request of run %d: %w", req.RunID, err)
	default:
		f.Pull = prkube.Pull{Found: true, Open: pull.Open, HeadSHA: pull.HeadSHA, FromFork: pull.FromFork}
	}
	run, err := r.h.GitHub.WorkflowRun(ctx, req.RunID)
	switch {
	case errors.Is(err, github.ErrNotFound):
	case err != nil:
		return fmt.Errorf("kubeconfig request of run %d: %w", req.RunID, err)
	default:
		f.Run = prkube.Run{Found: true, Event: run.Event, Status: run.Status, HeadSHA: run.HeadSHA, HeadRepo: run.HeadRepo,
			Attempt: run.Attempt, Triggerer: cmpOr(run.TriggeringActor, run.Actor)}
		if f.Permission, err = r.h.GitHub.Permission(ctx, f.Run.Triggerer); err != nil {
			return fmt.Errorf("kubeconfig request of run %d: ask for %s's permission: %w", req.RunID, f.Run.Triggerer, err)
		}
	}
	v := prkube.Admit(f)
	if v.Drop {
		return r.drop(v.Why)
	}
	// Authentic from here on: the answer goes on the pull request's head commit.
	r.ev.Number, r.ev.IsPR, r.ev.Labels = req.PR, true, pull.Labels
	r.ev.PR.HeadSHA, r.ev.PR.HeadRepo, r.ev.PR.Draft = req.HeadSHA, pull.HeadRepo, pull.Draft
	r.cluster = commands.ClusterName(r.ev.Owner, r.ev.Repo, req.PR)
	r.out.Cluster, r.perm = r.cluster, f.Permission
	a := &answerer{r: r, req: req}
	if v.Refuse {
		return a.final(ctx, prkube.Answer{State: prkube.StateRefused, Message: v.Why})
	}
	if r.ev.Sender, r.ev.SenderID, err = r.requester(ctx, f.Run.Triggerer); err != nil {
		return a.failed(ctx, err)
	}
	r.h.log().Info("kubeconfig request admitted", "pull_request", req.PR, "run", req.RunID, "attempt", req.RunAttempt, "by", r.ev.Sender)
	return r.serve(ctx, a, pull)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// requester is the run's triggering actor as the bot's intents name people: login and id.
func (r *run) requester(ctx context.Context, login string) (string, int64, error) {
	id, err := r.h.GitHub.UserID(ctx, login)
	if err != nil {
		return "", 0, fmt.Errorf("look up %s's account: %w", login, err)
	}
	return login, id, nil
}

// drop ends an unverifiable request: logged in the bot's run, nothing on GitHub.
func (r *run) drop(why string) error {
	r.out.Ignored = "kubeconfig request dropped: " + why
	r.h.log().Warn("kubeconfig request dropped: nothing is answered to a request that cannot be verified", "why", why)
	return nil
}

// verifyToken checks the request's OIDC token against its own audience.
func (r *run) verifyToken(ctx context.Context, req prkube.Request) prkube.Token {
	if r.h.Verifier == nil {
		return prkube.Token{Err: errors.New("this bot has no OIDC verifier configured")}
	}
	c, err := r.h.Verifier.Verify(ctx, req.Token, prkube.Audience(req))
	if err != nil {
		return prkube.Token{Err: err}
	}
	return prkube.Token{Repository: c.Repository, RepositoryID: c.RepositoryID, RunID: c.RunID, RunAttempt: c.RunAttempt,
		EventName: c.EventName, Ref: c.Ref}
}

// jobLifetime is the rule of a pull request's job's certificate.
var jobLifetime = kubecert.Lifetime{Default: kubecert.DefaultLifetime, Max: kubecert.MaxJobLifetime}

// serve finds the cluster, makes or waits for it when the plan says so, and issues.
func (r *run) serve(ctx context.Context, a *answerer, pull github.PullInfo) error {
	// A lifetime out of bounds is the request's: refused before any cluster is made for it.
	if _, _, err := jobLifetime.NotAfter(r.h.now(), a.req.Lifetime(), time.Time{}); err != nil {
		return a.final(ctx, prkube.Answer{State: prkube.StateRefused, Cluster: r.cluster, Message: err.Error() + " (the Action's input expires)"})
	}
	a.working(ctx, "checking the pull request's cluster")
	if err := r.loadConfig(ctx); err != nil {
		return a.failed(ctx, err)
	}
	if _, err := r.open(ctx); err != nil {
		return a.failed(ctx, err)
	}
	if err := r.findStatus(ctx); err != nil { // the witness of the state's serial
		return a.failed(ctx, err)
	}
	st, refused, err := r.readCluster(ctx)
	switch {
	case refused != nil:
		return a.final(ctx, prkube.Answer{State: prkube.StateRefused, Cluster: r.cluster, Message: refused.Error()})
	case err != nil:
		return a.failed(ctx, err)
	}
	var c *prkube.Cluster
	if st != nil {
		c = &prkube.Cluster{Phase: lifecycle.Phase(st.Header.Phase), Expires: st.Header.Expires}
	}
	action, why := prkube.Plan(c, noCreate(r.cfg, pull), r.h.now())
	switch action {
	case prkube.Refuse:
		return a.final(ctx, prkube.Answer{State: prkube.StateRefused, Cluster: r.cluster, Message: why})
	case prkube.Create:
		a.working(ctx, "creating the cluster (the pull request's status comment follows it)")
		stop := a.beat(ctx, r.h.requestBeat())
		another, err := r.create(ctx)
		stop()
		switch {
		case another:
			action = prkube.Wait
		case r.out.Refused != "":
			return a.final(ctx, prkube.Answer{State: prkube.StateRefused, Cluster: r.cluster, Message: "the cluster was not made: " + r.out.Refused + " (the pull request's comments say more)"})
		case err != nil:
			return a.failed(ctx, err)
		}
	}
	if action == prkube.Wait {
		stop := a.beat(ctx, r.h.requestBeat())
		err := r.awaitReady(ctx, a)
		stop()
		if err != nil {
			return a.failed(ctx, err)
		}
	}
	if action != prkube.Issue { // the cluster was made meanwhile: read it again
		if st, refused, err = r.readCluster(ctx); refused != nil || err != nil || st == nil {
			return a.failed(ctx, cmpErr(refused, err, clusterops.ErrNoCluster))
		}
		// The pull request's own event's run may be converging the cluster this run just made
		// (a claimed spare is made in seconds, before that run has taken the lock): its up says
		// provisioning until it ends. Wait for it, as for any run's up.
		if ph := lifecycle.Phase(st.Header.Phase); ph == lifecycle.PhaseProvisioning || ph == lifecycle.PhaseResuming {
			stop := a.beat(ctx, r.h.requestBeat())
			err := r.awaitReady(ctx, a)
			stop()
			if err != nil {
				return a.failed(ctx, err)
			}
			if st, refused, err = r.readCluster(ctx); refused != nil || err != nil || st == nil {
				return a.failed(ctx, cmpErr(refused, err, clusterops.ErrNoCluster))
			}
		}
	}
	return r.issue(ctx, a, st)
}

// create makes the pull request's cluster for a request that found none, as the pull request's
// own event does (its status comment, its deployment). The event's run may be making it at the
// same time: when that run holds the cluster's lock past the wait, or has made the cluster by the
// time the lock is this run's (the intent's precondition), another is true and nothing is said
// on the pull request: the request waits for that run's cluster.
func (r *run) create(ctx context.Context) (another bool, err error) {
	in := r.intent(commands.VerbUp)
	r.upIntent(&in, commands.UpOptions{})
	in.Precondition.Absent = true
	w := r.watch(ctx, clusterops.VerbUp)
	res, err := r.backend.Ops.Run(ctx, clusterops.VerbUp, in, w)
	w.endGroup()
	if ref := res.Refusal; ref != nil && (ref.Kind == lifecycle.RefuseLocked || ref.Kind == lifecycle.RefusePrecondition) {
		r.h.log().Info("the pull request's cluster is another run's: waiting for it", "why", ref.Error())
		return true, nil
	}
	return false, r.answer(ctx, in, res, err, w)
}

// readCluster reads the pull request's cluster once, as clusterops reads it for a status (its
// owner and its state's serial checked): nil when there is none, or the refusal.
func (r *run) readCluster(ctx context.Context) (*clusterops.Status, *clusterops.Refusal, error) {
	res, err := r.backend.Ops.Run(ctx, clusterops.VerbStatus, r.intent(commands.VerbStatus), nil)
	switch {
	case res != nil && res.Refusal != nil:
		return nil, res.Refusal, nil
	case err != nil:
		return nil, nil, err
	case !res.Exists:
		return nil, nil, nil
	}
	return res.Status, nil, nil
}

// cmpErr is the refusal when there is one, else the first of errs that is not nil.
func cmpErr(refused *clusterops.Refusal, errs ...error) error {
	if refused != nil {
		return refused
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// noCreate says why the repository's settings make no cluster for this pull request ("" when
// they do): the rules of a pull request's own events (prTrigger), for a job that asks.
func noCreate(cfg repoconfig.RepoConfig, pull github.PullInfo) string {
	switch {
	case cfg.PullRequests == repoconfig.PRNever:
		return "pull_requests: never in " + repoconfig.Path + "; comment `/poc up` on the pull request"
	case pull.Draft && !cfg.Drafts:
		return "it is a draft (drafts: false in " + repoconfig.Path + "); mark it ready or comment `/poc up`"
	case cfg.PullRequests == repoconfig.PRLabel:
		for _, l := range pull.Labels {
			if strings.EqualFold(l, cfg.PRLabel) {
				return ""
			}
		}
		return "add the label `" + cfg.PRLabel + "` (pull_requests: label in " + repoconfig.Path + "), or comment `/poc up`"
	}
	return ""
}

// awaitReady waits, reading the state's header, until another run's up of the cluster ends.
func (r *run) awaitReady(ctx context.Context, a *answerer) error {
	wait := r.h.requestWait()
	deadline := time.Now().Add(wait)
	poll := r.h.requestPoll()
	last := ""
	for {
		doc, err := r.backend.Ops.Store.Get(ctx, r.cluster)
		switch {
		case errors.Is(err, statestore.ErrNotFound):
			return errors.New("the cluster's up ended without a cluster (it was torn down meanwhile)")
		case err != nil:
			r.h.log().Warn("reading the cluster's state failed; trying again", "err", err)
		default:
			switch ph := lifecycle.Phase(doc.Header.Phase); ph {
			case lifecycle.PhaseReady:
				return nil
			case lifecycle.PhaseProvisioning, lifecycle.PhaseResuming:
				if msg := "waiting for the cluster: " + string(ph) + " by " + cmpOr(doc.Header.RequestedBy, "another run"); msg != last {
					last = msg
					a.working(ctx, msg)
				}
			default:
				return fmt.Errorf("the cluster's up ended %s: see the pull request's status comment", ph)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the cluster was not ready after %s (the bot's wait for a request)", wait)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(poll):
		}
	}
}

// issue signs the job's certificate and answers it; the pull request's deployment of the head
// commit is recorded (success) on the way.
func (r *run) issue(ctx context.Context, a *answerer, st *clusterops.Status) error {
	pub, err := a.req.PublicKey()
	if err != nil {
		return a.failed(ctx, err)
	}
	sub := kubecert.Subject{User: prkube.Subject(a.req), Groups: []string{kubecert.AdminGroup}}
	cc, err := r.backend.Ops.ClientCertificate(ctx, st, pub, sub, jobLifetime, a.req.Lifetime(), r.h.now())
	if err != nil {
		return a.failed(ctx, err)
	}
	caDER, err := pemDER(cc.Cluster.CAPEM)
	if err != nil {
		return a.failed(ctx, err)
	}
	// The head commit's deployment (a push after the up gets its own when its run asks).
	r.deployment(ctx, lifecycle.PhaseReady, edgeURL(r.cluster, st.State))
	r.h.log().Info("client certificate issued", "cluster", r.cluster, "subject", sub.User, "not_after", cc.NotAfter.UTC().Format(time.RFC3339), "clipped_to_expiry", cc.Clipped)
	r.out.OK = true
	return a.final(ctx, prkube.Answer{State: prkube.StateIssued, Cluster: r.cluster, Server: cc.Cluster.Server,
		CA: base64.StdEncoding.EncodeToString(caDER), Certificate: base64.StdEncoding.EncodeToString(cc.DER),
		NotAfter: cc.NotAfter, Subject: sub.User})
}

// answerer writes a request's answer: one check run, created by the first word and updated after.
type answerer struct {
	r   *run
	req prkube.Request
	mu  sync.Mutex // the run's writes and beat's
	id  int64
	// last is the latest working message, which beat writes again.
	last string
}

func (a *answerer) write(ctx context.Context, ans prkube.Answer) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ans.State == prkube.StateWorking {
		a.last = ans.Message
	}
	status, conclusion, title, summary, text := ans.Check(a.req.RunID, a.req.RunAttempt)
	cr := github.CheckRun{Name: prkube.CheckName, HeadSHA: a.req.HeadSHA, ExternalID: a.req.Nonce, Status: status, Conclusion: conclusion,
		Title: title, Summary: commands.Redact(summary), Text: text, DetailsURL: a.r.h.Env.RunURL()}
	if a.id != 0 {
		return a.r.h.GitHub.UpdateCheckRun(ctx, a.id, cr)
	}
	id, err := a.r.h.GitHub.CreateCheckRun(ctx, cr)
	a.id = id
	return err
}

// beat writes the latest working answer again every `every` until stop: the job takes a working
// answer unchanged for its redispatch (prkube.DefaultRedispatch) for a dead run and asks again,
// and an up or a wait for one lasts longer than that.
func (a *answerer) beat(ctx context.Context, every time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				a.mu.Lock()
				msg := a.last
				a.mu.Unlock()
				a.working(ctx, msg)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// working tells the job the bot is on it; a failure to say so is only logged.
func (a *answerer) working(ctx context.Context, msg string) {
	if err := a.write(ctx, prkube.Answer{State: prkube.StateWorking, Cluster: a.r.cluster, Message: msg}); err != nil {
		a.r.h.log().Warn("could not write the request's answer", "err", err)
	}
}

// final writes a final answer; a refusal is not the run's failure.
func (a *answerer) final(ctx context.Context, ans prkube.Answer) error {
	if ans.State == prkube.StateRefused {
		a.r.out.Refused = ans.Message
		a.r.h.log().Info("kubeconfig request refused", "pull_request", a.req.PR, "run", a.req.RunID, "why", ans.Message)
	}
	if err := a.write(ctx, ans); err != nil {
		return fmt.Errorf("answer the kubeconfig request of run %d: %w", a.req.RunID, err)
	}
	return nil
}

// failed answers a failure and returns it (the bot's run shows red).
func (a *answerer) failed(ctx context.Context, err error) error {
	msg := commands.Redact(err.Error())
	if werr := a.write(ctx, prkube.Answer{State: prkube.StateFailed, Cluster: a.r.cluster, Message: msg}); werr != nil {
		a.r.h.log().Warn("could not write the request's answer", "err", werr)
	}
	return fmt.Errorf("%w: kubeconfig request of run %d: %w", ErrCommandFailed, a.req.RunID, err)
}
