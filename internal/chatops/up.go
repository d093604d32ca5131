package chatops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
)

// upIntent is what `/poc up` (and the pull-request trigger) asks: the comment's explicit flags
// only, by setting name, so that a bare `/poc up` converges an existing cluster unchanged.
func (r *run) upIntent(in *clusterops.Intent, o commands.UpOptions) {
	in.TTL, in.DryRun, in.Patch = o.TTL, o.DryRun, maps.Clone(o.Spec)
	// A new cluster is a claimed spare of the warm pool when one fits, unless --cold; a dry run
	// claims nothing (its plan is the cold path's).
	in.Cold, in.Warm = o.Cold, !o.Cold && !o.DryRun
	if _, given := o.Spec["worker-offer"]; !given {
		in.WorkerOffers = r.cfg.WorkerOffers // the comment's --worker-offer wins
	}
	in.Quotas = r.cfg.Quotas
}

// upAnswer answers an up (and a resume, a wake): a dry run's plan, a failure before the up was
// admitted, or the live status comment the watcher opened brought to its end, the kubeconfig for
// the requester and the notification.
func (r *run) upAnswer(ctx context.Context, in clusterops.Intent, res *clusterops.Outcome, upErr error, w *watcher) error {
	tr := w.tr
	if tr == nil {
		if upErr != nil {
			return r.fail(ctx, upErr)
		}
		return r.plan(ctx, res, in.TTL, res.ETA) // a dry run
	}
	if s, now := r.cfg.PauseSchedule, r.h.now(); res.Verb == clusterops.VerbResume && s != nil && s.Paused(now) {
		awake := s.NextResume(now)
		r.note = fmt.Sprintf("⏰ Resumed inside a pause window of `pause_schedule` (%s): it stays up until the window ends, %s; the next scheduled pause is %s.",
			commands.Escape(s.String()), awake.UTC().Format("2006-01-02 15:04 UTC"), s.NextPause(awake).UTC().Format("Mon 2006-01-02 15:04 UTC"))
	}
	tr.stop()
	w.endGroup()
	tr.view.StateSerial = res.Header.Serial // clusterops recorded a new cluster's duration for the ETA

	doneReply := r.group("reply")
	defer doneReply()
	view := &tr.view
	view.Phase = res.Phase
	var summary string
	switch {
	case upErr == nil:
		uv, err := r.upView(ctx, res)
		if err != nil {
			// The cluster is up; only the kubeconfig link failed: say so, keep the endpoints.
			r.h.log().Error("kubeconfig link", "cluster", r.cluster, "err", commands.Redact(err.Error()))
			view.Error = "The cluster is ready, but the kubeconfig link could not be made: " + err.Error() + "\nRun `/poc kubeconfig` to try again."
		}
		view.Up, view.Note = &uv, r.upNote(ctx, res.Spec)
		summary = fmt.Sprintf("API at %s, %s per day, expires %s", strings.Join(uv.APIEndpoints, ", "), uv.DailyCost,
			uv.Expires.UTC().Format("2006-01-02 15:04 UTC"))
		r.setOutput("cluster", r.cluster)
		r.setOutput("api_endpoint", res.State.Outputs[cluster.OutAPIEndpoint])
		r.setOutput("kubeconfig_url", uv.Kubeconfig.URL)
		r.summary(upSummary(r.cluster, uv, res.State))
	case res.Phase == lifecycle.PhaseCancelled:
		view.Error = "Stopped at the request of a `/poc down`; the teardown takes over."
		summary = "stopped by a /poc down"
	default:
		view.Error = upErr.Error() + "\n\nWhat exists is kept in the state: `/poc up` again resumes, `/poc down` removes it."
		summary = "see the status comment for what failed"
	}
	tr.finish(ctx, upErr == nil, summary)
	r.deployment(ctx, res.Phase, edgeURL(r.cluster, res.State))
	switch {
	case upErr == nil:
		r.out.OK = true
		r.react(ctx, github.ReactionHooray)
		if res.Claimed != "" {
			r.refill(ctx) // after the reply: the dispatch must not delay it
		}
		return nil
	case res.Phase == lifecycle.PhaseCancelled:
		r.react(ctx, github.ReactionConfused)
		r.out.Refused = "cancelled by a down"
		return nil
	}
	r.react(ctx, github.ReactionConfused)
	return fmt.Errorf("%w: up %s: %w", ErrCommandFailed, r.cluster, upErr)
}

// tracked is one long operation (up, down) shown on the cluster's status comment while it runs,
// then closed with its final body and one notification.
type tracked struct {
	r       *run
	view    commands.StickyView
	sticky  *github.Sticky
	startID int64
	steps   *steps
	live    *liveSticky
}

