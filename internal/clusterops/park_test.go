package clusterops_test

import (
	"bytes"
	"os"
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
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
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
func (e *env) bmName(id string) string { return bmNameIn(e.w, id) }

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

// implant is what a tenant's privileged workload could leave on the worker's disk, inside the
// Talos image's partitions (1 MiB in: within the image the rescue write covers).
var implant = []byte("pocbot-test-implant: left by the cluster that used this disk")

const implantAt = 1 << 20

// plant writes implant into the disk of Elastic Metal server id.
func (e *env) plant(t *testing.T, id string) {
	t.Helper()
	f, err := os.OpenFile(e.w.Disk(id), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(implant, implantAt); err != nil {
		t.Fatal(err)
	}
}

// planted tells whether the disk of server id still holds the implant.
func (e *env) planted(t *testing.T, id string) bool {
	t.Helper()
	f, err := os.Open(e.w.Disk(id))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, len(implant))
	if _, err := f.ReadAt(got, implantAt); err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(got, implant)
}

// A down with park_for parks the worker: its whole disk written again from the pinned image and
// read back from rescue (what the cluster's workloads left there is gone), the park configuration,
// the pool entry with the proof and the repository, the parked tag. The next up of the same
// repository adopts it without ordering, rescuing or writing anything, says where it comes from,
// and gets a working cluster; an up of another repository never gets it; a park that runs out of
// time deletes the worker and the down completes. Before issue 36 the park reset STATE and
// EPHEMERAL only (the implant stayed), the entry named no repository and any up of the bucket
// adopted it.
func TestParkOnDownThenAdopt(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{})

	first := e.up(ctx, t, "acme-shop-1")
	w := first.State.Resources[scaleway.NodeWorker]
	ip := first.State.Outputs[cluster.OutWorkerIP]
	e.plant(t, w.ID)
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
	if e.planted(t, w.ID) {
		t.Fatal("the parked worker's disk still holds what its cluster left there: the park did not write it again")
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
	if entry.Reimage == nil || len(entry.Reimage.SHA256) != 64 || entry.Reimage.Disk != entry.Disk || entry.Reimage.Bytes <= 0 {
		t.Fatalf("pool entry of %s proves no re-image: %+v", w.ID, entry.Reimage)
	}
	node := e.w.Node(ip)
	if node == nil || !strings.Contains(string(node.Config()), "pocbot-parked") {
		t.Fatal("the parked worker does not run its park configuration")
	}
	if strings.Contains(string(node.Config()), "acme-shop-1") {
		t.Fatal("the parked worker still holds the old cluster's configuration")
	}

	// Two ups of the repository race for the one parked worker: one adopts it, the other orders
	// its own; so does an up of another repository, which is never offered it.
	orders, reboots := e.bmCalls()
	var mu sync.Mutex
	res := map[string]*clusterops.Outcome{}
	var wg sync.WaitGroup
	for _, c := range []struct{ name, repo string }{{"acme-shop-2", ""}, {"acme-shop-9", ""}, {"evil-corp-1", "evil/corp"}} {
		wg.Go(func() {
			r, err := e.ops.Up(ctx, clusterops.Intent{Cluster: c.name, Spec: e.spec, TTL: 8 * time.Hour, RequestedBy: "alice", Command: "up", Repository: c.repo})
			if err != nil {
				t.Errorf("up %s: %v", c.name, err)
			}
			mu.Lock()
			res[c.name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if res["evil-corp-1"].State.Resources[scaleway.NodeWorker].ID == w.ID {
		t.Fatal("another repository's up adopted the parked worker")
	}
	var second, other *clusterops.Outcome
	for _, name := range []string{"acme-shop-2", "acme-shop-9"} {
		if r := res[name]; r.State.Resources[scaleway.NodeWorker].ID == w.ID {
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
	if o, r := e.bmCalls(); o != orders+2 || r != reboots+4 {
		t.Fatalf("the three ups ordered %d and rebooted %d Elastic Metal servers; want 2 and 4 (the two others' rescue and normal boot only)", o-orders, r-reboots)
	}
	if from := second.State.Outputs[cluster.OutWorkerAdopted]; !strings.Contains(from, "parked worker "+w.ID) || !strings.Contains(from, "acme-shop-1") ||
		!strings.Contains(from, entry.Reimage.SHA256[:12]) {
		t.Fatalf("the adopting cluster says its worker comes from %q", from)
	}
	if from := other.State.Outputs[cluster.OutWorkerAdopted]; from != "" {
		t.Fatalf("a cluster that ordered its worker says it adopted one: %q", from)
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

	// A park that runs out of its time is a delete: the down completes, nothing is parked.
	hasty := worldtest.New(t, e.w, worldtest.Options{ParkTimeout: time.Millisecond})
	ow := other.State.Resources[scaleway.NodeWorker].ID
	if _, err := hasty.Ops.Down(ctx, clusterops.Intent{Cluster: other.Header.Cluster, RequestedBy: "alice", Command: "down", ParkFor: time.Hour}); err != nil {
		t.Fatalf("a down whose park ran out of time: %v", err)
	}
	if _, ok := e.bm(ow); ok {
		t.Fatal("a park that ran out of time left the worker")
	}
	for _, c := range []string{second.Header.Cluster, "evil-corp-1"} {
		if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: c, RequestedBy: "alice", Command: "down"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := e.bm(w.ID); ok {
		t.Fatal("a down without park_for left the worker")
	}
	if len(e.pool(t).Workers) != 0 {
		t.Fatalf("pool after a plain down = %+v", e.pool(t).Workers)
	}
}
