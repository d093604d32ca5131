package soak

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// Kind is what an event does.
type Kind string

// The events of a history.
const (
	// KindComment: a user comments on an issue or pull request (Edit: edits an older comment).
	KindComment Kind = "comment"
	// KindPR: a pull-request event (labeled, unlabeled, closed, reopened, merged).
	KindPR Kind = "pull_request"
	// KindSchedule: the workflow's cron runs the reaper.
	KindSchedule Kind = "schedule"
	// KindClock: the bots' clock jumps forward (expiry, warnings, grace periods).
	KindClock Kind = "clock"
	// KindWait: the harness lets the running processes progress.
	KindWait Kind = "wait"
	// KindKube: a user changes objects in the cluster of Repo#Number with the kubeconfig the bot
	// issued them (kube.go): Action "configmaps" or "secrets" creates a few, "update" gives one a
	// new value, "delete" deletes one.
	KindKube Kind = "kube"
	// KindBreak: a Talos node of Repo's freshest ready, unclaimed spare dies (its worker's), once
	// every running process has ended: a claim's re-check must refuse the spare (pool.go).
	KindBreak Kind = "break"
)

// Faults is what a process's wire does to its requests, each a probability per request.
type Faults struct {
	// Rate5xx answers 503 before the request reaches the service (safe to retry); on the Talos
	// nodes, the same rate of calls is answered Unavailable (talossim.Faults).
	Rate5xx float64
	// Rate429 answers 429 with Retry-After: 1 before the request reaches the service.
	Rate429 float64
	// AfterEffect lets a mutating request take effect, then answers 500 (a comment creation too:
	// the bot finds it by its post marker before it sends it again).
	AfterEffect float64
	// Slow delays the answer by up to SlowMax (Talos calls too).
	Slow    float64
	SlowMax time.Duration
}

// Event is one step of a history. Every field is decided by the seed.
type Event struct {
	Kind   Kind
	Repo   string
	Number int
	User   string
	Body   string
	Edit   bool   // KindComment: an edit of the user's previous comment (action "edited")
	Action string // KindPR
	Jump   time.Duration
	// Async starts the process and goes on with the next event without waiting for it.
	Async bool
	// KillAfter > 0 cuts the process's wire at its KillAfter-th request (a SIGKILL as seen from
	// the outside); the event is then delivered again, as GitHub's re-run would.
	KillAfter int
	Faults    Faults
}

func (e Event) String() string {
	var b strings.Builder
	switch e.Kind {
	case KindComment:
		verb := "comments"
		if e.Edit {
			verb = "edits a comment"
		}
		fmt.Fprintf(&b, "%s %s on %s#%d: %q", e.User, verb, e.Repo, e.Number, e.Body)
	case KindPR:
		fmt.Fprintf(&b, "%s#%d %s by %s", e.Repo, e.Number, e.Action, e.User)
	case KindSchedule:
		b.WriteString("schedule (bot reap)")
	case KindClock:
		fmt.Fprintf(&b, "clock +%s", e.Jump)
	case KindWait:
		fmt.Fprintf(&b, "wait %s", e.Jump)
	case KindBreak:
		fmt.Fprintf(&b, "a node of %s's spare dies", e.Repo)
	case KindKube:
		what := "writes " + e.Action
		if e.Action == kubeUpdate || e.Action == kubeDelete {
			what = e.Action + "s an object"
		}
		fmt.Fprintf(&b, "%s %s with the kubeconfig the bot issued on %s#%d", e.User, what, e.Repo, e.Number)
	}
	if e.Async {
		b.WriteString(" [async]")
	}
	if e.KillAfter > 0 {
		fmt.Fprintf(&b, " [killed at request %d, then re-run]", e.KillAfter)
	}
	if e.Faults != (Faults{}) {
		fmt.Fprintf(&b, " [faults 5xx=%.2f 429=%.2f after-effect=%.2f slow=%.2f]", e.Faults.Rate5xx, e.Faults.Rate429, e.Faults.AfterEffect, e.Faults.Slow)
	}
	return b.String()
}

// Repo is one repository of the soak's world, with its `.github/poc.yml`.
type Repo struct {
	Name   string
	Config string
	// MaxClusters and MaxDailyNanoEUR restate the config's budget for the invariant.
	MaxClusters     int
	MaxDailyNanoEUR int64
	Issues          []int
	PRs             []PR
	// PoolSize restates the config's pool.size (0: no pool); SettleConfig is the config the
	// settle runs the schedule with ("": Config): a pool's is emptied (pool.size 0).
	PoolSize     int
	SettleConfig string
}

