package clusterops_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The tests of this package that boot an emulated world: those whose question is the engine or
// the wire (what the Scaleway, Talos and Kubernetes stand-ins see and answer). There are at most
// ten (TestWorldTestsAreFew); a question of policy, of the lock or of the reads is the decision's
// table's (decide_test.go) or the counted store's (ops_test.go).

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
// ends after d. A world test runs beside one other (t.Parallel): most of a world's time is its
// modelled waits.
func start(t *testing.T, d time.Duration, opts world.Options) (*env, context.Context) {
	t.Helper()
	t.Parallel()
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

func (e *env) up(ctx context.Context, t *testing.T, name string) *clusterops.Outcome {
	t.Helper()
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: e.spec, TTL: 8 * time.Hour, RequestedBy: "alice", Command: "up"})
	if err != nil {
		t.Fatalf("up %s: %v", name, err)
	}
	return res
}

// TestClusterLife is the engine on the wire, from the first up to the last down, of two clusters
// of one image: their first ups at once share one download and one snapshot import (the image
// lock); one control plane boots long after the others (a slow host), and every node still
// boots with its own config naming the factory in use; the kubeconfig reaches /readyz; the user
// data that held the keys is gone; a status checks every API and readiness check, names the
// lock's holder, reads what every node runs and, once a control plane is off, fails its check at
// the dial; an up rerun after the worker took its config (the trigger lost) sends it no second
// config, changes nothing and downloads nothing; the downs leave only the shared image, with the
// users' kubeconfig ciphertexts and the documents gone.
func TestClusterLife(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{TalosBootFor: func(name string) time.Duration {
		if strings.HasSuffix(name, "acme-shop-42-cp-2") {
			return 10 * time.Minute // 3 s at this time factor: long after the first bootstrap
		}
		return world.TalosBoot
	}})
	const name = "acme-shop-42"
	in := clusterops.Intent{Cluster: name, Spec: e.spec, TTL: 8 * time.Hour, Repository: "acme/shop", Number: 42, Kind: "issue",
		RequestedBy: "alice", Command: "up"}
	other := clusterops.Intent{Cluster: "acme-web-7", Spec: e.spec, TTL: time.Hour, Command: "up"}
	outs := make(chan *clusterops.Outcome, 2)
	for _, in := range []clusterops.Intent{in, other} {
		go func() {
			res, err := e.ops.Up(ctx, in)
			if err != nil {
				t.Errorf("up %s: %v", in.Cluster, err)
			}
			outs <- res
		}()
	}
	var res *clusterops.Outcome
	for range 2 {
		if r := <-outs; r != nil && r.Header.Cluster == name {
			res = r
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if n := e.w.Factory.ImageRequests(); n != 3 { // one qcow2 for the bucket, one raw.zst per worker
		t.Errorf("factory served %d images, want 3 (one shared qcow2, two worker images)", n)
	}
	if n := len(inventory(e, "block_snapshot")); n != 1 {
		t.Errorf("%d snapshots, want the one shared snapshot", n)
	}
	if res.Header.Phase != string(lifecycle.PhaseReady) || !res.Created || res.Header.Expires.Sub(res.Header.Created) != 8*time.Hour {
		t.Fatalf("header after up = %+v, created=%v; want ready, created, expiring in 8 h", res.Header, res.Created)
	}

	t.Run("kubeconfig, user data and configs", func(t *testing.T) { lifeAfterUp(ctx, t, e, res) })
	t.Run("status", func(t *testing.T) { lifeStatus(ctx, t, e, name) })
	t.Run("rerun after the worker took its config", func(t *testing.T) { lifeRerun(ctx, t, e, in, res) })

	// What chatops hands a user: a ciphertext under the cluster's public kubeconfig directory.
	userKey := clusterops.PublicKubeconfigDir(name) + "/0123.age"
	if err := e.store.PutPublic(ctx, userKey, []byte("age-encryption.org/v1 ...")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []clusterops.Intent{in, other} {
		c.Command = "down"
		rep, err := e.ops.Down(ctx, c)
		if err != nil {
			t.Fatalf("down %s: %v", c.Cluster, err)
		}
		if len(rep.Report.Deleted) < 12 {
			t.Errorf("down %s reported %d deletions, want at least 12", c.Cluster, len(rep.Report.Deleted))
		}
		if left := e.live(c.Cluster); len(left) > 0 {
			t.Errorf("down %s left %v", c.Cluster, left)
		}
	}
	for _, r := range e.w.Scaleway.Inventory() {
		if !provision.HasTag(r.Tags, provision.TagShared) {
			t.Errorf("non-shared resource left after the downs: %s %s %v", r.Kind, r.Name, r.Tags)
		}
	}
	if _, err := e.store.Get(ctx, name); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("state document still there after down: %v", err)
	}
	if _, err := e.ops.Kubeconfig(ctx, name); err == nil {
		t.Error("kubeconfig object still there after down")
	}
	if _, err := e.store.SignedURL(ctx, userKey, time.Minute); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("a user's kubeconfig ciphertext is still there after down: %v", err)
	}
}

