package clusterops_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// env is a running emulated world plus Ops pointed at it.
type env struct {
	w      *world.World
	ops    *clusterops.Ops
	driver *scaleway.Driver
	store  *statestore.Store
	spec   provision.Spec
}

func newEnv(t *testing.T, opts world.Options) *env {
	t.Helper()
	opts.Dir = t.TempDir()
	if opts.S3 == "" {
		opts.S3 = "file"
	}
	if testing.Verbose() {
		opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	w, err := world.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	p := worldtest.New(t, w, worldtest.Options{Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	return &env{w: w, ops: p.Ops, driver: p.Driver, store: p.Store, spec: p.Spec}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if testing.Verbose() {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (e *env) live(cluster string) []string {
	var out []string
	for _, r := range e.w.Scaleway.Inventory() {
		if provision.OwnedBy(r.Tags, cluster) {
			out = append(out, r.Kind+" "+r.Name)
		}
	}
	return out
}

func TestUpGivesAWorkingKubeconfigAndDownLeavesOnlyTheSharedImage(t *testing.T) {
	e := newEnv(t, world.Options{TimeFactor: 0.005})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t0 := time.Now()
	res, err := e.ops.Up(ctx, clusterops.Request{Cluster: "acme-shop-42", Spec: e.spec, TTL: 8 * time.Hour,
		Repository: "acme/shop", Number: 42, Kind: "issue", RequestedBy: "alice", Command: "up"})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("up took %s", time.Since(t0).Round(time.Millisecond))
	if res.Header.Phase != clusterops.PhaseReady || !res.Created {
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
	if _, err := e.ops.Up(ctx, clusterops.Request{Cluster: "acme-shop-42", Spec: e.spec, RequestedBy: "alice", Command: "up"}); err != nil {
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
	rep, err := e.ops.Down(ctx, clusterops.Request{Cluster: "acme-shop-42", Spec: e.spec, RequestedBy: "alice", Command: "down"})
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
	e := newEnv(t, world.Options{TimeFactor: 0.005, S3: "auto"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for _, name := range []string{"img-a-1", "img-b-2"} {
		go func() {
			_, err := e.ops.Up(ctx, clusterops.Request{Cluster: name, Spec: e.spec, TTL: time.Hour, Command: "up"})
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
