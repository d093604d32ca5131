package soak

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"golang.org/x/crypto/ssh"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	talossim "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// Bot starts bot processes. cmd/bot implements it with the code path of `bot handle`.
type Bot interface {
	// Handle runs one process to its end, or until ctx is canceled (its kill). env is the whole
	// environment of the process; now is its clock.
	Handle(ctx context.Context, env map[string]string, now func() time.Time) Process
}

// Process is what one bot process did, as the harness needs it for the checks.
type Process struct {
	// Ignored is the handler's reason to do nothing ("" when the event was acted on).
	Ignored string
	Err     error
	// Output is everything the process wrote where a person could read it: its log lines,
	// workflow commands on stdout, the job summary and the step outputs.
	Output string
}

// Options tune a run.
type Options struct {
	Bot Bot
	// TimeFactor scales the emulated latencies (default 0.001).
	TimeFactor float64
	// Dir holds the worlds' files (default: a temporary directory per history).
	Dir string
	// Log receives one line per event (nil: quiet).
	Log io.Writer
	// StepTimeout bounds one process (default 2 min).
	StepTimeout time.Duration
}

// Result is one history's outcome.
type Result struct {
	Seed       uint64
	Events     int
	Violations []Violation
	Duration   time.Duration
	// ReadsAfterPause counts the reads, after every step, of an object written before a pause
	// of its cluster that found it as last written (or gone, once deleted) (kube.go).
	ReadsAfterPause int
	// Writes counts the changes of objects the checks follow: creations, updates, deletions;
	// Pauses the pauses of a cluster holding such objects (a command's or the schedule's).
	Writes, Pauses int
	// Handouts counts the spares the pool's ledger saw claimed; UnverifiedHandouts those of
	// them never seen ready first (their staleness unchecked).
	Handouts, UnverifiedHandouts int
	// HandedTo are the clusters those claims made, sorted.
	HandedTo []string
}

// Violation is one broken invariant, with the step after which it was seen (-1: the settle).
type Violation struct {
	Step      int
	Invariant string
	Detail    string
}

func (v Violation) String() string {
	at := "settle"
	if v.Step >= 0 {
		at = "step " + strconv.Itoa(v.Step)
	}
	return fmt.Sprintf("%s: %s: %s", at, v.Invariant, v.Detail)
}

// lockLease is the bots' lock lease in the soak: short, so that a killed process's lock lapses
// within a history, yet long enough that a live holder's renewal (a conditional PUT, every third
// of the lease) outlasts a saturated machine: at 3 s, `make test` on 2 cores lost an up's lock
// mid-run (a spare build failed, a pause-resume history issued no kubeconfig). lockWait lets a
// run outwait a killed process's lease.
const (
	lockLease = 10 * time.Second
	lockWait  = lockLease + 5*time.Second
)

