package clusterops_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/repoconfig"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
)

// env is a running emulated world plus Ops pointed at it.
type env struct {
	w      *world.World
	ops    *clusterops.Ops
	driver *scaleway.Driver
	store  *statestore.Store
	spec   provision.Spec
}

func newEnv(t *testing.T, opts world.Options) *env { return newEnvWith(t, opts, worldtest.Options{}) }

// newEnvWith is newEnv with the parts built with wo (its Log is the test's).
func newEnvWith(t *testing.T, opts world.Options, wo worldtest.Options) *env {
	t.Helper()
	opts.Dir = t.TempDir()
	if opts.S3 == "" {
		opts.S3 = "file"
	}
	if testing.Verbose() {
		opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	w := worldtest.Start(t, opts)
	wo.Log = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	p := worldtest.New(t, w, wo)
	return &env{w: w, ops: p.Ops, driver: p.Driver, store: p.Store, spec: p.Spec}
}

// live lists the emulator's resources owned by a cluster.
func (e *env) live(cluster string) []string { return worldtest.Live(e.w, cluster) }

// start is newEnv at the tests' time factor (0.005 unless opts sets one) with a context that
// ends after d.
func start(t *testing.T, d time.Duration, opts world.Options) (*env, context.Context) {
	t.Helper()
	if opts.TimeFactor == 0 {
		opts.TimeFactor = 0.005
	}
	e := newEnv(t, opts)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return e, ctx
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func TestUpGivesAWorkingKubeconfigAndDownLeavesOnlyTheSharedImage(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{})

	t0 := time.Now()
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-shop-42", Spec: e.spec, TTL: 8 * time.Hour,
		Repository: "acme/shop", Number: 42, Kind: "issue", RequestedBy: "alice", Command: "up"})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %s", time.Since(t0).Round(time.Millisecond))
	if res.Header.Phase != string(lifecycle.PhaseReady) || !res.Created {
		t.Fatalf("header after up = %+v, created=%v", res.Header, res.Created)
	}
	if got := res.Header.Expires.Sub(res.Header.Created); got != 8*time.Hour {
		t.Errorf("expiry = created + %s, want 8h", got)
	}
	// The kubeconfig from its own encrypted object reaches the stand-in API server over TLS.
	kc, err := e.ops.Kubeconfig(ctx, "acme-shop-42")
	if err != nil {
		t.Fatal(err)
	}
	if err := talos.Readyz(ctx, kc); err != nil {
		t.Fatalf("kubeconfig does not reach /readyz: %v", err)
	}
	// The control planes' user data held the cluster's keys: none is left.
	st := res.State
	for i := range st.Spec.CPCount {
		rec := st.Resources[scaleway.NodeServer(i)]
		if ud := e.w.Scaleway.UserData(rec.Zone, rec.ID); len(ud) != 0 {
			t.Errorf("control plane %d still has user data keys %v", i, keys(ud))
		}
		if len(st.Secrets[scaleway.UserDataSecret(i)]) != 0 {
			t.Errorf("state still keeps control plane %d's user data copy", i)
		}
	}
	if st.Outputs[cluster.OutRescueHostKey] == "" || st.Outputs[cluster.OutWorkerDisk] == "" {
		t.Errorf("rescue outputs missing: %v", st.Outputs)
	}
	// Up twice: no change, no new resource, and no new factory download.
	before := len(e.w.Scaleway.Inventory())
	served := e.w.Factory.BytesServed()
	if _, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-shop-42", Spec: e.spec, RequestedBy: "alice", Command: "up"}); err != nil {
		t.Fatalf("second up: %v", err)
	}
	if after := len(e.w.Scaleway.Inventory()); after != before {
		t.Errorf("second up changed the inventory: %d → %d resources", before, after)
	}
	if d := e.w.Factory.BytesServed() - served; d != 0 {
		t.Errorf("second up downloaded %d bytes from the factory", d)
	}

	// What chatops hands a user: a ciphertext under the cluster's public kubeconfig directory.
	userKey := clusterops.PublicKubeconfigDir("acme-shop-42") + "/0123.age"
	if err := e.store.PutPublic(ctx, userKey, []byte("age-encryption.org/v1 ...")); err != nil {
		t.Fatal(err)
	}
	rep, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "acme-shop-42", Spec: e.spec, RequestedBy: "alice", Command: "down"})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	if len(rep.Report.Deleted) < 12 {
		t.Errorf("down reported %d deletions, want at least 12", len(rep.Report.Deleted))
	}
	if left := e.live("acme-shop-42"); len(left) > 0 {
		t.Errorf("down left %v", left)
	}
	shared := 0
	for _, r := range e.w.Scaleway.Inventory() {
		if provision.HasTag(r.Tags, provision.TagShared) {
			shared++
		} else {
			t.Errorf("non-shared resource left after down: %s %s %v", r.Kind, r.Name, r.Tags)
		}
	}
	if shared != 1 {
		t.Errorf("want exactly the shared snapshot left, got %d shared resources", shared)
	}
	if _, err := e.store.Get(ctx, "acme-shop-42"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("state document still there after down: %v", err)
	}
	if _, err := e.ops.Kubeconfig(ctx, "acme-shop-42"); err == nil {
		t.Error("kubeconfig object still there after down")
	}
	if _, err := e.store.SignedURL(ctx, userKey, time.Minute); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a user's kubeconfig ciphertext is still there after down: %v", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFirstUpsOfOneImageShareIt: two clusters asking at once for an image nobody made yet get one
