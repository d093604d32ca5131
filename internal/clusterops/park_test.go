package clusterops_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/pool/poolstore"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
)

func (e *env) bm(id string) (tags []string, ok bool) {
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" && r.ID == id {
			return r.Tags, true
		}
	}
	return nil, false
}

// bmName is the Elastic Metal server's name as the API lists it.
func (e *env) bmName(id string) string {
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" && r.ID == id {
			return r.Name
		}
	}
	return ""
}

// bmCalls counts the Elastic Metal orders and reboots the emulator answered.
func (e *env) bmCalls() (orders, reboots int) {
	for _, c := range e.w.Scaleway.Calls() {
		if !strings.Contains(c.Path, "/baremetal/") {
			continue
		}
		switch {
		case c.Method == "POST" && strings.HasSuffix(c.Path, "/servers"):
			orders++
		case c.Method == "POST" && strings.HasSuffix(c.Path, "/reboot"):
			reboots++
		}
	}
	return orders, reboots
}

func (e *env) pool(t *testing.T) pool.Doc {
	t.Helper()
	d, err := (&poolstore.Pool{Store: e.store}).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A down with park_for parks the worker (reset, park configuration, pool entry, parked tag); the
// next up adopts it without ordering, rescuing or writing anything, and gets a working cluster;
// a down whose reset fails, and a down without park_for, delete it.
func TestParkOnDownThenAdopt(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{})

	first := e.up(ctx, t, "acme-shop-1")
	w := first.State.Resources[scaleway.NodeWorker]
	ip := first.State.Outputs[cluster.OutWorkerIP]
	before := time.Now()
	down, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "acme-shop-1", RequestedBy: "alice", Command: "down", ParkFor: 2 * time.Hour})
	if err != nil {
		t.Fatalf("down with park_for: %v", err)
	}
	for _, d := range down.Report.Deleted {
		if d.ID == w.ID {
			t.Fatalf("the parked worker %s was deleted", w.ID)
		}
	}
	tags, ok := e.bm(w.ID)
	if !ok || !slices.Equal(tags, []string{scaleway.ParkedTag}) {
		t.Fatalf("worker %s after the park: present %v, tags %v; want only %s", w.ID, ok, tags, scaleway.ParkedTag)
	}
	if name := e.bmName(w.ID); !strings.HasPrefix(name, "poc-parked-") || strings.Contains(name, "acme-shop-1") {
		t.Fatalf("parked worker %s is named %q; want poc-parked-…, no longer its first cluster's name", w.ID, name)
	}
	entry, ok := e.pool(t).Find(w.ID)
	if !ok || entry.ParkedFrom != "acme-shop-1" || entry.IP != ip || entry.ParkedUntil.Before(before.Add(2*time.Hour)) || len(entry.Talosconfig) == 0 {
		t.Fatalf("pool entry of %s = %+v, %v", w.ID, entry, ok)
	}
	node := e.w.Node(ip)
	if node == nil || !strings.Contains(string(node.Config()), "pocbot-parked") {
		t.Fatal("the parked worker does not run its park configuration")
	}
	if strings.Contains(string(node.Config()), "acme-shop-1") {
		t.Fatal("the parked worker still holds the old cluster's configuration")
	}

	// Two ups race for the one parked worker: one adopts it, the other orders its own.
	orders, reboots := e.bmCalls()
	var second, other *clusterops.Outcome
	var wg sync.WaitGroup
	res := map[string]*clusterops.Outcome{}
	var mu sync.Mutex
	for _, name := range []string{"acme-shop-2", "acme-shop-9"} {
		wg.Go(func() {
			r := e.up(ctx, t, name)
			mu.Lock()
			res[name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for name, r := range res {
		if r.State.Resources[scaleway.NodeWorker].ID == w.ID {
			if second != nil {
				t.Fatalf("both ups got the parked worker %s", w.ID)
			}
			second = r
			t.Logf("%s adopted the parked worker", name)
		} else {
			other = r
		}
	}
	if second == nil || other == nil {
		t.Fatalf("racing ups: adopter %v, other %v; want one of each", second != nil, other != nil)
	}
	if o, r := e.bmCalls(); o != orders+1 || r != reboots+2 {
		t.Fatalf("the two ups ordered %d and rebooted %d Elastic Metal servers; want 1 and 2 (the loser's rescue and normal boot only)", o-orders, r-reboots)
	}
	if _, ok := e.pool(t).Find(w.ID); ok {
		t.Fatal("the adopted worker is still in the pool")
	}
	if tags, _ := e.bm(w.ID); !provision.OwnedBy(tags, second.Header.Cluster) || slices.Contains(tags, scaleway.ParkedTag) {
		t.Fatalf("adopted worker tags = %v", tags)
	}
	if name := e.bmName(w.ID); !strings.HasPrefix(name, "poc-"+second.Header.Cluster+"-") {
		t.Fatalf("adopted worker %s is named %q; want the adopting cluster's name poc-%s-…", w.ID, name, second.Header.Cluster)
	}
	if !strings.Contains(string(e.w.Node(ip).Config()), second.Header.Cluster) {
		t.Fatal("the adopted worker does not run the new cluster's configuration")
	}
	if _, ok := second.State.Secrets[cluster.SecretParkTalosconfig]; ok && len(second.State.Secrets[cluster.SecretParkTalosconfig]) > 0 {
		t.Fatal("the park CA's access is still kept after the adoption")
	}
	kc, err := e.ops.Kubeconfig(ctx, second.Header.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := talos.Readyz(ctx, kc); err != nil {
		t.Fatal(err)
	}

	downsDeleteTheWorker(ctx, t, e, second, other, w.ID)
}

// downsDeleteTheWorker: a reset that fails is not a park: other's worker is deleted as without
// park_for, and the pool holds nothing; a down without park_for deletes second's (adopted, id).
func downsDeleteTheWorker(ctx context.Context, t *testing.T, e *env, second, other *clusterops.Outcome, id string) {
	ow := other.State.Resources[scaleway.NodeWorker]
	e.w.Node(other.State.Outputs[cluster.OutWorkerIP]).FailReset(true)
	if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: other.Header.Cluster, RequestedBy: "alice", Command: "down", ParkFor: time.Hour}); err != nil {
		t.Fatalf("down whose park fails: %v", err)
	}
	if tags, ok := e.bm(ow.ID); ok {
		t.Fatalf("worker %s survived a failed reset (tags %v)", ow.ID, tags)
	}
	if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: second.Header.Cluster, RequestedBy: "alice", Command: "down"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.bm(id); ok {
		t.Fatal("a down without park_for left the worker")
	}
	if len(e.pool(t).Workers) != 0 {
		t.Fatalf("pool after a failed park and a plain down = %+v", e.pool(t).Workers)
	}
}
