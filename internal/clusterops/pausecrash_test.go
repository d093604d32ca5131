package clusterops_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// crashAt makes the ops' state saves fail from the n-th on (n < 0: never) and counts them.
type crashAt struct {
	n     atomic.Int64
	count atomic.Int64
}

func (c *crashAt) fault() error {
	if k := c.count.Add(1) - 1; c.n.Load() >= 0 && k >= c.n.Load() {
		return errors.New("injected crash")
	}
	return nil
}

func (c *crashAt) arm(n int64) { c.count.Store(0); c.n.Store(n) }

// snapshotHolds reads the paused cluster's snapshot from the bucket as a resume would and
// checks it verifies against what the state recorded and holds every key.
func (e *env) snapshotHolds(ctx context.Context, name string, keys []string) error {
	_, st, err := e.ops.Load(ctx, name)
	if err != nil {
		return err
	}
	rec := st.Outputs[cluster.OutEtcdSnapshot]
	if rec == "" {
		return errors.New("no snapshot recorded in the state")
	}
	info, err := cluster.ParseSnapshot(rec)
	if err != nil {
		return err
	}
	if err := (clusterops.Snapshots{Store: e.store}).Verify(ctx, name, info); err != nil {
		return err
	}
	rc, err := e.store.OpenArtifactStream(ctx, name, clusterops.ArtifactEtcdSnapshot)
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return err
	}
	have, err := simtalos.SnapshotKeys(b)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !slices.Contains(have, k) {
			return fmt.Errorf("snapshot lacks %s", k)
		}
	}
	return nil
}

// crashWorld is one cluster of its own world, paused and resumed with its state saves crashed
// on demand, and what was written into it: the objects a check expects, by name, with their
// latest value (an object deleted is gone from the map, and must be gone from the cluster).
type crashWorld struct {
	e       *env
	name    string
	crash   crashAt
	k       *kube
	objects map[string]string
	serial  int
	running []string // the live resources of the running cluster, "kind name", sorted
	paused  []string // the live resources of the paused cluster
	// writes counts the creations, updates and deletions; checked, the objects a check found
	// with their latest value.
	writes, checked int
	// parkFor > 0: the pauses park the Elastic Metal worker in the bucket's pool (park_for)
	// instead of deleting it, and the resumes adopt it back; unparked counts the pauses that
	// deleted it instead. releaseIPs: the pauses give the reserved IPs back (--release-ips).
	parkFor    time.Duration
	releaseIPs bool
	unparked   int
}

// crashFactor is the crash tests' time factor: the saves and what they record do not depend on
// how long the modeled operations last, and every modeled wait is a few polls of CPU under -race.
const crashFactor = 0.0005

// crashStep bounds every step of the crash worlds: at their factor a step takes milliseconds of
// modeled time, so a wait that cannot end (a node that never answers) fails the step, and the
// test, in this long instead of hanging until the test's own deadline.
const crashStep = 90 * time.Second

func newCrashWorld(ctx context.Context, t *testing.T, name string, parkFor time.Duration, releaseIPs bool) *crashWorld {
	t.Helper()
	// Images of 1 MiB: every cold resume writes the worker's image again, and its size tests
	// nothing here (the image tests stream 256 MiB).
	c := &crashWorld{e: newEnvWith(t, world.Options{TimeFactor: crashFactor, QCOW2Size: 1 << 20, RawSize: 1 << 20}, worldtest.Options{StepTimeout: crashStep}),
		name: name, objects: map[string]string{}, releaseIPs: releaseIPs}
	c.crash.arm(-1)
	clusterops.SetSaveFault(c.e.ops, c.crash.fault)
	c.e.up(ctx, t, name)
	kc, err := c.e.ops.Kubeconfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	c.k = newKube(t, kc)
	c.running = c.live()
	c.parkFor = parkFor
	return c
}

// live lists the cluster's resources in the emulator's inventory, sorted; with releaseIPs the
// reserved IPs are counted, not named (each resume takes new ones).
func (c *crashWorld) live() []string {
	s := c.e.live(c.name)
	if c.releaseIPs {
		for i, r := range s {
			if strings.HasPrefix(r, "instance_ip ") {
				s[i] = "instance_ip (new at every resume)"
			}
		}
	}
	slices.Sort(s)
	return s
}