// inventory lists the IDs of the emulator's resources of kind.
func inventory(e *env, kind string) []string {
	var out []string
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == kind {
			out = append(out, r.ID)
		}
	}
	return out
}

// lifeAfterUp: the kubeconfig from its own encrypted object reaches the stand-in API server over
// TLS; the control planes' user data held the cluster's keys and none is left; every node booted
// configured, with the installer of the factory in use (POC_IMAGE_FACTORY_URL).
func lifeAfterUp(ctx context.Context, t *testing.T, e *env, res *clusterops.Outcome) {
	kc, err := e.ops.Kubeconfig(ctx, res.Header.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := talos.Readyz(ctx, kc); err != nil {
		t.Fatalf("kubeconfig does not reach /readyz: %v", err)
	}
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
	factoryHost := strings.TrimPrefix(e.w.Factory.URL(), "http://")
	ips := append(strings.Split(st.Outputs[cluster.OutTalosNodes], ","), st.Outputs[cluster.OutWorkerIP])
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

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func healthByName(hs []clusterops.Health) map[string]clusterops.Health {
	m := map[string]clusterops.Health{}
	for _, h := range hs {
		m[h.Name] = h
	}
	return m
}

// lifeStatus: the status of the running cluster (every Talos API and readiness check answers),
// of a held lock, and what every node runs (secrets redacted unless asked).
func lifeStatus(ctx context.Context, t *testing.T, e *env, name string) {
	s, err := e.ops.Status(ctx, name, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock != nil {
		t.Errorf("lock = %+v after up released it, want nil", s.Lock)
	}
	got := healthByName(s.Health)
	// The readiness checks up waits for (cluster-ready), every one of them: /poc status and bot
	// status both show this list.
	want := append([]string{"talos-api cp-0", "talos-api cp-1", "talos-api cp-2", "talos-api worker", "kubernetes-api"}, talos.ReadyChecks...)
	if len(s.Health) != len(want) {
		t.Errorf("health has %d entries, want %d: %+v", len(s.Health), len(want), s.Health)
	}
	for _, n := range want {
		if h, ok := got[n]; !ok || !h.OK || h.Target == "" {
			t.Errorf("%s: %+v, want OK with a target", n, h)
		}
	}
	if s.Unreachable != "" {
		t.Errorf("a runner inside admin_cidrs is told it is outside: %q", s.Unreachable)
	}
	if !strings.HasPrefix(got["kubernetes-api"].Target, "https://") {
		t.Errorf("kubernetes-api target = %q, want the API URL", got["kubernetes-api"].Target)
	}

	l, err := e.store.Lock(ctx, name, statestore.LockInfo{Actor: "bob", Command: "up", RunID: "991"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s, err = e.ops.Status(ctx, name, false)
	_ = l.Release(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock == nil || s.Lock.Actor != "bob" || s.Lock.RunID != "991" || s.Health != nil {
		t.Errorf("lock = %+v, health %+v: want bob's up of run 991 and no check", s.Lock, s.Health)
	}

	for _, withSecrets := range []bool{false, true} {
		cfgs, err := e.ops.MachineConfigs(ctx, name, withSecrets)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfgs) != 4 || cfgs[3].Node != "worker" {
			t.Fatalf("machine configs of %d nodes (%+v), want cp-0..cp-2 and the worker", len(cfgs), cfgs)
		}
		for _, c := range cfgs {
			if c.Err != nil {
				t.Fatalf("%s: %v", c.Node, c.Err)
			}
			cfg, err := configloader.NewFromBytes(c.Config)
			if err != nil {
				t.Fatalf("%s: the config does not load: %v", c.Node, err)
			}
			if want := c.Node != "worker"; cfg.Machine().Type().IsControlPlane() != want {
				t.Errorf("%s: control plane = %v", c.Node, !want)
			}
			if len(cfg.NetworkRules().Rules()) == 0 {
				t.Errorf("%s: no firewall rule in the config it runs", c.Node)
			}
			token := cfg.Machine().Security().Token()
			if redacted := token == talos.Redacted; redacted == withSecrets || token == "" {
				t.Errorf("%s with secrets %v: machine token %q", c.Node, withSecrets, token)
			}
		}
	}
}

// lifeRerun: an up that stopped after the worker took its config but before it was recorded (the
// trigger lost) reruns without an insecure call (a configured Talos node takes none, and the
// rerun must not retry one until its deadline), changes nothing and downloads nothing. Then a
// powered-off control plane fails its status check quickly, at the dial, and the others stay OK.
func lifeRerun(ctx context.Context, t *testing.T, e *env, in clusterops.Intent, res *clusterops.Outcome) {
	worker := e.w.Node(res.State.Outputs[cluster.OutWorkerIP])
	if worker == nil {
		t.Fatal("no Talos node on the worker after up")
	}
	doc, err := e.store.Get(ctx, in.Cluster)
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
	before, served := len(e.w.Scaleway.Inventory()), e.w.Factory.BytesServed()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := e.ops.Up(rctx, clusterops.Intent{Cluster: in.Cluster, Spec: e.spec, RequestedBy: "alice", Command: "up"}); err != nil {
		t.Fatalf("rerun of up after the worker was configured: %v", err)
	}
	if n := worker.Calls("/machine.MachineService/ApplyConfiguration"); n != 1 {
		t.Errorf("the worker was sent %d configs, want the first one only", n)
	}
	if after := len(e.w.Scaleway.Inventory()); after != before {
		t.Errorf("the rerun changed the inventory: %d → %d resources", before, after)
	}
	if d := e.w.Factory.BytesServed() - served; d != 0 {
		t.Errorf("the rerun downloaded %d bytes from the factory", d)
	}

	rec := res.State.Resources[scaleway.NodeServer(1)]
	ip := strings.Split(res.State.Outputs[cluster.OutTalosNodes], ",")[1]
	client, err := scw.NewClient(scw.WithAPIURL(e.w.ScalewayURL), scw.WithAuth(e.w.AccessKey, e.w.SecretKey), scw.WithDefaultProjectID(world.ProjectID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := instance.NewAPI(client).ServerAction(&instance.ServerActionRequest{Zone: scw.Zone(rec.Zone), ServerID: rec.ID,
		Action: instance.ServerActionPoweroff}); err != nil {
		t.Fatalf("power off cp-1: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for slices.Contains(e.w.Nodes(), ip) {
		if time.Now().After(deadline) {
			t.Fatalf("cp-1 (%s) still answers 30 s after power-off", ip)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s, err := e.ops.Status(ctx, in.Cluster, true)
	if err != nil {
		t.Fatal(err)
	}
	got := healthByName(s.Health)
	// Quickly: the closed port fails the dial, before any protocol check spends its budget. (A
	// bound on the elapsed time would fail on a loaded machine, not on a slow status.)
	if h := got["talos-api cp-1"]; h.OK || !strings.Contains(h.Detail, ip) || !strings.HasPrefix(h.Detail, "cannot connect") {
		t.Errorf("cp-1 = %+v, want not OK, failed at the dial, naming %s", h, ip)
	}
	for _, n := range []string{"talos-api cp-0", "talos-api cp-2", "kubernetes-api"} {
		if !got[n].OK {
			t.Errorf("%s = %+v, want OK", n, got[n])
		}
	}
}

// TestUpWhateverRescueServerHolds: no recording shows what the API's rescue_server holds or when
// (issue 10), so an up must write the worker whether it shows the rescue credentials late or
// never: the bot logs in as "rescue" with the key it passed in ssh_key_ids, and waits for the
// password only when the rescue system's sudo wants one. Each reading is a world of its own.
func TestUpWhateverRescueServerHolds(t *testing.T) {
	t.Parallel()
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

// TestWorldTestsAreFew holds this package to its rule: at most ten of its tests boot a world,
// those whose question is the engine or the wire. It reads the package's test files and counts
// the tests that call, directly or through the package's helpers, what starts a world.
func TestWorldTestsAreFew(t *testing.T) {
	const most = 10
	fset := token.NewFileSet()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]map[string]bool{} // function → the functions it calls, by name
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			callees := map[string]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					switch f := c.Fun.(type) {
					case *ast.Ident:
						callees[f.Name] = true
					case *ast.SelectorExpr:
						if x, ok := f.X.(*ast.Ident); ok {
							callees[x.Name+"."+f.Sel.Name] = true
						}
					}
				}
				return true
			})
			calls[fn.Name.Name] = callees
		}
	}
	boots := map[string]bool{"worldtest.Start": true, "world.Start": true}
	for changed := true; changed; {
		changed = false
		for fn, callees := range calls {
			for c := range callees {
				if boots[c] && !boots[fn] {
					boots[fn], changed = true, true
				}
			}
		}
	}
	var worlds []string
	for fn := range calls {
		if strings.HasPrefix(fn, "Test") && boots[fn] {
			worlds = append(worlds, fn)
		}
	}
	slices.Sort(worlds)
	t.Logf("%d tests boot a world: %v", len(worlds), worlds)
	if len(worlds) > most || len(worlds) == 0 {
		t.Errorf("%d tests of clusterops boot a world (%v), want at most %d: ask a question of policy, of the lock or of the reads of the decision's table (decide_test.go) or of the counted store (ops_test.go)",
			len(worlds), worlds, most)
	}
}
