package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The warm pool's invariants (issue #33). acme/c keeps a pool (pool.size 1, max_age 2h); its
// scenes (poolScene) fill it (the schedule's pool pass), claim from it (`/poc up`, a pull
// request's cluster), claim one spare from two runs at once, let it go stale (a clock jump past
// max_age), crash a node of it (KindBreak: the re-check must refuse it), claim during a refill,
// kill a claim half-way, and run two passes at once. After every step and at the settle's start,
// from the state headers (and the states' resource IDs):
//   - a spare is handed out once: the clusters whose header says claimed_from S are one cluster,
//     over the whole history;
//   - never a stale spare handed out: a claim's cluster was created (at its run's clock) before
//     the spare's expiry, as last seen; a spare's record is never claimed at or past its expiry;
//   - never an unhealthy spare handed out: no claim of a spare after the harness crashed one of
//     its nodes, and no record both claimed and saying its re-check failed;
//   - the pool never above pool.size: counted are the repository's unclaimed spares that are
//     building, or ready, healthy by their record and fresh at the history's clock (a stale or
//     unhealthy spare is kept until its replacement is ready, by design, and a claimed one is
//     its claim's);
//   - a claimed cluster belongs to exactly one issue: its name is its issue's, and no resource
//     is recorded by two clusters' states (a spare's only by the cluster claimed from it);
//   - nothing orphaned after a killed claim once the pool pass ran: the settle empties the
//     pool (pool.size 0, the operator's end of a pool) and runs the schedule, after which the
//     orphan invariant holds (settled).

// poolLedger is what the pool's invariants remember across a history's steps.
type poolLedger struct {
	handed map[string]*handout     // spare → the claim that made a cluster of it, as first seen
	last   map[string]spare.Record // spare → its record as last seen
	broken map[string]int          // spare → the step at which the harness crashed a node of it
	// flagged keeps one violation per spare and invariant.
	flagged map[string]bool
	// Handouts counts the claims seen.
	Handouts int
	logf     func(string, ...any) // the history's verbose log (nil: quiet)
}

// handout is a claim seen: the cluster it made, and whether its time was held to the spare's
// expiry (a claim seen only in a comment or a job summary has no time).
type handout struct {
	cluster     string
	timeChecked bool
}

// clusters are the clusters claims made, sorted.
func (l *poolLedger) clusters() []string {
	var out []string
	for _, h := range l.handed {
		out = append(out, h.cluster)
	}
	slices.Sort(out)
	return out
}

// Unverified counts the claims whose time was never held to their spare's expiry: seen only in
// an answer, or of a spare never seen ready (built and claimed between two checks).
func (l *poolLedger) Unverified() int {
	n := 0
	for _, h := range l.handed {
		if !h.timeChecked {
			n++
		}
	}
	return n
}

func newPoolLedger() *poolLedger {
	return &poolLedger{handed: map[string]*handout{}, last: map[string]spare.Record{}, broken: map[string]int{}, flagged: map[string]bool{}}
}

// poolView is what one check of the pool reads.
type poolView struct {
	Step    int
	Headers []statestore.Header
	// Resources are the resource IDs each state records, by cluster (spares included).
	Resources map[string][]string
	// Now is the history's clock (the newest offset); Sizes each pool's size, by repository.
	Now   time.Time
	Sizes map[string]int
}

// Invariant names of the pool.
const (
	invOnce      = "a spare is handed out once"
	invStale     = "never a stale spare handed out"
	invUnhealthy = "never an unhealthy spare handed out"
	invSize      = "the pool never above pool.size"
	invOneIssue  = "a claimed cluster belongs to exactly one issue"
)

