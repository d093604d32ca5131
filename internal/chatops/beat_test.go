package chatops

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/github"
	"github.com/pocbot/pocbot/internal/prkube"
)

// checkRuns records the check run writes of an answerer; the rest of API is not called.
type checkRuns struct {
	API
	mu     sync.Mutex
	writes []github.CheckRun
}

func (c *checkRuns) CreateCheckRun(_ context.Context, cr github.CheckRun) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, cr)
	return 7, nil
}

func (c *checkRuns) UpdateCheckRun(ctx context.Context, _ int64, cr github.CheckRun) error {
	_, err := c.CreateCheckRun(ctx, cr)
	return err
}

func (c *checkRuns) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.writes)
}

// A job takes a working answer unchanged for prkube.DefaultRedispatch for a dead run and asks
// again, starting one more bot run per 5 minutes of a cold up: while the bot makes or waits for
// the cluster, beat writes the latest working answer again, and stops with the work. Failed on
// the old code: a working answer was written only when its message changed.
func TestAnswererBeatsWhileItWorks(t *testing.T) {
	if prkube.Heartbeat*2 > prkube.DefaultRedispatch {
		t.Fatalf("the heartbeat %s is not well under the job's redispatch %s", prkube.Heartbeat, prkube.DefaultRedispatch)
	}
	gh := &checkRuns{}
	r := &run{h: &Handler{GitHub: gh, Log: slog.New(slog.DiscardHandler)}, out: &Outcome{}, cluster: "acme-shop-7"}
	a := &answerer{r: r, req: prkube.Request{RunID: 900, RunAttempt: 1, HeadSHA: strings.Repeat("a", 40), Nonce: strings.Repeat("b", 32)}}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	a.working(ctx, "waiting for the cluster: provisioning by walt")
	stop := a.beat(ctx, 10*time.Millisecond)
	for gh.count() < 4 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	after := gh.count()
	if after < 4 {
		t.Fatalf("%d writes while the work went on, want the first and 3 beats", after)
	}
	for _, w := range gh.writes {
		ans, err := prkube.ParseAnswer(w.Text)
		if err != nil || ans.State != prkube.StateWorking || ans.Message != "waiting for the cluster: provisioning by walt" {
			t.Errorf("a beat wrote %+v (%v), want the latest working answer", ans, err)
		}
	}
	if err := a.final(ctx, prkube.Answer{State: prkube.StateRefused, Message: "done"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := gh.count(); n != after+1 {
		t.Errorf("%d writes after stop and the final answer, want %d: the beat went on", n, after+1)
	}
}