func (c *crashWorld) pause(ctx context.Context) error {
	_, err := c.e.ops.Pause(ctx, clusterops.Intent{Cluster: c.name, RequestedBy: "alice", Command: "pause", ParkFor: c.parkFor, ReleaseIPs: c.releaseIPs})
	return err
}

func (c *crashWorld) resume(ctx context.Context) error {
	_, err := c.e.ops.Up(ctx, clusterops.Intent{Cluster: c.name, Spec: c.e.spec, RequestedBy: "alice", Command: "resume"})
	return err
}

// change writes what a user would between two pauses: a new ConfigMap, a new value for the
// oldest one, and every other time the deletion of the second oldest once there are enough, so
// that a check proves the latest state came back, not merely some state.
func (c *crashWorld) change(ctx context.Context, t *testing.T) {
	t.Helper()
	const base = "/api/v1/namespaces/default/configmaps"
	names := slices.Sorted(maps.Keys(c.objects))
	c.serial++
	n, v := fmt.Sprintf("obj-%03d", c.serial), fmt.Sprint(c.serial)
	if code, obj, err := c.k.do(ctx, http.MethodPost, base, map[string]any{"metadata": map[string]any{"name": n}, "data": map[string]any{"v": v}}); err != nil || code != http.StatusCreated {
		t.Fatalf("create %s: %d %v %v", n, code, obj, err)
	}
	c.objects[n] = v
	c.writes++
	if len(names) > 0 {
		u, v := names[0], fmt.Sprintf("%s updated by %d", names[0], c.serial)
		if code, obj, err := c.k.do(ctx, http.MethodPut, base+"/"+u, map[string]any{"metadata": map[string]any{"name": u}, "data": map[string]any{"v": v}}); err != nil || code != http.StatusOK {
			t.Fatalf("update %s: %d %v %v", u, code, obj, err)
		}
		c.objects[u] = v
		c.writes++
	}
	if len(names) > 2 && c.serial%2 == 0 {
		d := names[1]
		if code, obj, err := c.k.do(ctx, http.MethodDelete, base+"/"+d, nil); err != nil || code != http.StatusOK {
			t.Fatalf("delete %s: %d %v %v", d, code, obj, err)
		}
		delete(c.objects, d)
		c.writes++
	}
}

// holds checks the cluster's ConfigMaps are exactly the objects, each with its latest value
// (one listing: nothing lost, nothing stale, nothing deleted come back).
func (c *crashWorld) holds(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	code, list, err := c.k.do(ctx, http.MethodGet, "/api/v1/namespaces/default/configmaps", nil)
	if err != nil || code != http.StatusOK {
		t.Fatalf("%s: list the ConfigMaps: %d %v %v", when, code, list, err)
	}
	got := map[string]string{}
	items, _ := list["items"].([]any)
	for _, it := range items {
		o, _ := it.(map[string]any)
		meta, _ := o["metadata"].(map[string]any)
		data, _ := o["data"].(map[string]any)
		if n, _ := meta["name"].(string); strings.HasPrefix(n, "obj-") {
			got[n], _ = data["v"].(string)
		}
	}
	if !maps.Equal(got, c.objects) {
		t.Fatalf("%s: the cluster holds %v, want the latest writes %v", when, got, c.objects)
	}
	c.checked += len(got)
}

// keys are the etcd keys of the objects.
func (c *crashWorld) keys() []string {
	var out []string
	for n := range c.objects {
		out = append(out, "/registry/configmaps/default/"+n)
	}
	return out
}

// checkPausing fails when a machine of the running cluster is gone while the bucket lacks a
// verified snapshot holding every object.
func (c *crashWorld) checkPausing(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	if n := len(c.e.billedCompute(c.name)); n < len(c.runningCompute()) {
		if err := c.e.snapshotHolds(ctx, c.name, c.keys()); err != nil {
			t.Fatalf("%s: %d machines are gone but the bucket holds no verified snapshot of everything: %v", when, len(c.runningCompute())-n, err)
		}
	}
}

