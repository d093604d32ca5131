package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

// checker holds what the invariants read: the world, the state store (with the key: the harness
// plays the operator), prices from the dated table only (the same figures whatever the bots'
// sources said), and what was already scanned.
type checker struct {
	w       *world.World
	store   *statestore.Store
	quoter  *cost.Quoter
	daily   map[string]int64 // cluster@serial → daily nano-euros
	scanned map[int64]string // comment id → body last scanned
	checked map[*proc]bool
	lives   map[string][]life // cluster → its incarnations seen in state headers
	// workerRepo is the repository whose cluster an Elastic Metal server served first: a parked
	// worker goes to no other (no repository of the soak shares its parked workers).
	workerRepo map[string]string
	// offsetsAt gives the clock offsets of the processes running at an instant, for the
	// accrual check (nil: not checked).
	offsetsAt func(time.Time) []time.Duration
	// stepTimeout is the processes' bound, a job's timeout.
	stepTimeout time.Duration
	// written are the objects the history wrote, by cluster (kube.go); issued gives the newest
	// kubeconfig issued on an issue (nil: none).
	written      map[string]*incarnationObjects
	issued       func(ctx context.Context, repo string, number int) []byte
	readsResumed int
	writes       int // the counted changes of objects: creations, updates, deletions
	pauses       int // the pauses seen of a cluster holding counted objects
	// pool is the warm pool's ledger (pool.go); headers the last listing of afterStep, resIDs
	// the resource IDs of each state (cluster@serial).
	pool    *poolLedger
	headers []statestore.Header
	resIDs  map[string][]string
}

func newChecker(ctx context.Context, w *world.World) (*checker, error) {
	if w.S3 == nil {
		return nil, errors.New("soak: the world has no S3 server (versitygw must be installed)")
	}
	c := &checker{w: w, quoter: cost.NewQuoter(cost.TableSource{}), daily: map[string]int64{},
		scanned: map[int64]string{}, checked: map[*proc]bool{}, lives: map[string][]life{}, written: map[string]*incarnationObjects{},
		workerRepo: map[string]string{}, pool: newPoolLedger(), resIDs: map[string][]string{}}
	return c, c.reopen(ctx)
}

// reopen gives the checker a store that remembers nothing: a store's reader refuses a serial
// lower than one it saw, and a cluster torn down and made again legitimately starts over.
func (c *checker) reopen(ctx context.Context) error {
	if c.store != nil {
		c.store.Close()
		c.store = nil
	}
	b, err := c.w.S3.OpenBucket(ctx, world.StateBucket)
	if err != nil {
		return err
	}
	st, err := statestore.Open(ctx, statestore.Config{StateURL: c.w.StateURL, KeyURL: c.w.StateKey}, statestore.WithBucket(b))
	if err != nil {
		b.Close()
		return fmt.Errorf("soak: open the state store: %w", err)
	}
	c.store = st
	return nil
}

func (c *checker) close() {
	if c.store != nil {
		c.store.Close()
	}
}