// Run plays events in a fresh world and checks the invariants after every step and after the
// settle. An error is the harness's own failure (the world would not start), never a violation.
func Run(ctx context.Context, o Options, seed uint64, events []Event) (Result, error) {
	t0 := time.Now()
	if o.TimeFactor == 0 {
		o.TimeFactor = 0.001
	}
	if o.StepTimeout == 0 {
		o.StepTimeout = 2 * time.Minute
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "pocbot-soak-")
		if err != nil {
			return Result{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	talosFaults := talossim.NewFaults(seed)
	// Images of 1 MiB: every history builds the image chain once, and its size tests nothing
	// between processes (the image tests stream 256 MiB).
	// A history plays a day of comments in a minute or two of real time: GitHub's secondary limit,
	// counted in real time, would refuse what no real schedule sends (the bot waits it out, a
	// history takes three times as long, and a soak draws a third of the histories). The limit
	// is chatops' TestConcurrentUpsUnderSecondaryLimits's subject, not the soak's: off here.
	w, err := world.Start(ctx, world.Options{Dir: dir, TimeFactor: o.TimeFactor, S3: "versitygw", Quotas: WorldOf(seed).Quotas, OrgQuotas: WorldOf(seed).OrgQuotas,
		QCOW2Size: 1 << 20, RawSize: 1 << 20, TalosFaults: talosFaults, GitHubLimit: ghsim.ContentLimit{Disabled: true}})
	if err != nil {
		return Result{}, fmt.Errorf("soak: start the world: %w", err)
	}
	defer w.Close()
	h := &history{o: o, w: w, seed: seed, dir: dir, start: time.Now(), talosFaults: talosFaults,
		offset: clockOffset(time.Now(), WorldOf(seed).Clock)}
	if err := h.seedWorld(); err != nil {
		return Result{}, err
	}
	h.checker, err = newChecker(ctx, w)
	if err != nil {
		return Result{}, err
	}
	h.checker.offsetsAt = h.offsetsAt
	h.checker.pool.logf = h.logf
	h.checker.issued = func(ctx context.Context, repo string, number int) []byte {
		return h.issuedKubeconfig(ctx, repo, number, h.ids["ada"], h.ids["wes"])
	}
	h.checker.stepTimeout = h.o.StepTimeout
	defer h.checker.close()

	for i, e := range events {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		h.logf("%3d %s", i, e)
		h.step(ctx, i, e)
		h.violations = append(h.violations, h.checker.afterStep(ctx, i, h.processes())...)
		h.violations = append(h.violations, h.checker.afterPoolStep(ctx, i, h.clock())...)
	}
	h.violations = append(h.violations, h.settle(ctx, events)...)
	if ctx.Err() != nil {
		// Cut short (a shrink's bound): what the settle saw is not a verdict.
		return Result{}, ctx.Err()
	}
	return Result{Seed: seed, Events: len(events), Violations: h.violations, Duration: time.Since(t0), ReadsAfterPause: h.checker.readsResumed, Writes: h.checker.writes, Pauses: h.checker.pauses,
		Handouts: h.checker.pool.Handouts, UnverifiedHandouts: h.checker.pool.Unverified(),
		HandedTo: h.checker.pool.clusters()}, nil
}

// history is one run's world and bookkeeping.
type history struct {
	o          Options
	w          *world.World
	seed       uint64
	dir        string
	start      time.Time
	checker    *checker
	violations []Violation

	mu     sync.Mutex
	offset time.Duration // the bots' clock is real time plus offset
	// talosFaults are the world's Talos nodes' faults: a process with faults pushes its rates
	// while it runs (the nodes are reached directly, not through the process's wire).
	talosFaults *talossim.Faults
	running     sync.WaitGroup
	procs       []*proc
	lastBy      map[string]int64 // last comment id per repo#number/user, for edits
	issues      map[string]*issueState
	runs        int
	// ids are the users' SSH keys as age identities (what opens the kubeconfig the bot issued
	// them); kubeconfigs are the links already opened.
	ids         map[string]age.Identity
	kubeconfigs map[string][]byte
}

// proc is one process the harness started, with what its wire saw.
type proc struct {
	step   int
	event  Event
	wire   *Wire
	result Process
	done   chan struct{}
	killed bool
	// timedOut: the process was still running at StepTimeout, a job's timeout (its context ended
	// while the history's had not).
	timedOut bool
	comment  int64 // the command comment it answered (comment events)
	gh       *ghLog
	// offset is the process's clock offset; started and ended bound it in real time.
	offset  time.Duration
	started time.Time
	ended   atomic.Pointer[time.Time]
}

func (h *history) logf(f string, a ...any) {
	if h.o.Log != nil {
		fmt.Fprintf(h.o.Log, f+"\n", a...)
	}
}

// now is a process's clock: real time plus the offset at the process's start, which it keeps
// (a process started before a jump keeps its clock, as a runner's clock does).
func (h *history) now() (func() time.Time, time.Duration) {
	h.mu.Lock()
	off := h.offset
	h.mu.Unlock()
	return func() time.Time { return time.Now().Add(off) }, off
}

// offsetsAt are the clock offsets of the processes running at t (with a second's slack either
// side): whoever wrote something at t wrote it with one of them.
func (h *history) offsetsAt(t time.Time) []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []time.Duration
	for _, p := range h.procs {
		if p.started.IsZero() || p.started.After(t.Add(time.Second)) {
			continue
		}
		if end := p.ended.Load(); end != nil && end.Add(time.Second).Before(t) {
			continue
		}
		if !slices.Contains(out, p.offset) {
			out = append(out, p.offset)
		}
	}
	return out
}

// clock is the history's clock now: the newest offset's.
func (h *history) clock() time.Time {
	now, _ := h.now()
	return now()
}

// jump moves the clock of the processes started from now on.
func (h *history) jump(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.offset += d
}

func (h *history) processes() []*proc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.procs)
}