// download and one snapshot import (the image lock), and both come up.
func TestFirstUpsOfOneImageShareIt(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{S3: "auto"})
	errs := make(chan error, 2)
	for _, name := range []string{"img-a-1", "img-b-2"} {
		go func() {
			_, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: e.spec, TTL: time.Hour, Command: "up"})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("up: %v", err)
		}
	}
	if n := e.w.Factory.ImageRequests(); n != 3 { // one qcow2 for the bucket, one raw.zst per worker
		t.Errorf("factory served %d images, want 3 (one shared qcow2, two worker images)", n)
	}
	snapshots := 0
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == "block_snapshot" {
			snapshots++
		}
	}
	if snapshots != 1 {
		t.Errorf("%d snapshots, want the one shared snapshot", snapshots)
	}
}

// TestDownThatCannotTakeOverTakesBackItsCancel: a down that asked the lock holder to stop but
// never got the lock leaves no cancel request behind (the up would stop for nothing), and a down
// with NoCancel (the reaper's) asks nothing at all.
func TestDownThatCannotTakeOverTakesBackItsCancel(t *testing.T) {
	e, ctx := start(t, time.Minute, world.Options{})
	e.ops.LockWait, e.ops.CancelWait = 300*time.Millisecond, 300*time.Millisecond
	l, err := e.store.Lock(ctx, "held-1", statestore.LockInfo{Actor: "alice", Command: "up"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	for _, noCancel := range []bool{false, true} {
		_, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "held-1", Spec: e.spec, Command: "down", NoCancel: noCancel})
		if !errors.Is(err, statestore.ErrLocked) {
			t.Fatalf("down (NoCancel=%v) on a held lock: %v, want ErrLocked", noCancel, err)
		}
		if _, err := e.store.GetArtifact(ctx, "held-1", "cancel"); !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("down (NoCancel=%v) left a cancel request: %v", noCancel, err)
		}
	}
}