// afterStep checks what must hold at every instant.
func (c *checker) afterStep(ctx context.Context, step int, procs []*proc) []Violation {
	var out []Violation
	add := func(inv, f string, a ...any) {
		out = append(out, Violation{Step: step, Invariant: inv, Detail: fmt.Sprintf(f, a...)})
	}
	if err := c.reopen(ctx); err != nil {
		add("every state reads", "opening the store: %v", err)
		return out
	}
	// The budget of every repository, from the states (what the bots count) priced by the table.
	headers, err := c.store.List(ctx)
	if err != nil {
		add("every state reads", "listing the states: %v", err)
	}
	c.headers = headers
	count := map[string]int{}
	daily := map[string]int64{}
	claimed := claimedSpares(headers)
	for _, hd := range headers {
		if claimed[hd.Cluster] {
			continue // the cluster it became counts it (the bot's budget counts a claim once)
		}
		count[hd.Repository]++
		d, err := c.dailyOf(ctx, hd)
		if errors.Is(err, statestore.ErrNotFound) {
			count[hd.Repository]--
			continue // deleted since the listing
		}
		if err != nil {
			add("every state decrypts", "%s: %v", hd.Cluster, err)
			continue
		}
		daily[hd.Repository] += d
		c.noteLife(hd, d)
	}
	out = append(out, c.objectsHeld(ctx, step, headers)...)
	for _, r := range Repos() {
		if count[r.Name] > r.MaxClusters {
			add("budget: max_clusters", "%s has %d clusters, max_clusters is %d", r.Name, count[r.Name], r.MaxClusters)
		}
		if daily[r.Name] > r.MaxDailyNanoEUR {
			add("budget: max_daily_eur", "%s's clusters cost %s € a day, max_daily_eur is %s", r.Name,
				cost.EUR(0, daily[r.Name]).Format(2), cost.EUR(0, r.MaxDailyNanoEUR).Format(2))
		}
	}
	// No duplicate of a node's resource in one cluster (a retried create that made a second).
	seen := map[string]string{}
	inventory := c.w.Scaleway.Inventory()
	for _, res := range inventory {
		if provision.HasTag(res.Tags, provision.TagShared) {
			continue
		}
		var cl, node string
		for _, t := range res.Tags {
			if v, ok := strings.CutPrefix(t, provision.ClusterTag("")); ok {
				cl = v
			}
			if v, ok := strings.CutPrefix(t, provision.ResTag("")); ok {
				node = v
			}
		}
		if cl == "" || node == "" {
			continue
		}
		k := res.Kind + " " + cl + "/" + node
		if other, dup := seen[k]; dup {
			add("one resource per node", "%s twice: %s and %s", k, other, res.ID)
		}
		seen[k] = res.ID
	}
	repoOf := map[string]string{}
	for _, hd := range headers {
		repoOf[hd.Cluster] = hd.Repository
	}
	for _, m := range crossRepoWorkers(inventory, repoOf, c.workerRepo) {
		add("a parked worker serves its own repository", "%s", m)
	}
	// A paused cluster bills no machine: a cluster whose state read paused, at the same serial,
	// before and after the inventory was listed had none in it (a pause or a resume running
	// between the reads writes its state, and is left for the next step's check).
	if again, err := c.store.List(ctx); err == nil {
		before := map[string]int64{}
		for _, hd := range headers {
			if hd.Phase == string(lifecycle.PhasePaused) {
				before[hd.Cluster] = hd.Serial
			}
		}
		paused := map[string]bool{}
		for _, hd := range again {
			if s, ok := before[hd.Cluster]; ok && s == hd.Serial && hd.Phase == string(lifecycle.PhasePaused) {
				paused[hd.Cluster] = true
			}
		}
		for _, m := range billedWhilePaused(inventory, paused) {
			add("a paused cluster has no billed compute", "%s", m)
		}
	}
	// No secret anywhere a person can read.
	for _, cm := range c.w.GitHub.AllComments() {
		if c.scanned[cm.ID] == cm.Body {
			continue
		}
		c.scanned[cm.ID] = cm.Body
		if commands.ContainsSecret(cm.Body) {
			add("no secret in a comment", "comment %d on %s#%d", cm.ID, cm.Repo, cm.Number)
		}
		if cm.AuthorType == "Bot" {
			out = append(out, c.pool.answered(step, cm.Repo, cm.Number, cm.Body)...)
			if detail, ok := c.checkAccrual(cm); !ok {
				add("accrued cost follows the per-hour rule", "%s", detail)
			}
		}
	}
	for _, p := range procs {
		select {
		case <-p.done:
		default:
			continue
		}
		if c.checked[p] {
			continue
		}
		c.checked[p] = true
		out = append(out, c.checkProcess(step, p)...)
	}
	return out
}

// lastLines is the end of a process's output, for a violation's detail.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "      " + strings.Join(lines, "\n      ")
}