// seedWorld creates the repositories, users, issues and pull requests of Repos.
func (h *history) seedWorld() error {
	gh := h.w.GitHub
	h.lastBy = map[string]int64{}
	h.ids, h.kubeconfigs = map[string]age.Identity{}, map[string][]byte{}
	for user := range Users {
		gh.AddUser(user)
	}
	for _, u := range []string{"ada", "wes"} {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return err
		}
		sp, err := ssh.NewPublicKey(pub)
		if err != nil {
			return err
		}
		if h.ids[u], err = agessh.NewEd25519Identity(priv); err != nil {
			return err
		}
		gh.AddUserKey(u, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))))
	}
	for _, r := range Repos() {
		gh.AddRepo(r.Name, "main")
		gh.SetFile(r.Name, "", ".github/poc.yml", []byte(r.Config))
		for user, perm := range Users {
			if perm != "" {
				gh.SetPermission(r.Name, user, perm)
			}
		}
		for _, n := range r.Issues {
			gh.AddIssue(r.Name, ghIssue(n))
		}
		for _, p := range r.PRs {
			gh.AddPR(r.Name, ghPR(p))
		}
	}
	return nil
}

// step delivers one event.
func (h *history) step(ctx context.Context, i int, e Event) {
	switch e.Kind {
	case KindClock:
		h.jump(e.Jump)
		return
	case KindWait:
		select {
		case <-time.After(e.Jump):
		case <-ctx.Done():
		}
		return
	case KindKube:
		h.kubeWrite(ctx, i, e)
		return
	case KindBreak:
		h.breakSpare(ctx, i, e)
		return
	case KindPR:
		h.applyPR(e)
	}
	p := h.startEvent(ctx, i, e)
	if !e.Async {
		h.wait(ctx, p)
	}
}

// startEvent starts the process of an event; a killed process is followed by a re-run of the same
// event (GitHub's "re-run failed jobs"), in the background of the same step.
func (h *history) startEvent(ctx context.Context, i int, e Event) *proc {
	payload, name, repo, commentID := h.payload(e)
	h.mu.Lock()
	h.runs++
	run := h.runs
	h.mu.Unlock()
	first := h.launch(ctx, i, e, payload, name, repo, commentID, run, e.KillAfter, e.Faults)
	if e.KillAfter == 0 {
		return first
	}
	// The re-run: after the killed process is gone, the same event again, without faults.
	rerun := &proc{step: i, event: e, done: make(chan struct{}), comment: commentID}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		<-first.done
		p := h.launch(ctx, i, e, payload, name, repo, commentID, run, 0, Faults{})
		<-p.done
		rerun.result, rerun.wire, rerun.gh = p.result, p.wire, p.gh
		close(rerun.done)
	}()
	return rerun
}

func (h *history) launch(ctx context.Context, i int, e Event, payload []byte, name, repo string, commentID int64, run, killAfter int, f Faults) *proc {
	pctx, cancel := context.WithTimeout(ctx, h.o.StepTimeout)
	p := &proc{step: i, event: e, done: make(chan struct{}), comment: commentID, gh: &ghLog{}}
	wire := NewWire(h.seed^uint64(i)<<20^uint64(killAfter), f, killAfter, cancel)
	p.wire = wire
	env, err := h.env(wire, p.gh, name, repo, payload, run)
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	if err != nil {
		cancel()
		p.result = Process{Err: err}
		close(p.done)
		return p
	}
	clk, off := h.now()
	h.mu.Lock()
	p.offset, p.started = off, time.Now()
	h.mu.Unlock()
	pop := func() {}
	if f.Rate5xx > 0 || f.Slow > 0 {
		pop = h.talosFaults.Push(talossim.FaultRates{Unavailable: f.Rate5xx, Slow: f.Slow, SlowMax: f.SlowMax})
	}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		defer cancel()
		defer wire.Close()
		defer pop()
		t0 := time.Now()
		p.result = h.o.Bot.Handle(pctx, env, clk)
		p.killed = wire.Killed()
		p.timedOut = !p.killed && errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		end := time.Now()
		p.ended.Store(&end)
		h.logf("    step %d's process: %d requests in %s%s", i, wire.Requests(), time.Since(t0).Round(time.Millisecond), p.result.outcome(p.killed))
		close(p.done)
	}()
	return p
}

// outcome is how a process ended, for the verbose log.
func (p Process) outcome(killed bool) string {
	switch {
	case killed:
		return ", killed"
	case p.Err != nil:
		return ", failed: " + p.Err.Error()
	case p.Ignored != "":
		return ", ignored: " + p.Ignored
	}
	return ""
}