// PR is a pull request of a soak repository.
type PR struct {
	Number      int
	Draft, Fork bool
}

// Users are the soak's GitHub users by permission ("" = not a collaborator).
var Users = map[string]string{"ada": "admin", "wes": "write", "tia": "triage", "rea": "read", "nob": ""}

// Repos is the world every history runs in: one repository capped by count, one by daily cost.
// acme/b's 10 € a day fits two seed clusters (4.30 €) or three with one control plane (2.98 €),
// and refuses any mix above that by at least 0.26 € — far more than the difference between
// price sources. Both sign service-account tokens with ECDSA keys: an RSA-4096 key was a third
// of a history's CPU, and the key type changes nothing between processes (the default RSA path
// runs in every other end-to-end test and the demo).
func Repos() []Repo {
	return []Repo{
		{Name: "acme/a", Config: "max_clusters: 1\nwarn_before: 1h\nservice_account_key: ecdsa\n", MaxClusters: 1, MaxDailyNanoEUR: 15e9,
			Issues: []int{1, 2, 3}, PRs: []PR{{Number: 10}, {Number: 11, Draft: true}, {Number: 12, Fork: true}}},
		// acme/b parks its workers: its downs and the reaper's teardowns keep them in the pool,
		// its ups adopt them; acme/a's never do (one state bucket, one pool, but a parked worker
		// serves the repository that parked it: neither shares).
		// Its schedule pauses its ready clusters every night (the reaper's scheduled pass); a
		// command in the window resumes one.
		{Name: "acme/b", Config: "max_clusters: 5\nmax_daily_eur: 10\npark_for: 2h\nservice_account_key: ecdsa\npause_schedule: daily 20:00-08:00 UTC\n", MaxClusters: 5, MaxDailyNanoEUR: 10e9,
			Issues: []int{1, 2}, PRs: []PR{{Number: 10}}},
		// acme/c keeps a warm pool of one spare, stale after 2 hours: only its scenes
		// (poolScene) play on it. Its budget holds its two issues' and its pull request's
		// clusters and the spare (spares count as running clusters).
		{Name: "acme/c", Config: "max_clusters: 4\nservice_account_key: ecdsa\npool:\n  size: 1\n  max_age: 2h\n", MaxClusters: 4, MaxDailyNanoEUR: 1e12,
			Issues: []int{1, 2}, PRs: []PR{{Number: 10}}, PoolSize: 1,
			SettleConfig: "max_clusters: 4\nservice_account_key: ecdsa\npool:\n  size: 0\n"},
	}
}

// WorldConfig is what a history decides about its world before the first event.
type WorldConfig struct {
	// Quotas limit the emulated project's live resources (nil: none), so that an up runs into
	// Scaleway's quota error half-way.
	Quotas map[string]int
	// OrgQuotas are the organization's quotas (what the up's pre-flight reads and every create
	// is held to). Scaleway's defaults (scwsim.DocumentedQuotas) fit one seed cluster, so most
	// histories raise them explicitly (RaisedQuotas); some keep the defaults, where the second
	// cluster is refused by the pre-flight with nothing created.
	OrgQuotas map[string]int
	// Clock is the time of day (UTC) of the bots' clock when the history starts: half the
	// histories start inside acme/b's nightly pause window, where its scheduled passes pause its
	// clusters and its commands resume them, half outside, whenever the soak runs.
	Clock time.Duration
}

// startClock is the Clock of a history drawn from r: inside acme/b's pause window (20:00–08:00
// UTC) or outside it, at a random minute at least two hours before the window ends or begins.
func startClock(r *rand.Rand) time.Duration {
	m := time.Duration(r.IntN(60)) * time.Minute
	if r.IntN(2) == 0 {
		return time.Duration((20+r.IntN(10))%24)*time.Hour + m // 20:00–05:59
	}
	return 8*time.Hour + time.Duration(r.IntN(10))*time.Hour + m // 08:00–17:59
}

// RaisedQuotas are the identity-validated quotas times ten: room for every cluster a history's
// repositories may hold at once (their max_clusters), parked workers included.
func RaisedQuotas() map[string]int {
	q := scwsim.IdentityValidatedQuotas()
	for k, v := range q {
		q[k] = 10 * max(v, 1)
	}
	return q
}

