package reaper_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/reaper"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestEditedHeaderIsNotSpared is hole 4 of issue 11: someone who can write to the state bucket
// moves an expired cluster's expiry to 2099 (same length, integrity trailer recomputed). The
// reaper must not spare it on that header's word: it reports the object as failing
// authentication, and the run counts it as a failure (the job goes red) so that a person looks.
func TestEditedHeaderIsNotSpared(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, time.Minute)
	now := time.Now().UTC().Add(24 * time.Hour)
	expires := now.Add(-time.Hour)
	e.putDoc(t, statestore.Header{Cluster: "victim", Repository: repo, Number: 1, Expires: expires})
	e.putDoc(t, statestore.Header{Cluster: "honest", Repository: repo, Number: 2, Expires: now.Add(time.Hour)})

	b := worldtest.Bucket(t, e.w, world.StateBucket)
	obj, err := b.ReadAll(ctx, "clusters/victim.state")
	if err != nil {
		t.Fatal(err)
	}
	year := []byte(`"expires":"` + expires.Format("2006"))
	if !bytes.Contains(obj, year) {
		t.Fatalf("the header does not hold %s", year)
	}
	edited := bytes.Replace(obj, year, []byte(`"expires":"2099`), 1)
	sum := sha256.Sum256(edited[:len(edited)-sha256.Size])
	copy(edited[len(edited)-sha256.Size:], sum[:])
	if err := b.WriteAll(ctx, "clusters/victim.state", edited, nil); err != nil {
		t.Fatal(err)
	}

	rep, err := reaper.Run(ctx, reaper.Config{Ops: e.ops, Spec: e.spec, Now: func() time.Time { return now }, Log: e.log})
	if err != nil {
		t.Fatal(err)
	}
	tbl := table(t, rep)
	t.Logf("\n%s", tbl)
	d, ok := decisionOf(rep, "victim")
	if !ok || d.Action == reaper.ActionNone || d.Action == reaper.ActionKept {
		t.Fatalf("victim: %+v; an edited header must not spare the cluster", d)
	}
	if d.Action != reaper.ActionTampered || !strings.Contains(tbl, "fails authentication") || rep.Failed() == 0 {
		t.Errorf("victim: %s, %d failures; want %s reported as a failure with what to do:\n%s", d.Action, rep.Failed(), reaper.ActionTampered, tbl)
	}
	if d, _ := decisionOf(rep, "honest"); d.Action != reaper.ActionNone {
		t.Errorf("honest: %s, want %s", d.Action, reaper.ActionNone)
	}
}