// runningCompute are the running cluster's machines among its live resources.
func (c *crashWorld) runningCompute() []string {
	return slices.DeleteFunc(slices.Clone(c.running), func(r string) bool {
		k, _, _ := strings.Cut(r, " ")
		return k != "instance_server" && k != "baremetal_server" && k != "block_volume"
	})
}

// checkPaused fails unless the cluster is paused with no machine, the same resources as after
// every other pause (none orphaned, none billed twice), and a verified snapshot of everything.
func (c *crashWorld) checkPaused(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	if m := c.e.billedCompute(c.name); len(m) != 0 {
		t.Fatalf("%s: paused with machines left: %v", when, m)
	}
	live := c.live()
	if c.paused == nil {
		c.paused = live
	} else if !slices.Equal(live, c.paused) {
		t.Fatalf("%s: the paused cluster holds %v, the first pause left %v", when, live, c.paused)
	}
	if err := c.e.snapshotHolds(ctx, c.name, c.keys()); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	// Parked, the worker stays, tagged as the pool's; a park that cannot finish falls back to the
	// delete (the safe side: a server nothing can prove is never kept).
	if p, n := c.parked(), c.servers(); p != n || n > 1 || (c.parkFor == 0 && n != 0) {
		t.Fatalf("%s: %d Elastic Metal servers, %d of them parked; want none, or the worker parked when parking", when, n, p)
	}
	if c.parkFor > 0 && c.servers() == 0 {
		c.unparked++
	}
}

// parked counts the Elastic Metal servers in the emulator tagged as parked in the pool.
func (c *crashWorld) parked() int {
	n := 0
	for _, r := range c.e.w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" && slices.Contains(r.Tags, pool.Tag) {
			n++
		}
	}
	return n
}

// servers counts the Elastic Metal servers in the emulator.
func (c *crashWorld) servers() int {
	n := 0
	for _, r := range c.e.w.Scaleway.Inventory() {
		if r.Kind == "baremetal_server" {
			n++
		}
	}
	return n
}

// checkResumed fails unless the cluster is ready with the running cluster's resources (none
// missing, none twice, none orphaned) and the latest objects.
func (c *crashWorld) checkResumed(ctx context.Context, t *testing.T, when string) {
	t.Helper()
	doc, _, err := c.e.ops.Load(ctx, c.name)
	if err != nil || doc.Header.Phase != string(lifecycle.PhaseReady) {
		t.Fatalf("%s: %v %v", when, doc, err)
	}
	if live := c.live(); !slices.Equal(live, c.running) {
		t.Fatalf("%s: the cluster holds %v, want the running cluster's %v", when, live, c.running)
	}
	if p, n := c.parked(), c.servers(); p != 0 || n != 1 {
		t.Fatalf("%s: %d Elastic Metal servers, %d of them parked; want the worker alone", when, n, p)
	}
	if c.releaseIPs {
		// New IPs, new endpoint: the kubeconfig the resume issued.
		kc, err := c.e.ops.Kubeconfig(ctx, c.name)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		c.k = newKube(t, kc)
	}
	c.holds(ctx, t, when)
}

// crashCoverage is what the worlds of TestPauseAndResumeCrashAtEveryStep report: the saves
// they crashed at, the saves of a clean pause and resume of a cluster just made (clean), and
// those of the runs armed past their last save (others: a resume after one that crashed saves
// more, as its rerun refreshed the records of the IPs and volumes).
type crashCoverage struct {
	mu                      sync.Mutex
	deleted, parked         crashTally
	writes, checked, cycles int
}

// crashTally is the coverage of one way to pause: the worker deleted, or parked.
type crashTally struct {
	pause, resume             map[int64]bool
	cleanPause, cleanResume   int64
	otherPauses, otherResumes []int64
}

func newCrashTally() crashTally {
	return crashTally{pause: map[int64]bool{}, resume: map[int64]bool{}}
}