// WorldOf returns the world of seed's history: a pure function of seed.
func WorldOf(seed uint64) WorldConfig {
	r := rand.New(rand.NewPCG(seed^0x5eed, seed))
	var wc WorldConfig
	switch r.IntN(6) {
	case 0:
		// one seed cluster, then the 2nd's 2nd server fails: a quota the pre-flight cannot see
		// (another project's use), refused during the run
		wc = WorldConfig{Quotas: map[string]int{"instances": 4}, OrgQuotas: RaisedQuotas()}
	case 1:
		wc = WorldConfig{Quotas: map[string]int{"ips": 4}, OrgQuotas: RaisedQuotas()}
	case 2:
		wc = WorldConfig{OrgQuotas: scwsim.DocumentedQuotas()} // the pre-flight refuses the second cluster
	default:
		wc = WorldConfig{OrgQuotas: RaisedQuotas()}
	}
	wc.Clock = startClock(r)
	return wc
}

// clockOffset is the offset that puts a clock at real time now on the time of day at.
func clockOffset(now time.Time, at time.Duration) time.Duration {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	off := day.Add(at).Sub(now)
	for off < 0 {
		off += 24 * time.Hour
	}
	return off
}

// poolSceneOdds: one draw in this many plays a pool scene (about one a 50-event history: each
// builds a spare, a cluster's build).
const poolSceneOdds = 40

// BotUser stands for the App's own login in a history: its comments must never be commands.
const BotUser = "[bot]"

// Generate returns the history of seed: n events. It is a pure function of (seed, n).
func Generate(seed uint64, n int) []Event {
	return generate(seed, n, true)[:n]
}

// GenerateNoPool is Generate without the warm pool's scenes: the other repositories' events are
// the same as Generate's (the scenes are drawn from a stream of their own), only not cut short
// by the scenes.
func GenerateNoPool(seed uint64, n int) []Event {
	return generate(seed, n, false)[:n]
}

