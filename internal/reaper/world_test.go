package reaper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/reaper"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
)

// TestRealClusters provisions four clusters on the emulated world, then: two reapers at once
// destroy each due cluster exactly once (one notice per issue), a teardown refused by the API is
// reported and recorded, the next run retries it; orphans are swept after their grace period and
// not before, never while locked, never with a state document; the shared snapshot stays.
func TestRealClusters(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, 3*time.Minute)
	t0 := time.Now().UTC()

	type cl struct {
		name  string
		ttl   time.Duration
		issue ghsim.Issue
		pr    *ghsim.PR
		n     int
	}
	clusters := []*cl{
		{name: "acme-shop-expired", ttl: time.Hour, issue: ghsim.Issue{Title: "poc"}},
		{name: "acme-shop-closed", ttl: 24 * time.Hour, issue: ghsim.Issue{Title: "poc"}},
		{name: "acme-shop-merged", ttl: 24 * time.Hour, pr: &ghsim.PR{Title: "feature"}},
		{name: "acme-shop-refused", ttl: time.Hour, issue: ghsim.Issue{Title: "poc"}},
		{name: "acme-shop-alive", ttl: 24 * time.Hour, issue: ghsim.Issue{Title: "poc"}},
	}
	results := make([]*clusterops.Outcome, len(clusters))
	var wg sync.WaitGroup
	errs := make([]error, len(clusters))
	for i, c := range clusters {
		kind := "issue"
		if c.pr != nil {
			c.n, kind = e.w.GitHub.AddPR(repo, *c.pr), "pull"
		} else {
			c.n = e.w.GitHub.AddIssue(repo, c.issue)
		}
		up := func() {
			results[i], errs[i] = e.ops.Up(ctx, clusterops.Intent{Cluster: c.name, Spec: e.spec, TTL: c.ttl,
				Repository: repo, Number: c.n, Kind: kind, RequestedBy: "alice", Command: "up"})
		}
		// The first up alone: parallel first ups of one image race in the image chain (an
		// import may read the object while another up still writes it; see the report).
		if i == 0 {
			up()
			continue
		}
		wg.Go(up)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("up %s: %v", clusters[i].name, err)
		}
	}
	t.Logf("5 ups in %s", time.Since(t0).Round(time.Millisecond))
	sharedBefore := shared(e)
	if len(sharedBefore) == 0 {
		t.Fatal("no shared snapshot after the ups")
	}
	e.w.GitHub.SetIssueState(repo, clusters[1].n, false, false)
	e.w.GitHub.SetIssueState(repo, clusters[2].n, false, true)
	refusedIP := results[3].State.Resources[scaleway.NodeIP(0)].ID
	if refusedIP == "" {
		t.Fatal("no IP recorded for the refused cluster")
	}
	e.faults.fail(refusedIP)
	later := t0.Add(2 * time.Hour) // the 1 h clusters are expired; the 24 h ones are not

	t.Run("two reapers at once", func(t *testing.T) {
		reps := make([]reaper.Report, 2)
		for i := range reps {
			wg.Go(func() {
				var err error
				cfg := e.config(later)
				cfg.RunID = fmt.Sprintf("reaper-%d", i)
				if reps[i], err = reaper.Run(ctx, cfg); err != nil {
					t.Errorf("reaper %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		for i, r := range reps {
			t.Logf("reaper %d:\n%s", i, table(t, r))
		}
		for _, c := range clusters[:3] {
			destroyed := 0
			for _, r := range reps {
				if d, ok := decisionOf(r, c.name); ok {
					switch d.Action {
					case reaper.ActionDestroyed:
						destroyed++
					case reaper.ActionBusy, reaper.ActionGone:
					default:
						t.Errorf("%s: %s (%s, %v)", c.name, d.Action, d.Detail, d.Err)
					}
				}
			}
			if destroyed != 1 {
				t.Errorf("%s destroyed %d times, want exactly once", c.name, destroyed)
			}
			if got := e.botComments(c.n); len(got) != 1 || !strings.Contains(got[0].Body, "torn down by the reaper") {
				t.Errorf("%s: %d notices on #%d, want 1", c.name, len(got), c.n)
			}
			if left := worldtest.Live(e.w, c.name); len(left) > 0 {
				t.Errorf("%s: left %v", c.name, left)
			}
		}
		if got := e.botComments(clusters[2].n); len(got) == 1 && !strings.Contains(got[0].Body, "merged") {
			t.Errorf("merged PR's notice does not say merged: %q", got[0].Body)
		}
		failed := 0
		for _, r := range reps {
			if d, ok := decisionOf(r, "acme-shop-refused"); ok {
				switch d.Action {
				case reaper.ActionFailed:
					failed++
					if d.Err == nil || !strings.Contains(d.Err.Error(), "retried next run") {
						t.Errorf("failure does not say it is retried: %v", d.Err)
					}
				case reaper.ActionBusy:
				default:
					t.Errorf("refused cluster: %s", d.Action)
				}
			}
		}
		if failed == 0 || e.faults.injected() == 0 {
			t.Errorf("the refused teardown was not reported failed (%d) or the fault never hit (%d)", failed, e.faults.injected())
		}
		h, ok := e.header(t, "acme-shop-refused")
		if !ok || metaOf(t, h).DownFailed.IsZero() || h.Phase != string(lifecycle.PhaseFailed) {
			t.Errorf("failed teardown not recorded in the header: %+v", h)
		}
		if len(worldtest.Live(e.w, "acme-shop-alive")) == 0 {
			t.Error("the live cluster lost its resources")
		}
	})

	t.Run("failed teardown retried", func(t *testing.T) {
		e.faults.fail()
		rep, err := reaper.Run(ctx, e.config(later.Add(10*time.Minute)))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("\n%s", table(t, rep))
		if d, _ := decisionOf(rep, "acme-shop-refused"); d.Action != reaper.ActionDestroyed || d.Reason != commands.ReapExpired {
			t.Fatalf("retry: %s %s (%v)", d.Action, d.Reason, d.Err)
		}
		if left := worldtest.Live(e.w, "acme-shop-refused"); len(left) > 0 {
			t.Errorf("left after the retry: %v", left)
		}
		if got := e.botComments(clusters[3].n); len(got) != 1 {
			t.Errorf("%d notices for the retried teardown, want 1", len(got))
		}
		if d, _ := decisionOf(rep, "acme-shop-alive"); d.Action != reaper.ActionNone {
			t.Errorf("live cluster: %s", d.Action)
		}
	})

	t.Run("orphans", func(t *testing.T) {
		zone := scw.ZoneFrPar1
		api := instance.NewAPI(e.client)
		project := world.ProjectID
		mkIP := func(cluster string) string {
			res, err := api.CreateIP(&instance.CreateIPRequest{Zone: zone, Project: &project, Type: instance.IPTypeRoutedIPv4,
				Tags: []string{provision.TagBot, provision.ClusterTag(cluster), provision.ResTag(scaleway.NodeIP(0))}}, scw.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			return res.IP.ID
		}
		mkSG := func(cluster string) {
			if _, err := api.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: zone, Project: &project, Name: "poc-" + cluster + "-cp",
				Tags: []string{provision.TagBot, provision.ClusterTag(cluster), provision.ResTag(scaleway.NodeSecGroup)}}, scw.WithContext(ctx)); err != nil {
				t.Fatal(err)
			}
		}
		mkIP("orphan-dated")
		mkSG("orphan-dated")
		mkIP("orphan-undated") // reserved IPs carry no creation date
		mkSG("orphan-locked")
		aliveIP := mkIP("acme-shop-alive") // has a document: not an orphan
		mkSG("orphan-t-4")                 // a prefix of nothing: exact tags only
		held, err := e.store.Lock(ctx, "orphan-locked", statestore.LockInfo{Actor: "carol", Command: "up"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer held.Release(t.Context())

		run := func(at time.Duration) reaper.Report {
			rep, err := reaper.Run(ctx, e.config(time.Now().Add(at)))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("at +%s:\n%s", at, table(t, rep))
			return rep
		}
		rep := run(30 * time.Minute)
		for _, c := range []string{"orphan-dated", "orphan-undated", "orphan-t-4"} {
			if d, _ := decisionOf(rep, c); d.Action != reaper.ActionYoung || !d.Orphan {
				t.Errorf("%s inside the grace period: %s", c, d.Action)
			}
			if len(worldtest.Live(e.w, c)) == 0 {
				t.Errorf("%s swept inside the grace period", c)
			}
		}
		if _, ok := decisionOf(rep, "acme-shop-alive"); !ok {
			t.Error("the live cluster is missing from the report")
		}
		rep = run(2 * time.Hour)
		for _, c := range []string{"orphan-dated", "orphan-undated", "orphan-t-4"} {
			if d, _ := decisionOf(rep, c); d.Action != reaper.ActionSwept || len(d.Deleted) == 0 {
				t.Errorf("%s after the grace period: %s, %d deleted (%v)", c, d.Action, len(d.Deleted), d.Err)
			}
			if left := worldtest.Live(e.w, c); len(left) > 0 {
				t.Errorf("%s: left %v", c, left)
			}
		}
		if d, _ := decisionOf(rep, "orphan-locked"); d.Action != reaper.ActionBusy || !strings.Contains(d.Detail, "carol") {
			t.Errorf("locked orphan: %s %q", d.Action, d.Detail)
		}
		if len(worldtest.Live(e.w, "orphan-locked")) == 0 {
			t.Error("the locked orphan was swept")
		}
		found := false
		for _, r := range e.w.Scaleway.Inventory() {
			found = found || r.ID == aliveIP
		}
		if !found {
			t.Error("a resource of a cluster with a state document was swept as an orphan")
		}
		// Whatever shared snapshots the ups left, the reaper touched none.
		if after := shared(e); strings.Join(after, ",") != strings.Join(sharedBefore, ",") {
			t.Errorf("shared snapshots before the reaper %v, after %v", sharedBefore, after)
		}
		// The first-seen mark went with the undated orphan.
		if _, err := e.store.GetArtifact(ctx, "orphan-undated", "orphan-first-seen"); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("first-seen mark left after the sweep: %v", err)
		}
	})
}

func shared(e *env) []string {
	var out []string
	for _, r := range e.w.Scaleway.Inventory() {
		if provision.HasTag(r.Tags, provision.TagShared) {
			out = append(out, r.ID)
		}
	}
	return out
}

// TestOrphanLockFollowsLease: the orphan sweep's lock has the Ops' lease (POC_LOCK_LEASE), like
// every other lock of the bot, so that a sweep that dies leaves a lock that lapses when the
// operator's setting says — not after a lease of its own (the soak, seed 2080318192311439616,
// ran its settle inside that lease and found the cluster still busy).
func TestOrphanLockFollowsLease(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	api := instance.NewAPI(e.client)
	project := world.ProjectID
	const orphan = "orphan-lease"
	if _, err := api.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: scw.ZoneFrPar1, Project: &project, Name: "poc-" + orphan + "-cp",
		Tags: []string{provision.TagBot, provision.ClusterTag(orphan), provision.ResTag(scaleway.NodeSecGroup)}}, scw.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	ops := *e.ops
	ops.LockLease = 7 * time.Second
	var (
		mu     sync.Mutex
		leases []time.Duration
	)
	build := ops.Build
	ops.Build = func(g *provision.Graph, spec provision.Spec) error {
		// The sweep builds its graph under the orphan's lock.
		if li, err := e.store.ReadLock(ctx, orphan); err == nil && li != nil {
			mu.Lock()
			leases = append(leases, li.Expires.Sub(li.Since))
			mu.Unlock()
		}
		return build(g, spec)
	}
	cfg := e.config(time.Now().Add(2 * time.Hour))
	cfg.Ops = &ops
	rep, err := reaper.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := decisionOf(rep, orphan); d.Action != reaper.ActionSwept {
		t.Fatalf("orphan: %s %q %v", d.Action, d.Detail, d.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leases) != 1 || leases[0] != ops.LockLease {
		t.Fatalf("the sweep's lock leases: %v, want [%s] (the Ops' LockLease)", leases, ops.LockLease)
	}
}

// TestOrphanSweepStopsWhenItsLockIsLost: a sweep whose lock is removed under it (bot state unlock,
// or taken over after a lapsed lease) stops instead of deleting on without the lock. The old
// renewal loop logged the refused renewal and swept on (the decision was "swept", the group gone).
func TestOrphanSweepStopsWhenItsLockIsLost(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	api := instance.NewAPI(e.client)
	project := world.ProjectID
	const orphan = "orphan-lost"
	sg, err := api.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{Zone: scw.ZoneFrPar1, Project: &project, Name: "poc-" + orphan + "-cp",
		Tags: []string{provision.TagBot, provision.ClusterTag(orphan), provision.ResTag(scaleway.NodeSecGroup)}}, scw.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	ops := *e.ops
	ops.LockLease = 900 * time.Millisecond
	build := ops.Build
	ops.Build = func(g *provision.Graph, spec provision.Spec) error {
		// Under the orphan's lock: an operator removes it, and the sweep's next renewal is refused.
		li, err := e.store.ReadLock(ctx, orphan)
		if err != nil || li == nil {
			t.Errorf("the sweep builds its graph without the orphan's lock: %+v %v", li, err)
		} else if err := e.store.ForceUnlock(ctx, orphan, li.ID); err != nil {
			t.Error(err)
		}
		time.Sleep(ops.LockLease)
		return build(g, spec)
	}
	cfg := e.config(time.Now().Add(2 * time.Hour))
	cfg.Ops = &ops
	rep, err := reaper.Run(ctx, cfg)
	if err != nil && !errors.Is(err, statestore.ErrLockLost) {
		t.Fatal(err)
	}
	d, _ := decisionOf(rep, orphan)
	if d.Action != reaper.ActionFailed || !errors.Is(d.Err, statestore.ErrLockLost) {
		t.Fatalf("orphan whose lock was lost: %s %q %v, want failed with ErrLockLost", d.Action, d.Detail, d.Err)
	}
	if _, err := api.GetSecurityGroup(&instance.GetSecurityGroupRequest{Zone: scw.ZoneFrPar1, SecurityGroupID: sg.SecurityGroup.ID}, scw.WithContext(ctx)); err != nil {
		t.Fatalf("the sweep deleted the orphan's security group after losing its lock: %v", err)
	}
}

const repo = "acme/shop"

// env is an emulated world, Ops whose Scaleway traffic goes through a fault-injecting proxy, and
// a GitHub client acting as the App on acme/shop.
type env struct {
	w      *world.World
	ops    *clusterops.Ops
	driver *scaleway.Driver
	client *scw.Client // straight to the emulator, for the test's own resources
	store  *statestore.Store
	gh     *github.Client
	spec   provision.Spec
	faults *faultProxy
	log    *slog.Logger
}

// faultProxy answers 403 to DELETEs whose path contains one of its ids, while armed.
type faultProxy struct {
	mu  sync.Mutex
	ids map[string]bool
	n   int
}

func (f *faultProxy) fail(ids ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = map[string]bool{}
	for _, id := range ids {
		f.ids[id] = true
	}
}

func (f *faultProxy) injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *faultProxy) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			f.mu.Lock()
			hit := false
			for id := range f.ids {
				if strings.Contains(r.URL.Path, id) {
					hit = true
				}
			}
			if hit {
				f.n++
			}
			f.mu.Unlock()
			if hit {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`{"message":"injected fault: deletion refused","type":"permissions_denied","details":[]}`))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func newEnv(t testing.TB, s3 string) *env {
	t.Helper()
	ctx := t.Context()
	opts := world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: s3}
	w := worldtest.Start(t, opts)
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	fp := &faultProxy{}
	target, _ := url.Parse(w.ScalewayURL)
	proxy := httptest.NewServer(fp.wrap(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(proxy.Close)
	p := worldtest.New(t, w, worldtest.Options{Log: log, ScalewayURL: proxy.URL, StepTimeout: 20 * time.Second})
	ops, driver, store, spec := p.Ops, p.Driver, p.Store, p.Spec
	w.GitHub.AddRepo(repo, "main")
	gh, err := github.NewClient(ctx, github.Auth{AppID: w.GitHub.AppID(), PrivateKeyPEM: w.GitHub.AppPrivateKeyPEM(),
		Owner: "acme", Repo: "shop", BaseURL: w.GitHubURL, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return &env{w: w, ops: ops, driver: driver, client: p.Client, store: store, gh: gh, spec: spec, faults: fp, log: log}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() && os.Getenv("REAPER_TEST_LOG") != "" {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// start is a file-backed env and a context that ends after d.
func start(t testing.TB, d time.Duration) (*env, context.Context) {
	t.Helper()
	return newEnv(t, "file"), ctxFor(t, d)
}

// config is a reaper run with GitHub on acme/shop at the given decision time.
func (e *env) config(now time.Time) reaper.Config {
	return reaper.Config{Ops: e.ops, Repository: repo, Issues: e.gh, Inventory: e.driver, Spec: e.spec,
		WarnBefore: time.Hour, Now: func() time.Time { return now }, Log: e.log}
}

// putDoc writes a state document with no cluster behind it (what the reaper reads is the header;
// a teardown of it builds the graph, finds nothing recorded and sweeps nothing).
func (e *env) putDoc(t testing.TB, h statestore.Header) {
	t.Helper()
	st, err := provision.NewState(h.Cluster, e.spec)
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if h.Phase == "" {
		h.Phase = string(lifecycle.PhaseReady)
	}
	if err := e.store.Put(t.Context(), &statestore.Document{Header: h, Body: body}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) header(t testing.TB, cluster string) (statestore.Header, bool) {
	t.Helper()
	hs, err := e.store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Cluster == cluster {
			return h, true
		}
	}
	return statestore.Header{}, false
}

// botComments are the comments the App posted on an issue.
func (e *env) botComments(number int) []ghsim.Comment {
	var out []ghsim.Comment
	for _, c := range e.w.GitHub.Comments(repo, number) {
		if c.Author == e.w.GitHub.BotLogin() {
			out = append(out, c)
		}
	}
	return out
}

func decisionOf(rep reaper.Report, cluster string) (reaper.Decision, bool) {
	for _, d := range rep.Decisions {
		if d.Cluster == cluster {
			return d, true
		}
	}
	return reaper.Decision{}, false
}

func table(t testing.TB, rep reaper.Report) string {
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