func (cv *crashCoverage) add(f func(cv *crashCoverage)) { cv.mu.Lock(); defer cv.mu.Unlock(); f(cv) }

// crashShards is how many worlds share the crash points of a clean run's saves (`make crash`).
const crashShards = 2

// quickStride is the parked world's stride when `make test` runs it alone: it crashes the park
// and the adoption at every third save (0, 3, 6, …), the saves `make crash` covers whole.
const quickStride = 3

// A pause crashed at a state save, then run again, ends paused with nothing lost, and no machine
// (control plane, volume, worker) is ever gone while the bucket lacks a verified snapshot holding
// every object; a resume crashed at a save, then run again, ends ready with the latest objects
// (created, updated, deleted before the pause) and the running cluster's resources once each
// (none missing, none twice, none orphaned). Every save of the pause and every save of the
// resume is crashed at: world k of crashShards (each a world of its own, run side by side)
// crashes its i-th cycle's pause and resume at save k + i*crashShards, until a run armed so
// does not crash (it had fewer saves); the later pauses are clean. The points are saves, not
// steps: a change of the steps or of their order moves nothing here. One more world counts the
// saves of a clean cycle (every one of them must have been crashed at), then crashes the pause
// at its first save, its rerun at its second, and so on until a rerun converges, then the
// resume alike: each crash in the middle of a rerun that itself followed a crash. A last world
// does the same with the worker parked in the bucket's pool at every pause (park_for: its disk
// written again from rescue) and adopted back at every resume, and the reserved IPs given back
// at every pause and new ones taken at every resume (--release-ips): at most one Elastic Metal
// server ever exists, it is parked exactly while the cluster is paused, and every save of that
// pause and resume is crashed at. Every step is bounded (crashStep): no wait hangs the test.
// With -short each world runs two cycles.
//
// `make test` runs the reruns' world and the first parked world (a crash at every save of
// successive reruns, and a third of the parked cycle's saves); the crash at every save of a clean
// run, and the check that every save was crashed at, take the other shards' worlds (three minutes
// and more of two cores under -race): `make crash` (POC_CRASH_EVERY_SAVE=1) runs them, as a change
// of the pause or resume graphs, of the park, or of the saver, should.
//
// It runs beside the package's other world tests (t.Parallel), its worlds two at a time.
func TestPauseAndResumeCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	cv := &crashCoverage{deleted: newCrashTally(), parked: newCrashTally()}
	everySave := os.Getenv("POC_CRASH_EVERY_SAVE") != ""
	t.Run("worlds", func(t *testing.T) {
		t.Run("every-rerun", func(t *testing.T) {
			t.Parallel()
			crashReruns(t, cv)
		})
		// One parked shard always: alone, the park and the adoption crashed at a third of
		// their saves; with the others, at its share of them.
		stride := quickStride
		if everySave {
			stride = crashShards
		}
		t.Run("every-save-parked-0", func(t *testing.T) {
			t.Parallel()
			crashParked(t, 0, stride, cv)
		})
		if !everySave {
			return
		}
		for k := range crashShards {
			t.Run(fmt.Sprintf("every-save-%d", k), func(t *testing.T) {
				t.Parallel()
				crashShard(t, k, cv)
			})
		}
		for k := 1; k < crashShards; k++ {
			t.Run(fmt.Sprintf("every-save-parked-%d", k), func(t *testing.T) {
				t.Parallel()
				crashParked(t, k, crashShards, cv)
			})
		}
	})
	if t.Failed() || testing.Short() {
		return
	}
	if !everySave {
		t.Log("the crash at every save of a clean pause and resume was not run: `make crash` runs it")
		return
	}
	cv.mu.Lock()
	defer cv.mu.Unlock()
	for _, m := range []struct {
		mode string
		tl   *crashTally
	}{{"worker deleted", &cv.deleted}, {"worker parked, IPs released", &cv.parked}} {
		for _, c := range []struct {
			what    string
			crashed map[int64]bool
			clean   int64
			others  []int64
		}{{"pause", m.tl.pause, m.tl.cleanPause, m.tl.otherPauses}, {"resume", m.tl.resume, m.tl.cleanResume, m.tl.otherResumes}} {
			if c.clean == 0 || len(c.others) == 0 {
				t.Fatalf("%s: no clean %s counted its saves (%d), or no %s armed past its last save (%v)", m.mode, c.what, c.clean, c.what, c.others)
			}
			for i := range c.clean {
				if !c.crashed[i] {
					t.Errorf("%s: no %s crashed at its save %d of %d", m.mode, c.what, i, c.clean)
				}
			}
			t.Logf("%s: a clean %s saves the state %d times, every one crashed at (%d points in all; the runs armed past their last save saved %v times)",
				m.mode, c.what, c.clean, len(c.crashed), c.others)
		}
	}
	t.Logf("%d pause-resume cycles; %d writes (ConfigMaps created, updated, deleted); %d objects found with their latest value after a resume", cv.cycles, cv.writes, cv.checked)
}