func (h *history) wait(ctx context.Context, p *proc) {
	select {
	case <-p.done:
	case <-ctx.Done():
	}
}

// env is a process's environment: the world's, with every HTTP service behind the process's wire.
func (h *history) env(wire *Wire, gl *ghLog, name, repo string, payload []byte, run int) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range h.w.Env() {
		env[kv[0]] = kv[1]
	}
	front := func(svc Service, target string) (string, error) { return wire.Front(svc, target) }
	var err error
	if env["SCW_API_URL"], err = front(Scaleway, h.w.ScalewayURL); err != nil {
		return nil, err
	}
	if env["GITHUB_API_URL"], err = wire.frontLogged(GitHub, h.w.GitHubURL, gl); err != nil {
		return nil, err
	}
	if env["POC_IMAGE_FACTORY_URL"], err = front(Factory, h.w.Factory.URL()); err != nil {
		return nil, err
	}
	s3front, err := front(S3, h.w.S3.Endpoint)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"POC_STATE_URL", "POC_IMAGE_BUCKET"} {
		env[k] = strings.Replace(env[k], urlQueryEscape(h.w.S3.Endpoint), urlQueryEscape(s3front), 1)
	}
	dir := filepath.Join(h.dir, "runs", strconv.Itoa(run)+"-"+strconv.Itoa(len(h.processes())))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "event.json")
	if err := os.WriteFile(path, payload, 0o600); err != nil {
		return nil, err
	}
	for k, v := range map[string]string{
		"GITHUB_EVENT_NAME": name, "GITHUB_EVENT_PATH": path, "GITHUB_REPOSITORY": repo, "GITHUB_RUN_ID": strconv.Itoa(5000 + run),
		"GITHUB_SERVER_URL": "https://github.com", "GITHUB_ACTIONS": "true",
		"GITHUB_OUTPUT": filepath.Join(dir, "output"), "GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
		"POC_STICKY_INTERVAL": "200ms", "POC_LOCK_LEASE": lockLease.String(), "POC_LOCK_WAIT": lockWait.String(),
		"POC_POLL_INTERVAL": "50ms", "POC_REAP_GRACE": "1h",
		// The opportunistic reaper pass of comment runs would post expiry warnings into the
		// answers being counted; the schedule events reap instead.
		"POC_REAP_ON_EVENTS": "false",
	} {
		env[k] = v
	}
	return env, nil
}

// quiesce waits until every process the harness started has ended (false: some still run after
// the step timeout).
func (h *history) quiesce() bool {
	done := make(chan struct{})
	go func() { h.running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(h.o.StepTimeout + 30*time.Second):
		return false
	}
}

// settle lets every process finish, waits out the lock leases, then runs the schedule of every
// repository long after every expiry and grace period (a pool's repository, when the history
// played on it, with its pool emptied: the operator's end of a pool), and checks what must hold at
// rest.
func (h *history) settle(ctx context.Context, events []Event) []Violation {
	if !h.quiesce() {
		return []Violation{{Step: -1, Invariant: "every run finishes", Detail: "processes still running after the step timeout"}}
	}
	// Every lease has run out by now: no lock may be held any longer.
	time.Sleep(lockLease + 200*time.Millisecond)
	var out []Violation
	// Locks are dated by the store's clock, real time (statestore's default), not the bots'.
	out = append(out, h.checker.atRest(ctx, time.Now())...)
	out = append(out, h.checker.afterPoolStep(ctx, -1, h.clock())...)
	h.jump(30 * 24 * time.Hour)
	played := map[string]bool{}
	for _, e := range events {
		played[e.Repo] = true
	}
	for _, r := range Repos() {
		if r.SettleConfig != "" {
			h.w.GitHub.SetFile(r.Name, "", ".github/poc.yml", []byte(r.SettleConfig))
		}
	}
	for round := range 2 {
		for _, r := range Repos() {
			if r.PoolSize > 0 && !played[r.Name] {
				continue // nothing of it to settle, and a schedule run less
			}
			p := h.startEvent(ctx, 10_000+round, Event{Kind: KindSchedule, Repo: r.Name})
			h.wait(ctx, p)
		}
	}
	now, _ := h.now()
	out = append(out, h.checker.settled(ctx, now(), h.processes())...)
	return out
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func jsonBytes(v any) []byte {
	b, _ := json.Marshal(v) // maps of strings, numbers and booleans always marshal
	return b
}