var commentCreate = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)/comments$`)

// checkProcess checks one finished process: nothing secret in what it printed, and — for a
// command comment it acted on and was not killed during — 👀 before anything else it changed on
// GitHub, an answer, and at most two new comments (the sticky status and one notification).
func (c *checker) checkProcess(step int, p *proc) []Violation {
	var out []Violation
	add := func(inv, f string, a ...any) {
		out = append(out, Violation{Step: step, Invariant: inv, Detail: fmt.Sprintf(f, a...)})
	}
	for _, line := range strings.Split(p.result.Output, "\n") {
		// ::add-mask:: is how a value is hidden: the runner never shows that line.
		if strings.HasPrefix(line, "::add-mask::") {
			continue
		}
		if commands.ContainsSecret(line) {
			add("no secret in a log, summary or step output", "%s: %s", p.event, commands.Redact(line))
			break
		}
	}
	if p.event.Kind == KindComment || p.event.Kind == KindPR {
		// Its job summary says the claim it made, if any: one the headers may never show.
		out = append(out, c.pool.answered(step, p.event.Repo, p.event.Number, p.result.Output)...)
	}
	if p.timedOut {
		// A run that never ends holds its lock and its runner until the job's timeout: a hang.
		add("every run ends before its job's timeout", "%s: still running after %s; its last lines:\n%s",
			p.event, c.stepTimeout, commands.Redact(lastLines(p.result.Output, 12)))
	}
	if p.event.Kind != KindComment || p.killed || p.result.Ignored != "" || p.result.Err != nil || p.comment == 0 {
		return out
	}
	var mutating []ghRequest
	var firstTry *ghRequest // the first change the process asked of GitHub, answered or not
	creates, answers := 0, 0
	for _, r := range p.gh.requests() {
		// The App's own token mint is not a change anyone sees.
		if r.Method == "GET" || strings.HasPrefix(r.Path, "/app/") {
			continue
		}
		if firstTry == nil {
			firstTry = &r
		}
		// What the users see is what took effect: a comment GitHub created, then answered 500
		// for, is an answer (and a second copy of it would be counted).
		if !r.tookEffect() {
			continue
		}
		mutating = append(mutating, r)
		if m := commentCreate.FindStringSubmatch(r.Path); m != nil && m[1] == fmt.Sprint(p.event.Number) {
			creates++
			answers++
		}
		if r.Method == "PATCH" && strings.Contains(r.Path, "/issues/comments/") {
			answers++
		}
	}
	eyes := fmt.Sprintf("/issues/comments/%d/reactions", p.comment)
	isEyes := func(r ghRequest) bool { return r.Method == "POST" && strings.HasSuffix(r.Path, eyes) }
	// 👀 first: the first change that took effect, or — when every try of the reaction was refused
	// (four injected faults in a row happen in a long soak) — the first change asked for.
	if (len(mutating) == 0 || !isEyes(mutating[0])) && (firstTry == nil || !isEyes(*firstTry)) {
		first := "nothing"
		if len(mutating) > 0 {
			first = mutating[0].Method + " " + mutating[0].Path
		}
		add("👀 first", "%s: the first change on GitHub was %s", p.event, first)
	}
	if answers == 0 {
		add("every command is answered", "%s: no comment created or edited", p.event)
	}
	if creates > 2 {
		add("at most two new comments per command", "%s: %d comments created", p.event, creates)
	}
	return out
}

// dailyOf prices a cluster's spec (from its decrypted state) with the dated table.
func (c *checker) dailyOf(ctx context.Context, hd statestore.Header) (int64, error) {
	k := fmt.Sprintf("%s@%d", hd.Cluster, hd.Serial)
	if d, ok := c.daily[k]; ok {
		return d, nil
	}
	doc, err := c.store.Get(ctx, hd.Cluster)
	if err != nil {
		return 0, err
	}
	var st provision.State
	if err := json.Unmarshal(doc.Body, &st); err != nil {
		return 0, fmt.Errorf("state body: %w", err)
	}
	var ids []string
	for _, r := range st.Resources {
		if r != nil && r.ID != "" {
			ids = append(ids, r.ID)
		}
	}
	c.resIDs[k] = ids
	if st.Spec.Zone == "" {
		c.daily[k] = 0 // a document written before its spec: nothing can have been created yet
		return 0, nil
	}
	q, err := clusterops.Quote(ctx, c.quoter, st.Spec, time.Hour, true)
	// A paused cluster has no machine, nor has a paused one being torn down (its destroying
	// phase keeps the paused price the bot recorded): the reserved IPs (unless released), the
	// shared image, the snapshot.
	noMachine := st.Resources[scaleway.NodeWorker] == nil
	for i := range st.Spec.CPCount {
		noMachine = noMachine && st.Resources[scaleway.NodeServer(i)] == nil
	}
	if hd.Phase == string(lifecycle.PhasePaused) || (hd.Phase == string(lifecycle.PhaseDestroying) && noMachine) {
		_, kept := st.Resources[scaleway.NodeIP(0)]
		snap, _ := cluster.ParseSnapshot(st.Outputs[cluster.OutEtcdSnapshot])
		q, err = clusterops.QuotePaused(ctx, c.quoter, st.Spec, snap.Size, !kept, time.Hour)
	}
	if err != nil {
		return 0, err
	}
	d := q.Daily.Nanos
	c.daily[k] = d
	return d, nil
}

// billedWhilePaused lists the machines of inventory (servers, volumes, Elastic Metal servers not
// parked) that belong to a paused cluster, as "cluster: kind name".
func billedWhilePaused(inventory []scwsim.Resource, paused map[string]bool) []string {
	var out []string
	for _, res := range inventory {
		if res.Kind != "instance_server" && res.Kind != "block_volume" && res.Kind != "baremetal_server" {
			continue
		}
		for cl := range paused {
			if provision.OwnedBy(res.Tags, cl) {
				out = append(out, cl+": "+res.Kind+" "+res.Name)
			}
		}
	}
	return out
}

// atRest runs once every process has ended and every lease has run out: no lock may still be
// held, and every state decrypts.
func (c *checker) atRest(ctx context.Context, now time.Time) []Violation {
	var out []Violation
	if err := c.reopen(ctx); err != nil {
		return []Violation{{Step: -1, Invariant: "every state reads", Detail: err.Error()}}
	}
	headers, err := c.store.List(ctx)
	if err != nil {
		return []Violation{{Step: -1, Invariant: "every state reads", Detail: err.Error()}}
	}
	out = append(out, c.objectsHeld(ctx, -1, headers)...)
	names := map[string]bool{}
	for _, hd := range headers {
		names[hd.Cluster] = true
		if _, err := c.store.Get(ctx, hd.Cluster); err != nil && !errors.Is(err, statestore.ErrNotFound) {
			out = append(out, Violation{Step: -1, Invariant: "every state decrypts", Detail: hd.Cluster + ": " + err.Error()})
		}
	}
	for _, r := range Repos() {
		owner, name, _ := strings.Cut(r.Name, "/")
		for _, n := range append(append([]int{}, r.Issues...), prNumbers(r)...) {
			names[commands.ClusterName(owner, name, n)] = true
		}
	}
	// A paused cluster bills no machine: no server, volume or (unparked) Elastic Metal server of
	// its own is left once its pause ended.
	paused := map[string]bool{}
	for _, hd := range headers {
		if hd.Phase == string(lifecycle.PhasePaused) {
			paused[hd.Cluster] = true
		}
	}
	for _, m := range billedWhilePaused(c.w.Scaleway.Inventory(), paused) {
		out = append(out, Violation{Step: -1, Invariant: "a paused cluster has no billed compute", Detail: m})
	}
	for cl := range names {
		li, err := c.store.ReadLock(ctx, cl)
		if err != nil && !errors.Is(err, statestore.ErrNotFound) {
			out = append(out, Violation{Step: -1, Invariant: "locks read", Detail: cl + ": " + err.Error()})
			continue
		}
		if li != nil && li.Expires.After(now) {
			out = append(out, Violation{Step: -1, Invariant: "no lock held after its lease",
				Detail: fmt.Sprintf("%s held by %s (%s) until %s, with no process running", cl, li.Actor, li.Command, li.Expires.Format(time.RFC3339))})
		}
	}
	return out
}

func prNumbers(r Repo) []int {
	var out []int
	for _, p := range r.PRs {
		out = append(out, p.Number)
	}
	return out
}

// settled runs after the schedules that came 30 days later: every cluster has expired, so
// nothing billed may be left but the shared image, and no state.
func (c *checker) settled(ctx context.Context, now time.Time, procs []*proc) []Violation {
	var out []Violation
	for _, p := range procs {
		if c.checked[p] {
			continue
		}
		select {
		case <-p.done:
		default:
			// Only when the history's context ended (a shrink's bound) can one still run: its
			// result is not written yet.
			out = append(out, Violation{Step: -1, Invariant: "every run finishes", Detail: p.event.String() + ": still running at the end"})
			continue
		}
		c.checked[p] = true
		out = append(out, c.checkProcess(-1, p)...)
	}
	left := billedLeft(c.w.Scaleway.Inventory())
	left = append(left, c.parkedLeft(ctx, now)...)
	sort.Strings(left)
	for _, l := range left {
		out = append(out, Violation{Step: -1, Invariant: "nothing orphaned after the grace period", Detail: l})
	}
	if err := c.reopen(ctx); err != nil {
		return append(out, Violation{Step: -1, Invariant: "every state reads", Detail: err.Error()})
	}
	headers, err := c.store.List(ctx)
	if err != nil {
		return append(out, Violation{Step: -1, Invariant: "every state reads", Detail: err.Error()})
	}
	for _, hd := range headers {
		out = append(out, Violation{Step: -1, Invariant: "an expired cluster is torn down",
			Detail: fmt.Sprintf("%s (%s#%d, phase %s) still has its state 30 days later", hd.Cluster, hd.Repository, hd.Number, hd.Phase)})
	}
	return out
}

// billedLeft lists what inventory still bills once every cluster is gone: everything the bot
// tagged with a cluster (a spare's included) but the shared image, its SSH keys, DNS records.
func billedLeft(inventory []scwsim.Resource) []string {
	var left []string
	for _, res := range inventory {
		if provision.HasTag(res.Tags, provision.TagShared) {
			continue
		}
		switch {
		case strings.Contains(strings.Join(res.Tags, ","), provision.ClusterTag("")),
			res.Kind == "iam_ssh_key" && strings.HasPrefix(res.Name, "poc-"),
			res.Kind == "domain_record":
			left = append(left, res.Kind+" "+res.Name+" "+strings.Join(res.Tags, ","))
		}
	}
	return left
}

// parkedLeft lists the parked workers still there 30 days later: a server tagged pocbot-parked
// that no pool entry records is an orphan, and one the pool records is a park the reaper let
// outlive its parked-until. (While a park lasts, a tagged server with its entry is no orphan.)
func (c *checker) parkedLeft(ctx context.Context, now time.Time) []string {
	if err := c.reopen(ctx); err != nil {
		return []string{"parked-worker pool: " + err.Error()}
	}
	d, err := (&poolstore.Pool{Store: c.store}).List(ctx)
	if err != nil {
		return []string{"parked-worker pool: " + err.Error()}
	}
	return parkedOrphans(c.w.Scaleway.Inventory(), d, now)
}

// crossRepoWorkers lists the Elastic Metal servers that a cluster of one repository runs after
// one of another repository ran them (seen: server → the first repository, updated here;
// repoOf: cluster → repository, from the state headers).
func crossRepoWorkers(inv []scwsim.Resource, repoOf, seen map[string]string) []string {
	var out []string
	for _, res := range inv {
		if res.Kind != "baremetal_server" {
			continue
		}
		var cl string
		for _, t := range res.Tags {
			if v, ok := strings.CutPrefix(t, provision.ClusterTag("")); ok {
				cl = v
			}
		}
		repo, ok := repoOf[cl]
		if cl == "" || !ok {
			continue
		}
		first, was := seen[res.ID]
		switch {
		case !was:
			seen[res.ID] = repo
		case !strings.EqualFold(first, repo):
			out = append(out, fmt.Sprintf("%s %s: served a cluster of %s, now %s of %s", res.Kind, res.ID, first, cl, repo))
		}
	}
	return out
}

// parkedOrphans is the decision of parkedLeft, on an inventory and a pool read at now.
func parkedOrphans(inv []scwsim.Resource, d pool.Doc, now time.Time) []string {
	var out []string
	for _, res := range inv {
		if res.Kind != "baremetal_server" || !provision.HasTag(res.Tags, scaleway.ParkedTag) {
			continue
		}
		w, ok := d.Find(res.ID)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s %s %s: parked, in no pool entry", res.Kind, res.Name, res.ID))
		case !now.Before(w.ParkedUntil):
			out = append(out, fmt.Sprintf("%s %s %s: parked until %s, not deleted", res.Kind, res.Name, res.ID, w.ParkedUntil.Format(time.RFC3339)))
		}
	}
	return out
}