// check checks v and remembers what later checks need.
func (l *poolLedger) check(v poolView) []Violation {
	var out []Violation
	add := func(inv, key, f string, a ...any) {
		if l.flagged[inv+" "+key] {
			return
		}
		l.flagged[inv+" "+key] = true
		out = append(out, Violation{Step: v.Step, Invariant: inv, Detail: fmt.Sprintf(f, a...)})
	}
	fromOf := map[string]string{} // cluster → the spare it was claimed from
	for _, h := range v.Headers {
		if spare.Is(h) {
			continue
		}
		x := h.Labels[spare.LabelClaimedFrom]
		if x == "" {
			continue
		}
		fromOf[h.Cluster] = x
		l.handout(h, x, add)
		owner, name, _ := strings.Cut(h.Repository, "/")
		if want := commands.ClusterName(owner, name, h.Number); want != h.Cluster {
			add(invOneIssue, h.Cluster, "%s, claimed from %s, is recorded for %s#%d, whose cluster is %s", h.Cluster, x, h.Repository, h.Number, want)
		}
	}
	unclaimed := map[string]int{}
	for _, h := range v.Headers {
		if !spare.Is(h) {
			continue
		}
		rec, err := spare.Of(h)
		if err != nil {
			continue // the bot replaces it; nothing to hold it to
		}
		prev, seen := l.last[rec.Name]
		if rec.ClaimedBy != "" && !rec.ClaimedAt.IsZero() && !rec.Stale.IsZero() && !rec.ClaimedAt.Before(rec.Stale) {
			add(invStale, rec.Name, "%s claimed by %s at %s, its expiry was %s", rec.Name, rec.ClaimedBy, stamp(rec.ClaimedAt), stamp(rec.Stale))
		}
		// A claim re-reads the record and refuses an unhealthy one, a failed re-check refuses to
		// mark a claimed one: a record both claimed and unhealthy is a claim of an unhealthy spare.
		// (An unhealthy mark a later check clears is no fault: only the record at the claim says.)
		if rec.ClaimedBy != "" && rec.Unhealthy != "" {
			add(invUnhealthy, rec.Name, "%s claimed by %s while its record says: %s", rec.Name, rec.ClaimedBy, rec.Unhealthy)
		}
		if step, ok := l.broken[rec.Name]; ok && rec.ClaimedBy != "" && (!seen || prev.ClaimedBy == "") {
			add(invUnhealthy, rec.Name, "%s claimed by %s after a node of it was crashed at step %d", rec.Name, rec.ClaimedBy, step)
		}
		l.last[rec.Name] = rec
		if rec.ClaimedBy == "" && counts(rec, v.Now) {
			unclaimed[rec.Repository]++
		}
	}
	for _, repo := range slices.Sorted(maps.Keys(v.Sizes)) {
		if n, size := unclaimed[repo], v.Sizes[repo]; n > size {
			add(invSize, fmt.Sprintf("%s@%d", repo, v.Step), "%s holds %d spares building or fresh and unclaimed, pool.size is %d", repo, n, size)
		}
	}
	l.sharedResources(v, fromOf, add)
	return out
}

// warmPath is the status comment's Path row of a claim, naming the spare.
// (the status comment's table row, or the job summary's line).
var warmPath = regexp.MustCompile(`(?:\| Path \||Path:) warm: claimed a warm spare \([^)]*\): (spare-[a-z]+)`)

// answered checks a claim the bot's comment on repo#number reports (its Path row): a hand-out
// that came and went between two checks of the headers is seen here.
func (l *poolLedger) answered(step int, repo string, number int, body string) []Violation {
	owner, name, _ := strings.Cut(repo, "/")
	h := statestore.Header{Cluster: commands.ClusterName(owner, name, number), Repository: repo, Number: number}
	var out []Violation
	for _, m := range warmPath.FindAllStringSubmatch(body, -1) {
		l.handout(h, m[1], func(inv, key, f string, a ...any) {
			if l.flagged[inv+" "+key] {
				return
			}
			l.flagged[inv+" "+key] = true
			out = append(out, Violation{Step: step, Invariant: inv, Detail: fmt.Sprintf(f, a...)})
		})
	}
	return out
}

// handout checks the claim that made h's cluster of spare x (h.Created zero: seen in an answer).
func (l *poolLedger) handout(h statestore.Header, x string, add func(inv, key, f string, a ...any)) {
	first, ok := l.handed[x]
	if ok && first.cluster != h.Cluster {
		add(invOnce, x, "%s became %s, then %s", x, first.cluster, h.Cluster)
		return
	}
	if !ok {
		first = &handout{cluster: h.Cluster}
		l.handed[x] = first
		l.Handouts++
		if l.logf != nil {
			l.logf("    hand-out: %s became %s", x, h.Cluster)
		}
	}
	prev, seen := l.last[x]
	if !first.timeChecked && seen && !prev.Stale.IsZero() && !h.Created.IsZero() {
		first.timeChecked = true
		if !h.Created.Before(prev.Stale) {
			add(invStale, x, "%s became %s at %s, its expiry was %s", x, h.Cluster, stamp(h.Created), stamp(prev.Stale))
		}
	}
	if ok {
		return
	}
	if step, ok := l.broken[x]; ok {
		add(invUnhealthy, x, "%s became %s after a node of it was crashed at step %d", x, h.Cluster, step)
	}
}