// crashShard is world k of TestPauseAndResumeCrashAtEveryStep.
func crashShard(t *testing.T, k int, cv *crashCoverage) {
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	c := newCrashWorld(ctx, t, fmt.Sprintf("acme-crash-%d", k), 0, false)
	c.crashCycles(ctx, t, k, crashShards, &cv.deleted, cv)
}

// cleanCycle changes the objects, then pauses and resumes without a crash, checking both, and
// returns how many times each saved the state.
func (c *crashWorld) cleanCycle(ctx context.Context, t *testing.T) (pauseSaves, resumeSaves int64) {
	t.Helper()
	c.change(ctx, t)
	c.crash.arm(-1)
	if err := c.pause(ctx); err != nil {
		t.Fatal(err)
	}
	pauseSaves = c.crash.count.Load()
	c.checkPaused(ctx, t, "after a clean pause")
	c.crash.arm(-1)
	if err := c.resume(ctx); err != nil {
		t.Fatal(err)
	}
	resumeSaves = c.crash.count.Load()
	c.checkResumed(ctx, t, "after a clean resume")
	return pauseSaves, resumeSaves
}

// crashParked is world k of the parked path of TestPauseAndResumeCrashAtEveryStep
// (park_for and --release-ips): world 0 counts the saves of a clean cycle first, its second one
// (the first pause parks a worker ordered cold, which the first resume adopts with one save more
// than any later one: the counts of a cycle like the crashed ones); cycle i of world k crashes
// the pause and the resume at save k + i*stride (stride: crashShards in `make crash`,
// quickStride for world 0 alone in `make test`). (A world spends most of
// its time waiting, not computing: 74 s of CPU in 319 s at a load of 25, so worlds side by side
// shorten the test.)
func crashParked(t *testing.T, k, stride int, cv *crashCoverage) {
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	c := newCrashWorld(ctx, t, fmt.Sprintf("acme-crash-parked-%d", k), time.Hour, true)
	if k == 0 {
		c.cleanCycle(ctx, t)
		pauseSaves, resumeSaves := c.cleanCycle(ctx, t)
		cv.add(func(cv *crashCoverage) {
			cv.parked.cleanPause, cv.parked.cleanResume = pauseSaves, resumeSaves
			cv.cycles += 2
		})
		if c.unparked != 0 {
			t.Fatal("a clean pause deleted the worker instead of parking it")
		}
	}
	c.crashCycles(ctx, t, k, stride, &cv.parked, cv)
	t.Logf("parked world %d: %d of the pauses crashed at a save deleted the worker instead of parking it", k, c.unparked)
}

