package clusterops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// Two resumes at once in a repository whose budget has room for one running cluster beside a
// paused one: the second is refused. The resume passes the budget under the repository's
// admission lock, as a new cluster does, and records the running cost before it lets the lock go,
// so the next admission counts it running. (Before, the check ran outside the lock and the
// resuming cluster kept its paused price until ready: the second resume, started once the first
// had passed its check, passed too.)
func TestConcurrentResumesPassTheBudgetOneAtATime(t *testing.T) {
	t.Parallel()
	e, ctx := start(t, 4*time.Minute, world.Options{TimeFactor: 0.002})
	bounds := repoconfig.Default()
	bounds.MaxClusters = 5
	bounds.MaxDailyNanoEUR = 5_000_000_000 // one seed cluster costs ≈ 4.30 € a day, a paused one ≈ 0.30 €
	intent := func(name string, number int, cmd string) clusterops.Intent {
		return clusterops.Intent{Cluster: name, Spec: e.spec, TTL: 8 * time.Hour, Repository: "acme/shop", Number: number, Kind: "issue",
			RequestedBy: "alice", Command: cmd, Bounds: &bounds}
	}
	names := []string{"acme-shop-1", "acme-shop-2"}
	for i, name := range names {
		if _, err := e.ops.Up(ctx, intent(name, i+1, "up")); err != nil {
			t.Fatalf("up %s: %v", name, err)
		}
		if _, err := e.ops.Pause(ctx, intent(name, i+1, "pause")); err != nil {
			t.Fatalf("pause %s: %v", name, err)
		}
	}
	// The second resume starts once the first has passed the budget and begins (its Started).
	second := make(chan error, 1)
	first := intent(names[0], 1, "resume")
	first.Started = func(context.Context, *clusterops.Outcome) int64 {
		go func() {
			out, err := e.ops.Up(ctx, intent(names[1], 2, "resume"))
			if err == nil && out.Refusal == nil {
				err = errors.New("admitted")
			} else if out.Refusal != nil && out.Refusal.Kind == lifecycle.RefuseBudget {
				err = nil
			}
			second <- err
		}()
		return 0
	}
	if out, err := e.ops.Up(ctx, first); err != nil || out.Refusal != nil {
		t.Fatalf("first resume: %+v %v", out, err)
	}
	if err := <-second; err != nil {
		t.Fatalf("the second resume, with the first one running, was not refused by the budget: %v", err)
	}
	doc, _, err := e.ops.Load(ctx, names[1])
	if err != nil || doc.Header.Phase != string(lifecycle.PhasePaused) {
		t.Fatalf("after its refused resume, %s: %+v %v", names[1], doc, err)
	}
}