// sharedResources checks that no resource is recorded by two clusters' states, but a spare's by
// the cluster claimed from it.
func (l *poolLedger) sharedResources(v poolView, fromOf map[string]string, add func(inv, key, f string, a ...any)) {
	spares := map[string]bool{}
	for _, h := range v.Headers {
		if spare.Is(h) {
			spares[h.Cluster] = true
		}
	}
	owner := map[string]string{}
	for _, cl := range slices.Sorted(maps.Keys(v.Resources)) {
		for _, id := range v.Resources[cl] {
			other, dup := owner[id]
			if !dup || other == cl {
				owner[id] = cl
				continue
			}
			// A spare and the cluster claimed from it share its machines until the spare's
			// document is forgotten.
			if (spares[other] && fromOf[cl] == other) || (spares[cl] && fromOf[other] == cl) {
				continue
			}
			add(invOneIssue, id, "resource %s is recorded by %s and by %s", id, other, cl)
		}
	}
}

// counts tells whether a spare counts against pool.size at now: building, or ready, healthy by its
// record and fresh.
func counts(r spare.Record, now time.Time) bool {
	switch r.Phase {
	case lifecycle.PhaseProvisioning:
		return true
	case lifecycle.PhaseReady:
		return r.Unhealthy == "" && !r.Stale.IsZero() && now.Before(r.Stale)
	}
	return false
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// poolScene is one of the warm pool's scenes on repo (a repository with a pool): what issue #33
// asks the soak to play. Every scene starts with the schedule (the pass fills the pool); the
// issues it ups are taken down at its end, mostly, so that the next scene's up claims again.
// Every event of a scene names repo (a clock jump or a wait too: it is the scene's).
func poolScene(r *rand.Rand, repo Repo) []Event {
	user := func() string { return []string{"ada", "wes"}[r.IntN(2)] }
	up := func(n int) Event {
		return Event{Kind: KindComment, Repo: repo.Name, Number: n, User: user(), Body: "/poc up"}
	}
	fill := Event{Kind: KindSchedule, Repo: repo.Name}
	async := func(e Event) Event { e.Async = true; return e }
	i1, i2 := repo.Issues[0], repo.Issues[1%len(repo.Issues)]
	var ev []Event
	switch r.IntN(8) {
	case 0: // a claim, then the refill
		ev = []Event{fill, up(i1), fill}
	case 7: // two passes at once (the schedule's and an operator's fill): the next scene claims
		ev = []Event{async(fill), async(fill)}
	case 1: // two runs claim the one spare at once
		ev = []Event{fill, async(up(i1)), async(up(i2)), {Kind: KindWait, Repo: repo.Name, Jump: time.Second}}
	case 2: // the spare goes stale before the claim
		ev = []Event{fill, {Kind: KindClock, Repo: repo.Name, Jump: 2*time.Hour + time.Duration(r.IntN(60))*time.Minute}, up(i1)}
	case 3: // a node of the spare dies before the claim: the re-check must refuse it
		ev = []Event{fill, {Kind: KindBreak, Repo: repo.Name}, up(i1)}
	case 4: // a claim while the schedule refills
		ev = []Event{fill, up(i1), async(fill), up(i2)}
	case 5: // the claim's run is killed half-way, and re-run
		k := up(i1)
		k.KillAfter = 1 + r.IntN(60)
		ev = []Event{fill, k}
	default: // a labeled pull request's cluster claims it; closing the pull request tears it down
		pr := repo.PRs[0].Number
		ev = []Event{fill, {Kind: KindPR, Repo: repo.Name, Number: pr, User: user(), Action: "labeled"},
			{Kind: KindPR, Repo: repo.Name, Number: pr, User: user(), Action: "closed"},
			// Unlabeled before it is reopened: the next scene's label claims again.
			{Kind: KindPR, Repo: repo.Name, Number: pr, User: user(), Action: "unlabeled"},
			{Kind: KindPR, Repo: repo.Name, Number: pr, User: user(), Action: "reopened"}}
	}
	if r.IntN(4) != 0 {
		for _, n := range []int{i1, i2} {
			ev = append(ev, Event{Kind: KindComment, Repo: repo.Name, Number: n, User: user(), Body: "/poc down"})
		}
	}
	return ev
}

// claimedSpares are the spares of headers that a claim made a cluster of (the cluster's header
// names it, or it names a cluster that exists): the budget counts each once, as that cluster.
func claimedSpares(headers []statestore.Header) map[string]bool {
	exists := map[string]bool{}
	out := map[string]bool{}
	for _, h := range headers {
		exists[h.Cluster] = true
		if from := h.Labels[spare.LabelClaimedFrom]; from != "" && !spare.Is(h) {
			out[from] = true
		}
	}
	for _, h := range headers {
		if !spare.Is(h) {
			continue
		}
		if rec, err := spare.Of(h); err == nil && rec.ClaimedBy != "" && exists[rec.ClaimedBy] {
			out[h.Cluster] = true
		}
	}
	return out
}

// afterPoolStep checks the pool's invariants on afterStep's listing, at the history's clock
// (step -1: the settle's, once every process has ended, on a listing of its own).
func (c *checker) afterPoolStep(ctx context.Context, step int, now time.Time) []Violation {
	if step < 0 {
		if err := c.reopen(ctx); err != nil {
			return []Violation{{Step: step, Invariant: "every state reads", Detail: err.Error()}}
		}
		hs, err := c.store.List(ctx)
		if err != nil {
			return []Violation{{Step: step, Invariant: "every state reads", Detail: err.Error()}}
		}
		c.headers = hs
	}
	sizes := map[string]int{}
	for _, r := range Repos() {
		if r.PoolSize > 0 {
			sizes[r.Name] = r.PoolSize
		}
	}
	// The shared image's snapshot is every cluster's: not one cluster's resource.
	shared := map[string]bool{}
	for _, r := range c.w.Scaleway.Inventory() {
		if provision.HasTag(r.Tags, provision.TagShared) {
			shared[r.ID] = true
		}
	}
	res := map[string][]string{}
	for _, hd := range c.headers {
		k := fmt.Sprintf("%s@%d", hd.Cluster, hd.Serial)
		if _, ok := c.daily[k]; !ok {
			if _, err := c.dailyOf(ctx, hd); err != nil {
				continue // deleted since the listing, or said by afterStep
			}
		}
		for _, id := range c.resIDs[k] {
			if !shared[id] {
				res[hd.Cluster] = append(res[hd.Cluster], id)
			}
		}
	}
	return c.pool.check(poolView{Step: step, Headers: c.headers, Resources: res, Now: now, Sizes: sizes})
}

// breakSpare crashes a Talos node (the worker's) of e.Repo's freshest ready, unclaimed spare, once
// every running process has ended (no claim is then half-way through its re-check), and tells
// the ledger: no claim may take the spare from now on.
func (h *history) breakSpare(ctx context.Context, step int, e Event) {
	if !h.quiesce() {
		return
	}
	c := h.checker
	if err := c.reopen(ctx); err != nil {
		h.logf("    break: %v", err)
		return
	}
	headers, _ := c.store.List(ctx)
	var pick *spare.Record
	for _, hd := range headers {
		rec, err := spare.Of(hd)
		if err != nil || !spare.Is(hd) || !strings.EqualFold(rec.Repository, e.Repo) || rec.Claimable(h.clock(), "") != "" {
			continue
		}
		if pick == nil || rec.Ready.After(pick.Ready) {
			pick = &rec
		}
	}
	if pick == nil {
		h.logf("    break: %s has no claimable spare", e.Repo)
		return
	}
	doc, err := c.store.Get(ctx, pick.Name)
	if err != nil {
		h.logf("    break: %s: %v", pick.Name, err)
		return
	}
	var st provision.State
	if err := json.Unmarshal(doc.Body, &st); err != nil {
		h.logf("    break: %s: %v", pick.Name, err)
		return
	}
	ip := st.Outputs[cluster.OutWorkerIP]
	if ip == "" || !h.w.Crash(ip) {
		h.logf("    break: %s: no node at its worker's address %q", pick.Name, ip)
		return
	}
	c.pool.broken[pick.Name] = step
	h.logf("    break: %s's worker %s is down", pick.Name, ip)
}
