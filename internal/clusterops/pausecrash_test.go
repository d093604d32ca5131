package clusterops_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
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

// crashPoints are the saves of a clean pause and resume a cycle crashes at: every save of the
// pause, each with a resume save spread over the resume's (the first and the last included); with
// POC_CRASH_EVERY_SAVE=1 every save of the resume too (35 cycles: a quarter of an hour under
// -race on a loaded 2-core machine); with -short a sample of six.
func crashPoints(pauseSaves, resumeSaves int64) (pause, resume []int64) {
	if testing.Short() {
		return []int64{0, 1, 2, pauseSaves / 3, 2 * pauseSaves / 3, pauseSaves - 1},
			[]int64{0, resumeSaves / 5, 2 * resumeSaves / 5, 3 * resumeSaves / 5, 4 * resumeSaves / 5, resumeSaves - 1}
	}
	for i := range pauseSaves {
		pause = append(pause, i)
		resume = append(resume, i*(resumeSaves-1)/max(pauseSaves-1, 1))
	}
	if os.Getenv("POC_CRASH_EVERY_SAVE") == "1" {
		resume = resume[:0]
		for i := range resumeSaves {
			resume = append(resume, i)
		}
	}
	return pause, resume
}

// A pause crashed at a state save, then run again, ends paused with nothing lost, and no machine
// (control plane, volume, worker) is ever gone while the bucket lacks a verified snapshot holding
// every object; a resume crashed at a save, then run again, ends ready with every object there
// and every machine once. The cycles crash at saves of a clean run (crashPoints: every save of the
// pause, the resume's spread over its own, or every one); then one cycle crashes the pause at its
// first save, its rerun at its second, and so on until a rerun converges, then the resume alike:
// each rerun gets further into what is left, each crash in the middle of a rerun that itself
// followed a crash.
func TestPauseAndResumeCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	// Images of 1 MiB: every cold resume writes the worker's image again, and its size tests
	// nothing here (the image tests stream 256 MiB).
	e := newEnv(t, world.Options{TimeFactor: 0.002, QCOW2Size: 1 << 20, RawSize: 1 << 20})
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	const name = "acme-crash-1"
	var crash crashAt
	crash.arm(-1)
	clusterops.SetSaveFault(e.ops, crash.fault)

	e.up(ctx, t, name)
	kc, err := e.ops.Kubeconfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	k := newKube(t, kc)
	var keys []string
	write := func(i int) {
		t.Helper()
		n := fmt.Sprintf("obj-%d", i)
		code, obj, err := k.do(ctx, http.MethodPost, "/api/v1/namespaces/default/configmaps", map[string]any{"metadata": map[string]any{"name": n}, "data": map[string]any{"i": fmt.Sprint(i)}})
		if err != nil || code != http.StatusCreated {
			t.Fatalf("write %s: %d %v %v", n, code, obj, err)
		}
		keys = append(keys, "/registry/configmaps/default/"+n)
	}
	readAll := func(when string) {
		t.Helper()
		for i := range keys {
			code, obj, err := k.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/namespaces/default/configmaps/obj-%d", i), nil)
			if d, _ := obj["data"].(map[string]any); err != nil || code != http.StatusOK || d["i"] != fmt.Sprint(i) {
				t.Fatalf("%s: obj-%d = %d %v %v", when, i, code, obj, err)
			}
		}
	}
	machines := func() int {
		return len(e.inventoryOf("instance_server", name)) + len(e.inventoryOf("block_volume", name)) + len(e.inventoryOf("baremetal_server", name))
	}
	running := machines()
	pause := func() (*clusterops.Outcome, error) {
		return e.ops.Pause(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "pause"})
	}
	resume := func() (*clusterops.Outcome, error) {
		return e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: e.spec, RequestedBy: "alice", Command: "resume"})
	}

	// A clean cycle counts the saves.
	write(0)
	crash.arm(-1)
	if _, err := pause(); err != nil {
		t.Fatal(err)
	}
	pauseSaves := crash.count.Load()
	crash.arm(-1)
	if _, err := resume(); err != nil {
		t.Fatal(err)
	}
	resumeSaves := crash.count.Load()
	readAll("after a clean cycle")
	t.Logf("a pause saves the state %d times, a resume %d", pauseSaves, resumeSaves)

	pausePoints, resumePoints := crashPoints(pauseSaves, resumeSaves)
	checkPausing := func(when string) {
		t.Helper()
		if n := machines(); n < running {
			if err := e.snapshotHolds(ctx, name, keys); err != nil {
				t.Fatalf("%s: %d of %d machines are gone but the bucket holds no verified snapshot of everything: %v", when, running-n, running, err)
			}
		}
	}
	for i := range max(len(pausePoints), len(resumePoints)) {
		p := pausePoints[i%len(pausePoints)]
		write(len(keys))
		t.Logf("cycle %d: pause crashes at save %d", i, p)
		crash.arm(p)
		_, perr := pause()
		checkPausing(fmt.Sprintf("pause crashed at save %d", p))
		crash.arm(-1)
		if perr != nil {
			if _, err := pause(); err != nil {
				t.Fatalf("pause again after a crash at save %d: %v", p, err)
			}
		}
		if n := machines(); n != 0 {
			t.Fatalf("after the pause (crash at %d): %d machines left", p, n)
		}
		if err := e.snapshotHolds(ctx, name, keys); err != nil {
			t.Fatalf("paused after a crash at save %d: %v", p, err)
		}
		// The resume, crashed at one of its saves.
		j := resumePoints[i%len(resumePoints)]
		t.Logf("cycle %d: paused (pause error: %v); resume crashes at save %d", i, perr, j)
		crash.arm(j)
		_, rerr := resume()
		crash.arm(-1)
		if rerr != nil {
			if _, err := resume(); err != nil {
				t.Fatalf("resume again after a crash at save %d: %v", j, err)
			}
		}
		doc, _, err := e.ops.Load(ctx, name)
		if err != nil || doc.Header.Phase != string(lifecycle.PhaseReady) {
			t.Fatalf("after the resume (crash at %d): %v %v", j, doc, err)
		}
		if n := machines(); n != running {
			t.Fatalf("after the resume (crash at %d): %d machines, want the %d of the running cluster (no duplicate, none missing)", j, n, running)
		}
		readAll(fmt.Sprintf("pause crashed at %d, resume crashed at %d", p, j))
		if strings.Contains(fmt.Sprint(rerr), "recover") {
			t.Logf("resume crash at %d hit the recovery: %v", j, rerr)
		}
	}

	// Every save in turn: attempt k is the rerun of attempt k-1 and crashes at its own save k (its
	// phase's is the first), so each gets one save further into what is left; the attempts are
	// bounded by twice the saves of a clean run.
	// untilDone reruns run, attempt k crashing at its save k, until one finishes (check, when
	// given, follows every attempt), and returns the attempts it took.
	untilDone := func(what string, saves int64, run func() (*clusterops.Outcome, error), check func(attempt int)) int {
		attempts := 0
		for crashed := true; crashed; attempts++ {
			if attempts > int(2*saves) {
				t.Fatalf("the %s crashed at every save did not converge in %d attempts", what, attempts)
			}
			crash.arm(int64(1 + attempts))
			_, err := run()
			crashed = err != nil
			if check != nil {
				check(attempts)
			}
		}
		crash.arm(-1)
		return attempts
	}
	write(len(keys))
	attempts := untilDone("pause", pauseSaves, pause, func(attempt int) {
		checkPausing(fmt.Sprintf("pause attempt %d, crashed at its save %d", attempt, 1+attempt))
	})
	if n := machines(); n != 0 {
		t.Fatalf("after the pause crashed at every save: %d machines left", n)
	}
	if err := e.snapshotHolds(ctx, name, keys); err != nil {
		t.Fatalf("paused after a crash at every save: %v", err)
	}
	t.Logf("the pause crashed at every save converged in %d attempts", attempts)
	attempts = untilDone("resume", resumeSaves, resume, nil)
	doc, _, err := e.ops.Load(ctx, name)
	if err != nil || doc.Header.Phase != string(lifecycle.PhaseReady) {
		t.Fatalf("after the resume crashed at every save: %v %v", doc, err)
	}
	if n := machines(); n != running {
		t.Fatalf("after the resume crashed at every save: %d machines, want the %d of the running cluster", n, running)
	}
	readAll("after a pause and a resume crashed at every save")
	t.Logf("the resume crashed at every save converged in %d attempts", attempts)
}
