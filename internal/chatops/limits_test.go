package chatops_test

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/chatops"
	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/github"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// TestConcurrentUpsUnderSecondaryLimits: five `/poc up` at once on one installation
// (max_clusters 5, room for five by money too), against the stand-in's secondary limits at GitHub's real scale (80 content
// writes a minute, 500 an hour, counted in real time) with the installation already at the edge:
// other runs' writes of the last minute and hour leave it nothing for the first seconds. Each run is its own process (its own client, as on Actions), at the production
// cadence (no sticky-interval override). The limits refuse writes, and still every run ends
// with its final status on its status comment and its one notification.
func TestConcurrentUpsUnderSecondaryLimits(t *testing.T) {
	t.Parallel()
	const repo = "busy/shop"
	// Images of 1 MiB and a lock lease of 30 s: five ups at once under -race on a loaded machine
	// must not fail for what this test is not about (a 16 MiB image written five times, a 5 s
	// lease whose renewal the bucket answered late).
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1, 2, 3, 4, 5}, config: "max_clusters: 5\nmax_daily_eur: 50\n",
		timeout: 3 * time.Minute, world: world.Options{QCOW2Size: 1 << 20, RawSize: 1 << 20}}.open(t)
	backend := *h.backend
	ops := *backend.Ops
	ops.LockLease = 30 * time.Second
	backend.Ops = &ops
	gh := h.w.GitHub
	owner, name, _ := strings.Cut(repo, "/")
	evs := make([]github.Event, 5)
	for i := range evs {
		evs[i] = h.comment(repo, i+1, false, "alice", "/poc up")
	}
	outs := make([]chatops.Outcome, len(evs))
	errs := make([]error, len(evs))
	hds := make([]*chatops.Handler, len(evs))
	for i := range evs {
		hds[i] = h.processHandler(repo, i, &backend)
	}
	// The installation's last minute and hour, as other runs left them, just before the five
	// start: the minute full, freed by ten every second from 2 s on; the hour full, 420 of its
	// writes leaving it in 8 s. Nothing passes for 8 s, and every run meets the limit.
	now := time.Now()
	for k := range 8 {
		gh.SpendContent(repo, now.Add(time.Duration(k-58)*time.Second), 10)
	}
	gh.SpendContent(repo, now.Add(-time.Hour+8*time.Second), 420)
	var wg sync.WaitGroup
	for i, ev := range evs {
		wg.Go(func() { outs[i], errs[i] = hds[i].Handle(ctx, ev) })
	}
	wg.Wait()
	for i := range evs {
		cl := commands.ClusterName(owner, name, i+1)
		if errs[i] != nil || !outs[i].OK {
			t.Errorf("up of %s: outcome %+v, err %v", cl, outs[i], errs[i])
			continue
		}
		var sticky, notify []ghsim.Comment
		for _, c := range h.botComments(repo, i+1) {
			switch {
			case strings.Contains(c.Body, commands.StickyMarker(cl)):
				sticky = append(sticky, c)
			case strings.Contains(c.Body, "@alice"):
				notify = append(notify, c)
			}
		}
		if len(sticky) != 1 || len(notify) != 1 {
			t.Errorf("%s: %d status comments and %d notifications, want one each", cl, len(sticky), len(notify))
			continue
		}
		for _, want := range []string{":6443", "per day", "Steps ("} {
			if !strings.Contains(sticky[0].Body, want) {
				t.Errorf("%s: the final status is not on the status comment (no %q):\n%s", cl, want, sticky[0].Body)
			}
		}
	}
	if gh.ContentLimitRefusals() < len(evs) {
		t.Fatalf("the secondary limit refused %d writes, fewer than the runs: the test proves little", gh.ContentLimitRefusals())
	}
	t.Logf("%d writes admitted for 5 ups, %d refused by the secondary limit", gh.ContentWrites(), gh.ContentLimitRefusals())
}

// processHandler is a handler for run i as its own process, on backend: its own GitHub client
// (and so its own transport and rate-limit hold), its own run id and Actions files, the
// production cadence.
func (h *harness) processHandler(full string, i int, backend *chatops.Backend) *chatops.Handler {
	owner, name, _ := strings.Cut(full, "/")
	c, err := github.NewClient(h.t.Context(), github.Auth{AppID: h.w.GitHub.AppID(), PrivateKeyPEM: h.w.GitHub.AppPrivateKeyPEM(),
		Owner: owner, Repo: name, BaseURL: h.w.GitHubURL, Logger: h.log})
	if err != nil {
		h.t.Fatalf("github client for %s: %v", full, err)
	}
	env := github.ActionsEnv{Repository: full, Owner: owner, Repo: name, APIURL: h.w.GitHubURL, ServerURL: "https://github.com",
		RunID: strconv.Itoa(7000 + i), InActions: true}
	return &chatops.Handler{
		GitHub:  c,
		Env:     env,
		Actions: &github.Actions{Stdout: &bytes.Buffer{}, Output: &bytes.Buffer{}, Summary: &bytes.Buffer{}},
		Open:    func(context.Context) (*chatops.Backend, error) { return backend, nil },
		AppSlug: h.w.GitHub.AppSlug(),
		Log:     h.log,
		Started: time.Now(),
	}
}