// crashCycles runs pause-resume cycles, the i-th crashing its pause and its resume at save
// first + i*stride, until a run so armed does not crash; it records the points in tl.
func (c *crashWorld) crashCycles(ctx context.Context, t *testing.T, first, stride int, tl *crashTally, cv *crashCoverage) {
	t.Helper()
	pauseDone, resumeDone := false, false
	for i := 0; !pauseDone || !resumeDone; i++ {
		if testing.Short() && i == 2 {
			return
		}
		// point is this cycle's save; a phase past its last save runs clean (-1).
		point := int64(first + i*stride)
		c.change(ctx, t)
		p := point
		if pauseDone {
			p = -1
		}
		perr := c.crashAt(ctx, t, "pause", p, c.pause, &pauseDone, tl.pause, &tl.otherPauses, cv)
		c.checkPaused(ctx, t, fmt.Sprintf("paused after a crash at save %d (%v)", p, perr))
		j := point
		if resumeDone {
			j = -1
		}
		rerr := c.crashAt(ctx, t, "resume", j, c.resume, &resumeDone, tl.resume, &tl.otherResumes, cv)
		c.checkResumed(ctx, t, fmt.Sprintf("pause crashed at save %d, resume at save %d (%v)", p, j, rerr))
		cv.add(func(cv *crashCoverage) { cv.cycles++ })
	}
	cv.add(func(cv *crashCoverage) { cv.writes += c.writes; cv.checked += c.checked })
}

// crashAt runs the phase what with its saves crashing from save at on (-1: none), then, when it
// failed, again without a crash, which must converge. It records at in crashed, or, when a run
// so armed did not crash (at is past its last save), its count of saves in others, and sets
// done. It returns the crashed run's error.
func (c *crashWorld) crashAt(ctx context.Context, t *testing.T, what string, at int64, run func(context.Context) error,
	done *bool, crashed map[int64]bool, others *[]int64, cv *crashCoverage) error {
	t.Helper()
	c.crash.arm(at)
	err := run(ctx)
	saves := c.crash.count.Load()
	if what == "pause" {
		c.checkPausing(ctx, t, fmt.Sprintf("pause crashed at save %d", at))
	}
	c.crash.arm(-1)
	switch {
	case err != nil:
		cv.add(func(*crashCoverage) { crashed[at] = true })
		if err := run(ctx); err != nil {
			t.Fatalf("%s again after a crash at save %d: %v", what, at, err)
		}
	case at >= 0 && at < saves:
		t.Fatalf("the %s armed to crash at save %d of %d did not fail", what, at, saves)
	case at >= 0:
		*done = true
		cv.add(func(*crashCoverage) { *others = append(*others, saves) })
	}
	return err
}

// crashReruns counts the saves of a clean cycle, then crashes the pause at its first save, its
// rerun at its second, and so on until a rerun converges, then the resume alike: attempt k is the
// rerun of attempt k-1 and crashes at its own save k (its phase's is the first), so each gets one
// save further into what is left.
func crashReruns(t *testing.T, cv *crashCoverage) {
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	c := newCrashWorld(ctx, t, "acme-crash-reruns", 0, false)
	pauseSaves, resumeSaves := c.cleanCycle(ctx, t)
	cv.add(func(cv *crashCoverage) { cv.deleted.cleanPause, cv.deleted.cleanResume = pauseSaves, resumeSaves })
	if testing.Short() {
		return
	}

	// The attempts are bounded by twice the saves of a clean run.
	untilDone := func(what string, saves int64, run func(context.Context) error, check func(attempt int)) int {
		attempts := 0
		for crashed := true; crashed; attempts++ {
			if attempts > int(2*saves) {
				t.Fatalf("the %s crashed at every save did not converge in %d attempts", what, attempts)
			}
			c.crash.arm(int64(1 + attempts))
			crashed = run(ctx) != nil
			if check != nil {
				check(attempts)
			}
		}
		c.crash.arm(-1)
		return attempts
	}
	c.change(ctx, t)
	attempts := untilDone("pause", pauseSaves, c.pause, func(attempt int) {
		c.checkPausing(ctx, t, fmt.Sprintf("pause attempt %d, crashed at its save %d", attempt, 1+attempt))
	})
	c.checkPaused(ctx, t, "after a pause crashed at every save")
	t.Logf("the pause crashed at every save converged in %d attempts", attempts)
	attempts = untilDone("resume", resumeSaves, c.resume, nil)
	c.checkResumed(ctx, t, "after a pause and a resume crashed at every save")
	t.Logf("the resume crashed at every save converged in %d attempts", attempts)
	cv.add(func(cv *crashCoverage) { cv.cycles += 2; cv.writes += c.writes; cv.checked += c.checked })
}
