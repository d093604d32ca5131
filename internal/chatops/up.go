package chatops

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/eta"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/statestore"
)

// override applies the comment's explicit flags only, so that a bare `/poc up` converges an
// existing cluster unchanged.
func override(o commands.UpOptions) func(*provision.Spec) {
	return func(s *provision.Spec) {
		if o.TalosVersion != "" {
			s.TalosVersion = o.TalosVersion
		}
		if len(o.AdminCIDRs) > 0 {
			s.AdminCIDRs = prefixes(o.AdminCIDRs)
		}
		if len(o.Extensions) > 0 {
			s.TalosExtensions = append([]string(nil), o.Extensions...)
		}
		if o.DNSZone != "" {
			s.DNSZone = o.DNSZone
		}
		if o.ExposeEdge != nil {
			s.ExposeEdgeOnControlPlane = *o.ExposeEdge
		}
		if o.CPCount > 0 {
			s.CPCount = o.CPCount
		}
		if o.CPType != "" {
			s.CPInstanceType = o.CPType
		}
		if o.WorkerOffer != "" {
			s.BaremetalOffer = o.WorkerOffer
		}
	}
}

func prefixes(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// up runs `/poc up` (and the pull-request trigger): plan, budget guard, then the engine with a
// live sticky comment, the kubeconfig for the requester, the notification.
func (r *run) up(ctx context.Context, o commands.UpOptions) error {
	b := r.backend
	ttl := o.TTL
	if ttl == 0 {
		ttl = r.cfg.DefaultTTL
	}
	req := r.request(commands.VerbUp)
	req.TTL = ttl
	req.Override = override(o)
	if o.WorkerOffer == "" {
		req.WorkerOffers = r.cfg.WorkerOffers // the comment's --worker-offer wins
	}

	if r.ev.Kind == github.KindComment && r.ev.IssueState == "closed" {
		// The schedule tears down the clusters of closed issues and pull requests: a cluster made
		// now would be billed until the next run destroys it (found by the soak).
		what := "issue"
		if r.ev.IsPR {
			what = "pull request"
		}
		return r.refuse(ctx, "closed", fmt.Sprintf("😕 **Not run:** this %s is closed, and the schedule tears down the clusters of closed issues and pull requests. "+
			"Reopen it, then comment `/poc up` again.\n\nNothing was created or changed.\n", what))
	}
	if o.DNSZone != "" {
		if r.cfg.CheckDNSZone(o.DNSZone) != nil {
			return r.refuse(ctx, "dns zone not allowed", commands.ErrorReply(dnsZoneRefusal(o.DNSZone, r.cfg.DNSZones), commands.VerbUp, r.pcfg))
		}
	}
	donePlan := r.group("plan and budget")
	spec, exists, inPlace, refused, err := b.Ops.Plan(ctx, req)
	if err != nil {
		donePlan()
		if exists || spec.Zone == "" {
			return r.fail(ctx, err)
		}
		// The comment's flags make an invalid spec (e.g. an offer the bot cannot use).
		return r.refuse(ctx, "invalid settings", commands.ErrorReply(fmt.Errorf("%w: %s", commands.ErrSyntax, commands.Escape(err.Error())), commands.VerbUp, r.pcfg))
	}
	life := ttl
	if exists && r.header != nil && !r.header.Expires.IsZero() {
		life = r.header.Expires.Sub(r.h.now())
	}
	quote, err := clusterops.Quote(ctx, b.Quoter, spec, life, true)
	if err != nil {
		donePlan()
		return r.fail(ctx, fmt.Errorf("price cluster %q: %w", r.cluster, err))
	}
	// Quotas and stock, read before anything is created: a refusal here costs no status comment;
	// the up's own pre-flight (clusterops) is the one that counts.
	pf, err := r.preflight(ctx, req, spec)
	if err != nil {
		donePlan()
		return r.fail(ctx, fmt.Errorf("pre-flight of cluster %q (nothing was created): %w", r.cluster, err))
	}
	est := r.estimate(ctx, spec, exists, pf)
	if o.DryRun {
		donePlan()
		return r.plan(ctx, spec, exists, inPlace, refused, ttl, quote, pf, est)
	}
	if pf != nil && pf.Refusal != nil {
		donePlan()
		return r.refuse(ctx, "quota", r.quotaRefusal(pf.Refusal, pf))
	}
	if len(refused) > 0 {
		donePlan()
		rerr := &clusterops.RefusedError{Cluster: r.cluster, Changes: refused}
		body := fmt.Sprintf("😕 **Not changed:** %s.\n\n", commands.Escape(rerr.Error())) +
			commands.RenderPlan(commands.PlanView{Cluster: r.cluster, Changes: changes(inPlace, refused), Talos: spec.TalosVersion, AdminCIDRs: spec.AdminCIDRs})
		return r.refuse(ctx, "changes that cannot apply in place", body)
	}
	// A resume brings a paused cluster's daily cost back from its floor to the running one: it
	// passes the budget as a new cluster does (the cluster itself is left out of the count).
	if !exists || (r.header != nil && clusterops.Paused(*r.header)) {
		if refusal := r.budget(ctx, quote); refusal != "" {
			donePlan()
			return r.refuse(ctx, "budget", refusal)
		}
	}
	donePlan()
	// The check above answers at once without a status comment; this one is the one that
	// counts: it runs again under the repository's admission lock, right before the first
	// document is written, so that concurrent ups cannot all pass it. It is set even when the
	// plan saw the cluster: a down may delete it while this up waits for the lock, and the up
	// then creates it anew (Ops.Up calls Admit only for a new document).
	req.Admit = func(ctx context.Context) error {
		if refusal := r.budget(ctx, quote); refusal != "" {
			return &budgetRefusal{body: refusal}
		}
		return nil
	}
	req.DailyCostNanos = quote.Daily.Nanos
	// A status comment left by an earlier life of the cluster may record a higher serial (its
	// down could not edit it): a new document continues above it.
	if w, err := r.witness(ctx); err == nil {
		req.MinSerial = w
	}

	if est != nil {
		r.eta = commands.PreflightView{ETA: est.D, ETAFrom: est.From, Path: est.Path.String()}.ETAText()
	}
	r.react(ctx, github.ReactionRocket)
	doneUp := r.group("up " + r.cluster)
	started := r.h.now()
	var res *clusterops.Result
	tr, upErr := r.track(ctx, commands.VerbUp, clusterops.PhaseProvisioning, started, func(p provision.Progress) error {
		req.Progress = p
		var err error
		res, err = b.Ops.Up(ctx, req)
		return err
	})
	doneUp()

	var le *statestore.LockedError
	if errors.As(upErr, &le) {
		return tr.locked(ctx, le) // nothing ran: say who holds the cluster, no notification
	}
	var br *budgetRefusal
	if errors.As(upErr, &br) {
		return tr.refused(ctx, "budget", br.body) // another up of the repository took the room meanwhile
	}
	if res != nil {
		if body := r.quotaRefusal(upErr, res.Preflight); body != "" {
			return tr.refused(ctx, "quota", body) // another up of the project took the room meanwhile
		}
	}
	if hdr, ok := r.recordLabels(ctx, tr.sticky.ID(), quote); ok {
		tr.view.StateSerial = hdr.Serial
	} else if res != nil && res.Header.Serial > 0 {
		tr.view.StateSerial = res.Header.Serial
	}

	doneReply := r.group("reply")
	defer doneReply()
	view := &tr.view
	ok := upErr == nil
	if ok {
		r.recordDuration(ctx, est, r.h.now().Sub(started))
	}
	var summary string
	if ok {
		uv, err := r.upView(ctx, res, spec, quote, inPlace)
		if err != nil {
			// The cluster is up; only the kubeconfig link failed: say so, keep the endpoints.
			r.h.log().Error("kubeconfig link", "cluster", r.cluster, "err", commands.Redact(err.Error()))
			view.Error = "The cluster is ready, but the kubeconfig link could not be made: " + err.Error() + "\nRun `/poc kubeconfig` to try again."
		}
		view.Phase, view.Up, view.Note = clusterops.PhaseReady, &uv, r.note
		summary = fmt.Sprintf("API at %s, %s per day, expires %s", strings.Join(uv.APIEndpoints, ", "), uv.DailyCost,
			uv.Expires.UTC().Format("2006-01-02 15:04 UTC"))
		r.setOutput("cluster", r.cluster)
		r.setOutput("api_endpoint", res.State.Outputs[cluster.OutAPIEndpoint])
		r.setOutput("kubeconfig_url", uv.Kubeconfig.URL)
		r.summary(upSummary(r.cluster, uv, res.State))
	} else {
		view.Phase = clusterops.PhaseFailed
		if errors.Is(upErr, provision.ErrCancelled) {
			view.Phase = "cancelled"
			view.Error = "Stopped at the request of a `/poc down`; the teardown takes over."
			summary = "stopped by a /poc down"
		} else {
			view.Error = upErr.Error() + "\n\nWhat exists is kept in the state: `/poc up` again resumes, `/poc down` removes it."
			summary = "see the status comment for what failed"
		}
	}
	tr.finish(ctx, ok, summary)
	if ok {
		r.out.OK = true
		r.react(ctx, github.ReactionHooray)
		return nil
	}
	r.react(ctx, github.ReactionConfused)
	if errors.Is(upErr, provision.ErrCancelled) {
		r.out.Refused = "cancelled by a down"
		return nil
	}
	return fmt.Errorf("%w: up %s: %w", ErrCommandFailed, r.cluster, upErr)
}

// tracked is one long operation (up, down) shown on the cluster's status comment while it runs,
// then closed with its final body and one notification.
type tracked struct {
	r       *run
	view    commands.StickyView
	sticky  *github.Sticky
	startID int64
}

// track opens the status comment for verb, runs op with its progress events feeding the comment
// (edited in place, throttled), and returns with the view holding the steps as they ended.
func (r *run) track(ctx context.Context, verb commands.Verb, phase string, started time.Time, op func(provision.Progress) error) (*tracked, error) {
	t := &tracked{r: r}
	t.sticky, t.startID = r.newSticky(ctx)
	t.view = commands.StickyView{Cluster: r.cluster, Serial: r.h.serial(), Verb: verb, Requester: r.ev.Sender,
		Phase: phase, Started: started, RunURL: r.h.Env.RunURL()}
	if r.header != nil {
		t.view.StateSerial = r.header.Serial
	}
	t.view.ETA = r.eta // an up's ETA, from the first status comment on
	if err := t.sticky.Update(ctx, t.render(nil)); err != nil {
		r.h.log().Warn("could not write the status comment", "err", err)
	}
	sp := newSteps()
	live := startLive(ctx, t.sticky, sp, r.h.stickyInterval(), t.render)
	err := op(sp)
	if lerr := live.finish(); lerr != nil && !errors.Is(lerr, github.ErrSuperseded) {
		r.h.log().Warn("status comment edit failed", "err", lerr)
	}
	t.view.Steps, t.view.Now = sp.snapshot(), r.h.now()
	return t, err
}

func (t *tracked) render(s []commands.Step) string {
	v := t.view
	v.Steps, v.Now = s, t.r.h.now()
	return commands.RenderSticky(v)
}

// locked ends an operation that never started because another run holds the cluster's lock.
// The status comment says so; when it is not this run's to write (a newer run of the cluster
// owns it, or the edit failed), a reply does: the command must get its answer somewhere, and the
// newer run's status must not be overwritten by this one's.
func (t *tracked) locked(ctx context.Context, le *statestore.LockedError) error {
	body := lockReply(t.r.cluster, le, t.r.lockWait())
	t.view.Phase, t.view.Error = clusterops.PhaseFailed, body
	written := t.r.finishSticky(ctx, t.sticky, commands.RenderSticky(t.view))
	t.r.countSticky(t.sticky, t.startID)
	if !written {
		return t.r.refuse(ctx, "locked", body)
	}
	t.r.out.Refused = "locked"
	t.r.react(ctx, github.ReactionConfused)
	return nil
}

// refused ends an operation that was refused before it created anything (a budget used up by a
// concurrent up): the status comment says so, the reply says why.
func (t *tracked) refused(ctx context.Context, why, body string) error {
	t.view.Phase = "refused"
	t.view.Error = "Nothing was created: another `/poc up` of this repository took the budget meanwhile; see the reply below."
	t.r.finishSticky(ctx, t.sticky, commands.RenderSticky(t.view))
	t.r.countSticky(t.sticky, t.startID)
	return t.r.refuse(ctx, why, body)
}

// budgetRefusal is the budget check's answer when it runs as clusterops' admission check.
type budgetRefusal struct{ body string }

func (e *budgetRefusal) Error() string { return "refused by the budget of " + repoconfig.Path }

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

// newSticky opens the editor of the cluster's status comment, starting from the id kept in the
// state header when there is one (skips the search), guarded by the run's serial.
func (r *run) newSticky(ctx context.Context) (*github.Sticky, int64) {
	serial := r.h.serial()
	st := github.NewSticky(r.h.GitHub, r.ev.Number, commands.StickyMarker(r.cluster), r.h.stickyInterval()).
		WithOverwriteCheck(func(existing string) bool { return commands.ShouldOverwrite(existing, serial) }).
		WithOwner(r.ownComment(ctx)).
		WithLogger(r.h.log())
	var id int64
	if r.header != nil {
		if m, err := clusterops.MetaOf(*r.header); err == nil && m.StickyID > 0 {
			id = m.StickyID
			st.WithCommentID(id)
		}
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

// recordLabels keeps the sticky comment's id and the daily cost in the public header: the next
// run edits the same comment, and the budget guard and the reaper read costs without the key.
func (r *run) recordLabels(ctx context.Context, stickyID int64, q cost.Quote) (statestore.Header, bool) {
	req := r.request(commands.VerbUp)
	req.Command = "record labels"
	hdr, err := r.backend.Ops.Update(ctx, req, func(h *statestore.Header) error {
		return clusterops.EditMeta(h, func(m *clusterops.Meta) error {
			if stickyID != 0 {
				m.StickyID = stickyID
			}
			if !q.Daily.IsZero() {
				m.DailyCostNanos = q.Daily.Nanos
			}
			recordRequesterID(m, *h, r.ev.Sender, r.ev.SenderID)
			return nil
		})
	})
	if err != nil && !errors.Is(err, clusterops.ErrNoCluster) {
		r.h.log().Warn("could not record the status comment id in the state header", "err", err)
	}
	return hdr, err == nil
}

// budget checks the repository's limits against the clusters already running; it returns the
// refusal to post, or "".
func (r *run) budget(ctx context.Context, candidate cost.Quote) string {
	running, err := r.runningCosts(ctx)
	if err != nil && running == nil {
		// Fail closed: a budget checked against no cluster at all would let anything through.
		r.h.log().Error("budget: could not list the running clusters", "err", err)
		return fmt.Sprintf("😕 **Not created:** the budget of `.github/poc.yml` cannot be checked: listing the running clusters failed (%s). Nothing was created; try again in a minute.",
			commands.Escape(err.Error()))
	}
	if err != nil {
		r.h.log().Warn("budget: some cluster states are unreadable; each counts as one cluster of unknown cost", "err", err)
	}
	err = cost.CheckBudget(r.cfg, running, candidate)
	var be *cost.BudgetError
	if !errors.As(err, &be) {
		return ""
	}
	v := commands.BudgetRefusalView{Limit: commands.BudgetLimit(be.Limit), Max: be.Max}
	for _, c := range running {
		v.Running = append(v.Running, c.Name)
	}
	switch v.Limit {
	case commands.LimitMaxClusters:
		v.Current, v.Requested = fmt.Sprintf("%d clusters", be.Running), "1 cluster"
	case commands.LimitMaxDailyEUR:
		v.Current, v.Requested = be.Current.Format(2)+" per day", be.Candidate.Format(2)+" per day"
	case commands.LimitUnknownPrice:
		v.Detail = be.Detail
	}
	return commands.RenderBudgetRefusal(v)
}

// runningCosts lists the repository's other clusters and their daily cost: from the header label
// when recorded, else priced from their decrypted spec.
func (r *run) runningCosts(ctx context.Context) ([]cost.ClusterCost, error) {
	b := r.backend
	// List returns the readable headers along with an error naming the unreadable objects: those
	// still count, as clusters of unknown cost, rather than not at all.
	headers, err := b.Ops.Store.List(ctx)
	if err != nil && len(headers) == 0 {
		return nil, err
	}
	out := []cost.ClusterCost{}
	if err != nil {
		// A state object that cannot be read or authenticated counts at worst case, against every
		// repository (the one it names is not to be believed): one cluster costing the whole
		// daily limit, so no new cluster passes until a person has looked at it.
		var le *statestore.ListError
		bad := []string{"(unreadable state)"}
		if errors.As(err, &le) {
			bad = bad[:0]
			for _, b := range le.Bad {
				bad = append(bad, "(unverifiable: "+b.Key+")")
			}
		}
		for _, name := range bad {
			out = append(out, cost.ClusterCost{Name: name, Daily: cost.Money{Currency: cost.CurrencyEUR, Nanos: r.cfg.MaxDailyNanoEUR}, Unknown: true})
		}
	}
	for _, h := range headers {
		if h.Cluster == r.cluster || (h.Repository != "" && !strings.EqualFold(h.Repository, r.ev.FullName())) {
			continue
		}
		c := cost.ClusterCost{Name: h.Cluster}
		if m, err := clusterops.MetaOf(h); err == nil && m.DailyCostNanos > 0 {
			c.Daily = cost.Money{Currency: cost.CurrencyEUR, Nanos: m.DailyCostNanos}
		} else if _, st, err := b.Ops.Load(ctx, h.Cluster); err == nil {
			q, qerr := clusterops.Quote(ctx, b.Quoter, st.Spec, 0, true)
			c.Daily, c.Unknown = q.Daily, qerr != nil || q.HasUnknown()
		} else {
			c.Daily, c.Unknown = cost.EUR(0, 0), true
		}
		out = append(out, c)
	}
	out = append(out, r.parkedCosts(ctx)...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// plan answers `/poc up --dry-run`: what would be created or changed and what it costs.
func (r *run) plan(ctx context.Context, spec provision.Spec, exists bool, inPlace, refused []provision.Change, ttl time.Duration, q cost.Quote, pf *preflight.Result, est *eta.Estimate) error {
	g := provision.NewGraph()
	if err := r.backend.Ops.Build(g, spec); err != nil {
		return r.fail(ctx, fmt.Errorf("build the plan of %q: %w", r.cluster, err))
	}
	groups := map[string]*commands.PlanGroup{}
	var order []string
	if !exists {
		for _, name := range g.Names() {
			n, _ := g.Node(name)
			grp, ok := groups[n.Kind]
			if !ok {
				grp = &commands.PlanGroup{Name: n.Kind}
				groups[n.Kind] = grp
				order = append(order, n.Kind)
			}
			grp.Items = append(grp.Items, commands.PlanItem{Kind: n.Kind, Name: name})
		}
	}
	v := commands.PlanView{Cluster: r.cluster, Changes: changes(inPlace, refused), TTL: ttl, Talos: spec.TalosVersion,
		AdminCIDRs: spec.AdminCIDRs, Cost: costView(r.cluster, q, time.Time{}, r.h.now(), time.Time{}), Preflight: withETA(preflightView(pf), est)}
	if exists {
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
func (r *run) upView(ctx context.Context, res *clusterops.Result, spec provision.Spec, q cost.Quote, inPlace []provision.Change) (commands.UpView, error) {
	st := res.State
	now := r.h.now()
	nodes := splitList(st.Outputs[cluster.OutTalosNodes])
	keep, keepIgnored := r.keepState(ctx)
	uv := commands.UpView{Cluster: r.cluster, Expires: res.Header.Expires, KeepLabel: r.cfg.KeepLabel,
		Keep: keep, KeepIgnored: keepIgnored, AdminCIDRs: spec.AdminCIDRs, Changes: changes(inPlace, nil),
		DailyCost: q.Daily.Format(2), AccruedCost: q.Accrued(res.Header.Created, now).Format(2), WorkerOffer: offerChoice(res.Preflight)}
	if spec.DNSZone != "" {
		uv.APIEndpoints = []string{hostPort(st.Outputs[cluster.OutAPIEndpoint])}
	} else {
		for _, ip := range nodes {
			uv.APIEndpoints = append(uv.APIEndpoints, ip+":6443")
		}
	}
	for _, ip := range nodes {
		uv.TalosEndpoints = append(uv.TalosEndpoints, ip+":50000")
	}
	uv.EdgeAddress = st.Outputs[cluster.OutWorkerIP]
	if spec.DNSZone != "" && uv.EdgeAddress != "" {
		uv.EdgeAddress = spec.FQDN(spec.DNSNames(r.cluster).Edge) + " (" + uv.EdgeAddress + ")"
	}
	acc, err := r.issueKubeconfig(ctx)
	uv.Kubeconfig = acc
	return uv, err
}

func hostPort(endpoint string) string {
	return strings.TrimSuffix(strings.TrimPrefix(endpoint, "https://"), "/")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// upSummary is the job summary of an up: endpoints, resources, cost.
func upSummary(name string, uv commands.UpView, st *provision.State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### pocbot: cluster `%s` is ready\n\n| | |\n|---|---|\n", name)
	fmt.Fprintf(&b, "| Kubernetes API | %s |\n| Talos API | %s |\n| Edge | %s |\n| Cost | %s per day |\n| Expires | %s |\n\n",
		strings.Join(uv.APIEndpoints, ", "), strings.Join(uv.TalosEndpoints, ", "), uv.EdgeAddress, uv.DailyCost,
		uv.Expires.UTC().Format(time.RFC3339))
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

// dnsZoneRefusal says why `--dns-zone zone` is refused and which setting allows it: any write
// user could otherwise add records to every zone the bot's API key reaches.
func dnsZoneRefusal(zone string, allowed []string) error {
	list := "none is listed"
	if len(allowed) > 0 {
		q := make([]string, len(allowed))
		for i, z := range allowed {
			q[i] = commands.Quote(z)
		}
		list = "allowed: " + strings.Join(q, ", ")
	}
	return fmt.Errorf("%w: --dns-zone %s is not a zone this repository allows (%s); a maintainer lists the zones clusters may use under `dns_zones` in `%s`",
		commands.ErrSyntax, commands.Quote(zone), list, repoconfig.Path)
}