// track opens the status comment of an admitted operation (out: what clusterops decided) and
// keeps it in step with the engine's progress events (edited in place, throttled) until stop.
func (r *run) track(ctx context.Context, verb commands.Verb, out *clusterops.Outcome, sp *steps) *tracked {
	t := &tracked{r: r, steps: sp}
	t.sticky, t.startID = r.newSticky(ctx)
	t.view = commands.StickyView{Cluster: r.cluster, Serial: r.h.serial(), Verb: verb, Requester: r.ev.Sender,
		Phase: out.Phase, Started: r.h.now(), RunURL: r.h.Env.RunURL(), StateSerial: out.Header.Serial,
		ETA: r.eta} // an up's ETA, from the first status comment on
	if err := t.sticky.Update(ctx, t.render(nil)); err != nil {
		r.h.log().Warn("could not write the status comment", "err", err)
	}
	t.live = startLive(ctx, t.sticky, sp, r.statusBudget(), t.render)
	return t
}

// stop ends the live edits; the view then holds the steps as they ended.
func (t *tracked) stop() {
	if lerr := t.live.finish(); lerr != nil && !errors.Is(lerr, github.ErrSuperseded) {
		t.r.h.log().Warn("status comment edit failed", "err", lerr)
	}
	t.view.Steps, t.view.Now = t.steps.snapshot(), t.r.h.now()
}

func (t *tracked) render(s []commands.Step) string {
	v := t.view
	v.Steps, v.Now, v.Tick = s, t.r.h.now(), statusHeartbeat // running times move once a heartbeat
	return commands.RenderSticky(v)
}

// finish writes the final body and posts the one notification that @-mentions the requester
// (editing a comment notifies nobody).
func (t *tracked) finish(ctx context.Context, ok bool, summary string) {
	t.r.finishSticky(ctx, t.sticky, commands.RenderSticky(t.view))
	t.r.countSticky(t.sticky, t.startID)
	if _, err := t.r.reply(ctx, commands.RenderNotify(commands.NotifyView{Requester: t.r.ev.Sender, Verb: t.view.Verb,
		Cluster: t.r.cluster, OK: ok, Summary: summary, StickyURL: t.sticky.URL()})); err != nil {
		t.r.h.log().Error("could not post the notification", "err", err)
	}
}

// newSticky opens the editor of the cluster's status comment, starting from the comment found
// before the operation when there is one (skips the search), guarded by the run's serial.
func (r *run) newSticky(ctx context.Context) (*github.Sticky, int64) {
	serial := r.h.serial()
	st := github.NewSticky(r.h.GitHub, r.ev.Number, commands.StickyMarker(r.cluster), r.h.stickyInterval()).
		WithOverwriteCheck(func(existing string) bool { return commands.ShouldOverwrite(existing, serial) }).
		WithOwner(r.ownComment(ctx)).
		WithLogger(r.h.log())
	id := r.status.ID
	if id > 0 {
		st.WithCommentID(id)
	}
	return st, id
}

func (r *run) countSticky(st *github.Sticky, startID int64) {
	if id := st.ID(); id != 0 && id != startID {
		r.out.NewComments++
	}
}

// finishSticky writes the status comment's final body; it reports whether the body is on GitHub.
func (r *run) finishSticky(ctx context.Context, st *github.Sticky, body string) bool {
	err := st.Update(ctx, body)
	if err == nil {
		err = st.Flush(ctx)
	}
	switch {
	case errors.Is(err, github.ErrSuperseded):
		r.h.log().Info("a newer run owns the status comment; this run's final body is not written")
	case err != nil:
		r.h.log().Error("could not write the final status comment", "err", err)
	}
	return err == nil
}

// plan answers `/poc up --dry-run`: what would be created or changed and what it costs.
func (r *run) plan(ctx context.Context, res *clusterops.Outcome, ttl time.Duration, est *eta.Estimate) error {
	groups := map[string]*commands.PlanGroup{}
	var order []string
	for _, n := range res.Plan {
		grp, ok := groups[n.Kind]
		if !ok {
			grp = &commands.PlanGroup{Name: n.Kind}
			groups[n.Kind] = grp
			order = append(order, n.Kind)
		}
		grp.Items = append(grp.Items, commands.PlanItem{Kind: n.Kind, Name: n.Name})
	}
	spec := res.Spec
	v := commands.PlanView{Cluster: r.cluster, Changes: changes(res.InPlace, res.Refused), TTL: ttl, Talos: spec.TalosVersion,
		AdminCIDRs: spec.AdminCIDRs, Cost: costView(r.cluster, res.Quote, time.Time{}, r.h.now(), time.Time{}),
		Preflight: withETA(preflightView(res.Preflight), est)}
	if res.Exists {
		v.TTL = 0 // an existing cluster keeps its expiry
	}
	for _, k := range order {
		v.Groups = append(v.Groups, *groups[k])
	}
	if _, err := r.reply(ctx, commands.RenderPlan(v)); err != nil {
		return err
	}
	r.out.OK = true
	r.react(ctx, github.ReactionHooray)
	return nil
}