// TestUpStopsWhenItsLockIsTakenOver: a run whose lease lapsed and was taken over stops instead
// of going on without the lock.
func TestUpStopsWhenItsLockIsTakenOver(t *testing.T) {
	e, ctx := start(t, 2*time.Minute, world.Options{})
	e.ops.LockLease = 900 * time.Millisecond
	errs := make(chan error, 1)
	go func() {
		_, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "stolen-1", Spec: e.spec, TTL: time.Hour, Command: "up"})
		errs <- err
	}()
	// Wait until the up holds the lock, then take it as a dead run's successor would.
	var holder *statestore.LockInfo
	lockDeadline := time.Now().Add(time.Minute)
	for holder == nil {
		if time.Now().After(lockDeadline) {
			t.Fatal("the up never held the lock within a minute")
		}
		time.Sleep(50 * time.Millisecond)
		if holder, _ = e.store.ReadLock(ctx, "stolen-1"); holder != nil && holder.Command != "up" {
			holder = nil
		}
	}
	if err := e.store.ForceUnlock(ctx, "stolen-1", holder.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Lock(ctx, "stolen-1", statestore.LockInfo{Actor: "intruder", Command: "down"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("up after losing its lock: %v, want an error naming the lost lock", err)
		}
		t.Logf("up stopped: %v", err)
	case <-ctx.Done():
		t.Fatal("up went on after losing its lock")
	}
}

// TestTemporaryAdminRuleIsGoneAfterUp: admin CIDRs that do not cover the runner get a temporary
// rule for it during the run, removed at the end; half the rules PUTs fail (the client's transport
// retries them, as PUTs are idempotent).
func TestTemporaryAdminRuleIsGoneAfterUp(t *testing.T) {
	const runner = "127.0.0.0/8"
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file",
		Faults: scwsim.Faults{Seed: 7, PerEndpoint: map[string]float64{"PUT /instance/v1/zones/{zone}/security_groups/{id}/rules": 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p := worldtest.New(t, w, worldtest.Options{RunnerCIDR: runner})
	spec := p.Spec
	spec.AdminCIDRs = []string{"198.51.100.0/24"}
	res, err := p.Ops.Up(ctx, clusterops.Intent{Cluster: "admin-1", Spec: spec, TTL: time.Hour, Command: "up",
		Override: func(s *provision.Spec) { s.AdminCIDRs = []string{"198.51.100.0/24"} }})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	puts, failed := 0, 0
	for _, c := range w.Scaleway.Calls() {
		if c.Method == "PUT" && strings.HasSuffix(c.Path, "/rules") {
			puts++
			if c.Status >= 500 {
				failed++
			}
		}
	}
	// Open (with the runner), full set once the worker is known, close (without): three that land.
	if puts-failed < 3 || failed == 0 {
		t.Errorf("%d rules PUTs, %d failed: want at least 3 that landed and some injected failures", puts, failed)
	}
	sg := res.State.Resources[scaleway.NodeSecGroup]
	rules, err := instance.NewAPI(p.Client).ListSecurityGroupRules(&instance.ListSecurityGroupRulesRequest{
		Zone: scw.Zone(sg.Zone), SecurityGroupID: sg.ID}, scw.WithAllPages())
	if err != nil {
		t.Fatal(err)
	}
	admin := 0
	for _, r := range rules.Rules {
		switch r.IPRange.String() {
		case runner:
			t.Errorf("the runner's temporary rule is still there: %s %v", r.Protocol, r.DestPortFrom)
		case "198.51.100.0/24":
			admin++
		}
	}
	if admin != 3 {
		t.Errorf("%d rules for the admin CIDR, want 3 (6443, 50000, ICMP)", admin)
	}
	if v := res.State.Outputs[scaleway.OutAdminTemporary]; v != "" {
		t.Errorf("state still records a temporary admin CIDR %q", v)
	}
}

// TestUpWithTalos114: the 1.14 multi-document configs go the whole way on the emulated world:
// control planes from user data, the worker applied in maintenance mode, bootstrap, /readyz.
func TestUpWithTalos114(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{})
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "t114-1", Spec: e.spec, TTL: time.Hour, Command: "up",
		Override: func(s *provision.Spec) { s.TalosVersion = "v1.14.1" }})
	if err != nil {
		t.Fatalf("up with Talos v1.14.1: %v", err)
	}
	if res.State.Spec.TalosVersion != "v1.14.1" || !strings.Contains(res.State.Spec.ImageKey, "/v1.14.1/") {
		t.Errorf("spec %s, image %s: want v1.14.1 throughout", res.State.Spec.TalosVersion, res.State.Spec.ImageKey)
	}
	kc, err := e.ops.Kubeconfig(ctx, "t114-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := talos.Readyz(ctx, kc); err != nil {
		t.Fatalf("kubeconfig of a 1.14 cluster does not reach /readyz: %v", err)
	}
}