func generate(seed uint64, n int, withPool bool) []Event {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// The pool's scenes have a stream of their own, and are put in between the other events once
	// these are drawn (which look back at the history: the last up, the last pause): adding or
	// changing them leaves the other repositories' events as they were.
	pr := rand.New(rand.NewPCG(seed^0x9001, seed^0x600dcafe))
	scenes := map[int][]Event{} // before the other events' index
	// The pool's repositories play their scenes only (poolScene); the others everything else.
	var repos, pools []Repo
	for _, repo := range Repos() {
		if repo.PoolSize > 0 {
			pools = append(pools, repo)
		} else {
			repos = append(repos, repo)
		}
	}
	users := []string{"ada", "wes", "wes", "tia", "rea", "nob", BotUser}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	var out []Event
	for len(out) < n {
		if withPool && len(pools) > 0 && pr.IntN(poolSceneOdds) == 0 {
			scenes[len(out)] = append(scenes[len(out)], poolScene(pr, pools[pr.IntN(len(pools))])...)
		}
		repo := repos[r.IntN(len(repos))]
		if r.IntN(12) == 0 {
			// A burst: several write users' `/poc up` on different issues at once — the
			// interleaving where budgets are decided.
			for _, num := range r.Perm(len(repo.Issues))[:1+r.IntN(len(repo.Issues))] {
				out = append(out, Event{Kind: KindComment, Repo: repo.Name, Number: repo.Issues[num], User: pick([]string{"ada", "wes"}),
					Body: "/poc up", Async: true})
			}
			continue
		}
		var e Event
		switch x := r.IntN(100); {
		case x < 8:
			// Mostly into the cluster of the last up, by its requester (the link is theirs).
			e = Event{Kind: KindKube, Repo: repo.Name, Number: repo.Issues[r.IntN(len(repo.Issues))], User: pick([]string{"ada", "wes"}),
				Action: pick([]string{"configmaps", "secrets", kubeUpdate, kubeDelete})}
			if last, ok := lastUp(out); ok && r.IntN(4) != 0 {
				e.Repo, e.Number, e.User = last.Repo, last.Number, last.User
			}
		case x < 62:
			num := repo.Issues[r.IntN(len(repo.Issues))]
			if r.IntN(3) == 0 {
				num = repo.PRs[r.IntN(len(repo.PRs))].Number
			}
			e = Event{Kind: KindComment, Repo: repo.Name, Number: num, User: pick(users), Body: commandBody(r), Edit: r.IntN(25) == 0}
			if e.User == BotUser {
				e.Body = "/poc down" // the App's own words are never a command (only it can post as itself)
			}
		case x < 74:
			pr := repo.PRs[r.IntN(len(repo.PRs))]
			e = Event{Kind: KindPR, Repo: repo.Name, Number: pr.Number, User: pick([]string{"ada", "wes", "tia"}),
				Action: pick([]string{"labeled", "labeled", "unlabeled", "closed", "reopened", "merged"})}
		case x < 82:
			e = Event{Kind: KindSchedule}
		case x < 88:
			e = Event{Kind: KindClock, Jump: time.Duration(1+r.IntN(10)) * 30 * time.Minute}
		default:
			e = Event{Kind: KindWait, Jump: time.Duration(50+r.IntN(400)) * time.Millisecond}
		}
		if e.Kind == KindComment || e.Kind == KindPR || e.Kind == KindSchedule {
			e.Async = r.IntN(3) == 0
			if r.IntN(8) == 0 {
				e.KillAfter = 1 + r.IntN(60)
			}
			if r.IntN(4) == 0 {
				e.Faults = Faults{Rate5xx: 0.05 * float64(r.IntN(3)), Rate429: 0.05 * float64(r.IntN(2)),
					AfterEffect: 0.05 * float64(r.IntN(3)), Slow: 0.1 * float64(r.IntN(2)), SlowMax: 300 * time.Millisecond}
				if r.IntN(4) == 0 {
					// A slow tail longer than the lock lease (3 s), renewed at a third of it: a
					// process stalled on one request while another waits for its lock.
					e.Faults.Slow, e.Faults.SlowMax = 0.05, 4*time.Second
				}
			}
		}
		if r.IntN(10) == 0 {
			// A plain up by a user who can write into the cluster, in the repository with room
			// for it: the histories' clusters that hold data through their nights.
			e = Event{Kind: KindComment, Repo: "acme/b", Number: 1 + r.IntN(2), User: pick([]string{"ada", "wes"}), Body: "/poc up"}
		}
		out = appendWithWrites(out, e, r)
		if e.Kind == KindComment && !e.Async && e.KillAfter == 0 && strings.HasPrefix(e.Body, "/poc up") && (e.User == "ada" || e.User == "wes") && r.IntN(2) == 0 {
			// A night: the requester pauses the cluster, and later someone resumes it, by
			// command or by any command inside acme/b's pause window; or the schedule
			// pauses it and a status resumes it.
			pause := Event{Kind: KindComment, Repo: e.Repo, Number: e.Number, User: e.User, Body: pick([]string{"/poc pause", "/poc pause", "/poc pause --release-ips"})}
			resume := Event{Kind: KindComment, Repo: e.Repo, Number: e.Number, User: pick([]string{"ada", "wes"}), Body: pick([]string{"/poc resume", "/poc status"})}
			if e.Repo == "acme/b" && r.IntN(2) == 0 {
				pause = Event{Kind: KindSchedule, Repo: e.Repo}
			}
			out = appendWithWrites(out, pause, r)
			if r.IntN(3) == 0 {
				out = append(out, Event{Kind: KindClock, Jump: time.Duration(1+r.IntN(4)) * time.Hour})
			}
			out = appendWithWrites(out, resume, r)
		}
	}
	if len(scenes) == 0 {
		return out
	}
	all := make([]Event, 0, len(out)+len(scenes)*6)
	for i, e := range out {
		all = append(all, scenes[i]...)
		all = append(all, e)
	}
	return all
}