func changes(inPlace, refused []provision.Change) []commands.Change {
	var out []commands.Change
	for _, c := range inPlace {
		out = append(out, commands.Change{Field: c.Field, From: fmt.Sprint(c.Old), To: fmt.Sprint(c.New), InPlace: true})
	}
	for _, c := range refused {
		out = append(out, commands.Change{Field: c.Field, From: fmt.Sprint(c.Old), To: fmt.Sprint(c.New), Reason: c.Why})
	}
	return out
}

// upView is the final body's content: endpoints, kubeconfig access, cost, expiry. The error is
// the kubeconfig link's; the view is complete otherwise.
func (r *run) upView(ctx context.Context, res *clusterops.Outcome) (commands.UpView, error) {
	st, spec, q, inPlace := res.State, res.Spec, res.Quote, res.InPlace
	now := r.h.now()
	keep, keepIgnored := r.keepState(ctx)
	uv := commands.UpView{Cluster: r.cluster, Expires: res.Header.Expires, KeepLabel: r.cfg.KeepLabel,
		Keep: keep, KeepIgnored: keepIgnored, AdminCIDRs: spec.AdminCIDRs, Changes: changes(inPlace, nil),
		DailyCost: q.Daily.Format(2), AccruedCost: q.Accrued(res.Header.Created, now).Format(2), WorkerOffer: offerChoice(res.Preflight),
		Path: res.Path}
	uv.APIEndpoints, uv.TalosEndpoints = clusterops.Endpoints(st)
	uv.EdgeAddress, uv.AdoptedWorker = st.Outputs[cluster.OutWorkerIP], st.Outputs[cluster.OutWorkerAdopted]
	if spec.DNSZone != "" && uv.EdgeAddress != "" {
		uv.EdgeAddress = spec.FQDN(spec.DNSNames(r.cluster).Edge) + " (" + uv.EdgeAddress + ")"
	}
	acc, err := r.issueKubeconfig(ctx, st.Secrets[cluster.SecretKubeconfig])
	uv.Kubeconfig = acc
	return uv, err
}

// upSummary is the job summary of an up: endpoints, resources, cost.
func upSummary(name string, uv commands.UpView, st *provision.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### pocbot: cluster `%s` is ready\n\n| | |\n|---|---|\n", name)
	fmt.Fprintf(&b, "| Kubernetes API | %s |\n| Talos API | %s |\n| Edge | %s |\n| Cost | %s per day |\n| Expires | %s |\n\n",
		strings.Join(uv.APIEndpoints, ", "), strings.Join(uv.TalosEndpoints, ", "), uv.EdgeAddress, uv.DailyCost,
		uv.Expires.UTC().Format(time.RFC3339))
	if uv.Path != "" {
		// Warm or cold, and why: the job's page says it as the status comment does.
		fmt.Fprintf(&b, "Path: %s\n\n", uv.Path)
	}
	names := make([]string, 0, len(st.Resources))
	for n := range st.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("| resource | kind | id |\n|---|---|---|\n")
	for _, n := range names {
		rec := st.Resources[n]
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", n, rec.Kind, rec.ID)
	}
	return commands.Redact(b.String())
}

// RefillCommand is the command input of the bot's workflow that runs the warm pool's pass alone
// (the workflow's workflow_dispatch choice; `bot handle` of that dispatch runs it).
const RefillCommand = "pool"

// Refiller is what a refill's dispatch asks of GitHub (internal/github.Client).
type Refiller interface {
	DefaultBranch(ctx context.Context) (string, error)
	DispatchWorkflow(ctx context.Context, workflow, ref string, inputs map[string]any) error
}

// refill dispatches the warm pool's refill once a claim is answered: a run of the bot's workflow
// on the default branch (the poc environment's secrets are the default branch's), command
// RefillCommand. A failure is logged and said in the outcome, never the command's: the schedule
// refills the pool.
func (r *run) refill(ctx context.Context) {
	d, ok := r.h.GitHub.(Refiller)
	switch {
	case r.h.RefillWorkflow == "":
		r.out.Refill = "no workflow to dispatch: the schedule refills the pool"
		return
	case !ok:
		r.out.Refill = "this GitHub client cannot dispatch a workflow: the schedule refills the pool"
		return
	}
	done := r.group("refill the warm pool")
	defer done()
	ref, err := d.DefaultBranch(ctx)
	if err == nil {
		err = d.DispatchWorkflow(ctx, r.h.RefillWorkflow, ref, map[string]any{"command": RefillCommand})
	}
	if err != nil {
		r.out.Refill = "not dispatched: " + commands.Redact(err.Error())
		r.h.log().Warn("could not dispatch the warm pool's refill; the schedule refills it", "workflow", r.h.RefillWorkflow, "err", commands.Redact(err.Error()))
		return
	}
	r.out.Refill = "dispatched"
	r.h.log().Info("warm pool refill dispatched", "workflow", r.h.RefillWorkflow, "ref", ref)
}