// TestEveryControlPlaneBootsWithItsConfig: a control plane reads its user data once, when it has
// booted, and one that finds none sits in maintenance mode. One control plane here boots long
// after the others (a slow host): the user data must stay until it, too, answers over mutual TLS.
// Every config also names the installer of the factory the cluster uses (POC_IMAGE_FACTORY_URL).
func TestEveryControlPlaneBootsWithItsConfig(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{TalosBootFor: func(name string) time.Duration {
		if strings.HasSuffix(name, "cp-2") {
			return 10 * time.Minute // 3 s at this time factor: long after the first bootstrap
		}
		return world.TalosBoot
	}})
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "slow-cp-1", Spec: e.spec, TTL: time.Hour, Command: "up"})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	factoryHost := strings.TrimPrefix(e.w.Factory.URL(), "http://")
	ips := append(strings.Split(res.State.Outputs[cluster.OutTalosNodes], ","), res.State.Outputs[cluster.OutWorkerIP])
	if len(ips) != 4 {
		t.Fatalf("nodes recorded: %v", ips)
	}
	for _, ip := range ips {
		n := e.w.Node(ip)
		if n == nil {
			t.Errorf("no Talos node on %s after up", ip)
			continue
		}
		if err := n.WaitBooted(ctx); err != nil {
			t.Errorf("node %s: %v", ip, err)
			continue
		}
		if !n.Configured() {
			t.Errorf("node %s sits in maintenance mode after up: it found no config at boot", ip)
			continue
		}
		if cfg := string(n.Config()); !strings.Contains(cfg, factoryHost+"/") || strings.Contains(cfg, "factory.talos.dev") {
			t.Errorf("node %s's config does not name the installer of the factory in use (%s)", ip, factoryHost)
		}
	}
}

// TestRerunAfterTheWorkerWasConfigured: an up that stopped after the worker took its config but
// before it was recorded (the trigger lost) reruns without an insecure call: a configured Talos
// node takes none, and the rerun must not retry one until its deadline.
func TestRerunAfterTheWorkerWasConfigured(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{})
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "rerun-w-1", Spec: e.spec, TTL: time.Hour, Command: "up"})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	worker := e.w.Node(res.State.Outputs[cluster.OutWorkerIP])
	if worker == nil {
		t.Fatal("no Talos node on the worker after up")
	}
	// Forget that the worker was configured, as a run killed after the apply would have.
	doc, err := e.store.Get(ctx, "rerun-w-1")
	if err != nil {
		t.Fatal(err)
	}
	var st provision.State
	if err := json.Unmarshal(doc.Body, &st); err != nil {
		t.Fatal(err)
	}
	delete(st.Triggers, cluster.NodeWorkerConfig)
	if doc.Body, err = json.Marshal(&st); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Put(ctx, doc); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if _, err := e.ops.Up(rctx, clusterops.Intent{Cluster: "rerun-w-1", Spec: e.spec, Command: "up"}); err != nil {
		t.Fatalf("rerun of up after the worker was configured: %v", err)
	}
	if n := worker.Calls("/machine.MachineService/ApplyConfiguration"); n != 1 {
		t.Errorf("the worker was sent %d configs, want the first one only", n)
	}
}