// appendWithWrites appends e to events with the writes users make around it: after an up the
// requester writes into the cluster the up answered ready for; before a pause (a command, or the
// schedule's pass in acme/b's window) the requester writes and changes what is there (the pause
// must take the latest state with it), and after a resume they do again, between two pauses.
func appendWithWrites(events []Event, e Event, r *rand.Rand) []Event {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	writes := func(user string) []Event {
		return []Event{{Kind: KindKube, Repo: e.Repo, Number: e.Number, User: user, Action: pick("configmaps", "secrets")},
			{Kind: KindKube, Repo: e.Repo, Number: e.Number, User: user, Action: pick(kubeUpdate, kubeDelete)}}
	}
	pause := (e.Kind == KindComment && strings.HasPrefix(e.Body, "/poc pause")) || (e.Kind == KindSchedule && e.Repo != "")
	if pause {
		number := e.Number
		if e.Kind == KindSchedule { // the last up in the repository
			number = 0
			for i := len(events) - 1; i >= 0 && number == 0; i-- {
				if x := events[i]; x.Kind == KindComment && x.Repo == e.Repo && strings.HasPrefix(x.Body, "/poc up") && (x.User == "ada" || x.User == "wes") {
					number = x.Number
				}
			}
		}
		if last, ok := lastUpOn(events, e.Repo, number); ok {
			for _, w := range writes(last.User) {
				w.Number = number
				events = append(events, w)
			}
		}
	}
	events = append(events, e)
	switch {
	case e.Kind != KindComment || e.Async || e.KillAfter != 0:
	case strings.HasPrefix(e.Body, "/poc up") && (e.User == "ada" || e.User == "wes"):
		events = append(events, writes(e.User)[0])
	case strings.HasPrefix(e.Body, "/poc resume"), strings.HasPrefix(e.Body, "/poc status") && pausedBefore(events, e):
		if last, ok := lastUpOn(events, e.Repo, e.Number); ok {
			events = append(events, writes(last.User)...)
		}
	}
	return events
}

// pausedBefore tells whether the event before e, the last of events, paused e's cluster (a
// pause command on its issue, or the schedule of its repository).
func pausedBefore(events []Event, e Event) bool {
	for i := len(events) - 2; i >= 0; i-- {
		switch x := events[i]; {
		case x.Kind == KindKube || x.Kind == KindClock:
			continue
		case x.Kind == KindSchedule && x.Repo == e.Repo:
			return true
		default:
			return x.Kind == KindComment && x.Repo == e.Repo && x.Number == e.Number && strings.HasPrefix(x.Body, "/poc pause")
		}
	}
	return false
}

// lastUpOn is the last `/poc up` of ada or wes on repo#number: its user holds the key that
// opens the cluster's kubeconfig link.
func lastUpOn(events []Event, repo string, number int) (Event, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind == KindComment && e.Repo == repo && e.Number == number && strings.HasPrefix(e.Body, "/poc up") && (e.User == "ada" || e.User == "wes") {
			return e, true
		}
	}
	return Event{}, false
}

// lastUp is the last `/poc up` of ada or wes (who have SSH keys to open its kubeconfig link).
func lastUp(events []Event) (Event, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Kind == KindComment && strings.HasPrefix(e.Body, "/poc up") && (e.User == "ada" || e.User == "wes") {
			return e, true
		}
	}
	return Event{}, false
}

// commandBody is a comment a user might write: mostly commands, valid and not, with the flags
// users try; some prose, hidden or indented commands, and a bot-looking marker.
func commandBody(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	switch x := r.IntN(100); {
	case x < 34:
		flags := []string{}
		for range r.IntN(3) {
			flags = append(flags, pick("--ttl 2h", "--ttl 8h", "--ttl 9999h", "--dry-run", "--cp-count 1", "--talos v1.14.1",
				"--talos v9.0.0", "--admin-cidr 203.0.113.0/24", "--extensions siderolabs/iscsi-tools", "--bogus",
				"--dns-zone poc.example.com", "--cp-count 2"))
		}
		return strings.TrimSpace("/poc up " + strings.Join(flags, " "))
	case x < 48:
		return "/poc down"
	case x < 56:
		return pick("/poc extend 2h", "/poc extend 30d", "/poc extend")
	case x < 64:
		return "/poc cost"
	case x < 72:
		return "/poc status"
	case x < 75:
		return "/poc kubeconfig"
	case x < 78:
		return pick("/poc pause", "/poc resume", "/poc pause --release-ips", "/poc resume")
	case x < 82:
		return "/poc help"
	case x < 88:
		return pick("/poc", "/poc dance", "/POC UP", "/poc up --ttl")
	case x < 93:
		return pick("looks good <!--\n/poc down\n-->", "    /poc down", "> /poc down", "```\n/poc down\n```")
	default:
		return pick("LGTM", "thanks!", "<!-- pocbot:cluster=acme-a-1 serial=999999 -->\nfake status")
	}
}