// Extend writes the header once per operation (the new expiry and the re-armed warning in one
// write), and a refused extend writes nothing; a warning mark of the old expiry is cleared.
func TestExtendWritesTheHeaderOnce(t *testing.T) {
	e, ctx := start(t, time.Minute, world.Options{})
	const name = "acme-shop-9"
	expires := time.Now().UTC().Add(30 * time.Minute).Truncate(time.Second)
	h := statestore.Header{Cluster: name, Repository: "acme/shop", Number: 9, Kind: "issue", RequestedBy: "alice",
		Phase: string(lifecycle.PhaseReady), Expires: expires, Labels: map[string]string{}}
	clusterops.Meta{WarnedFor: expires}.Into(&h)
	if err := e.store.Put(ctx, &statestore.Document{Header: h, Body: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	in := clusterops.Intent{Cluster: name, Repository: "acme/shop", Number: 9, Kind: "issue", RequestedBy: "alice",
		Command: "extend", Bounds: &repoconfig.RepoConfig{MaxTTL: 24 * time.Hour}}
	for _, tc := range []struct {
		name    string
		by      time.Duration
		refusal lifecycle.Kind
		writes  int64
	}{
		{"within max_ttl", 4 * time.Hour, "", 1},
		{"beyond max_ttl", 48 * time.Hour, lifecycle.RefuseMaxTTL, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := e.store.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.ops.Extend(ctx, in, tc.by)
			if got := refusalKind(out); err != nil && got == "" || got != tc.refusal {
				t.Fatalf("extend by %s: refusal %q, err %v; want refusal %q", tc.by, got, err, tc.refusal)
			}
			after, err := e.store.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if writes := after.Header.Serial - before.Header.Serial; writes != tc.writes {
				t.Errorf("extend by %s wrote the header %d times, want %d", tc.by, writes, tc.writes)
			}
			if tc.refusal != "" {
				return
			}
			if want := before.Header.Expires.Add(tc.by); !after.Header.Expires.Equal(want) {
				t.Errorf("expires %s, want %s", after.Header.Expires, want)
			}
			if m, err := clusterops.MetaOf(after.Header); err != nil || !m.WarnedFor.IsZero() {
				t.Errorf("meta after extend %+v (%v): want the warning re-armed", m, err)
			}
		})
	}
}

func refusalKind(out *clusterops.Outcome) lifecycle.Kind {
	if out == nil || out.Refusal == nil {
		return ""
	}
	return out.Refusal.Kind
}

// TestUpWhateverRescueServerHolds: no recording shows what the API's rescue_server holds or when
// (issue 10), so an up must write the worker whether it shows the rescue credentials late or
// never: the bot logs in as "rescue" with the key it passed in ssh_key_ids, and waits for the
// password only when the rescue system's sudo wants one.
func TestUpWhateverRescueServerHolds(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts world.Options
		wait time.Duration // for the rescue password; 0: the cluster's default
		// wantErr: what the up's error names; none: the up makes a ready cluster.
		wantErr []string
	}{
		{name: "never shown, passwordless sudo", opts: world.Options{HideRescueServer: true, RescueSudoNoPassword: true}},
		{name: "shown late, sudo wants the password", opts: world.Options{RescueServerDelay: 40 * time.Second}},
		// Never shown while sudo wants it: the up stops after its bounded wait, saying what is missing.
		{name: "never shown, sudo wants the password", opts: world.Options{HideRescueServer: true}, wait: 300 * time.Millisecond,
			wantErr: []string{"sudo wants the rescue password", "rescue_server.password still empty after 300ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.TimeFactor = 0.005
			e := newEnvWith(t, tc.opts, worldtest.Options{RescuePasswordWait: tc.wait})
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "rescue-1", Spec: e.spec, TTL: time.Hour,
				Repository: "acme/shop", Number: 1, Kind: "issue", RequestedBy: "alice", Command: "up"})
			if len(tc.wantErr) > 0 {
				for _, want := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("up: %v, want an error naming %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("up: %v", err)
			}
			if res.Header.Phase != string(lifecycle.PhaseReady) || res.State.Outputs[cluster.OutWorkerDisk] != "/dev/sda" {
				t.Fatalf("after up: phase %s, outputs %v", res.Header.Phase, res.State.Outputs)
			}
		})
	}
}
