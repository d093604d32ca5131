package clusterops_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/repoconfig"
	"github.com/pocbot/pocbot/internal/spare"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The claim on the light harness: a spare built by an up of its own, then claimed by an up asking
// for the pool; the decisions, locks, reads and writes are the real ones.

// buildSpare builds a spare of acme/shop named name (what `bot pool fill` runs) and checks that
// its record says it may be handed out.
func buildSpare(t *testing.T, f *fake, name string) {
	t.Helper()
	b := repoconfig.Default()
	in := clusterops.Intent{Cluster: name, Spec: seedSpec(), Repository: "acme/shop", Kind: spare.Kind, RequestedBy: "pool",
		Bounds: &b, TTL: b.Pool.MaxAge + time.Hour}
	out, err := f.ops.Up(t.Context(), in)
	if err != nil {
		t.Fatalf("build spare %s: %v", name, err)
	}
	rec, err := spare.Of(out.Header)
	if err != nil {
		t.Fatal(err)
	}
	if why := rec.Claimable(time.Now(), ""); why != "" || rec.Ready.IsZero() || rec.Kubernetes == "" {
		t.Fatalf("spare %s after its build: %+v, not claimable: %s", name, rec, why)
	}
}

// warmIntent is alice's up of acme/shop#n asking for the pool.
func warmIntent(n int) clusterops.Intent {
	in := intent(warm, poolOf(1), func(in *clusterops.Intent) {
		in.Number = n
		in.Cluster = "acme-shop-" + string(rune('0'+n))
	})
	return in
}

func TestClaimMakesTheSpareTheIssuesCluster(t *testing.T) {
	f := newFake(t)
	buildSpare(t, f, "spare-aaaa")
	steps := f.Steps()
	out, err := f.ops.Up(t.Context(), warmIntent(4))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Path, "warm: claimed a warm spare (age less than a minute): spare-aaaa") {
		t.Errorf("path %q, want the warm spare named", out.Path)
	}
	if f.Steps() != steps {
		t.Errorf("a claim ran %d steps of a build, want none", f.Steps()-steps)
	}
	if got := f.Rebound(); len(got) != 1 || got[0] != "srv-spare-aaaa>acme-shop-4" {
		t.Errorf("rebindings %q, want the spare's machines renamed to acme-shop-4", got)
	}
	h := out.Header
	if out.Phase != lifecycle.PhaseReady || h.Kind != "issue" || h.Number != 4 || h.Labels[spare.LabelClaimedFrom] != "spare-aaaa" || out.Claimed != "spare-aaaa" ||
		h.Expires.Before(time.Now().Add(time.Hour)) {
		t.Errorf("claimed cluster's header %+v (phase %s): want the issue's, ready, claimed from spare-aaaa, expiring later", h, out.Phase)
	}
	if out.State.ClusterID != "acme-shop-4" || out.KubeconfigLocation == "" || len(out.State.Secrets[cluster.SecretKubeconfig]) == 0 {
		t.Errorf("claimed state %s, kubeconfig at %q: want the issue's cluster with its kubeconfig", out.State.ClusterID, out.KubeconfigLocation)
	}
	if _, err := f.store.Get(t.Context(), "spare-aaaa"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("the claimed spare's document: %v, want it gone", err)
	}
	// The next warm up finds no spare: the cold path, saying so.
	out, err = f.ops.Up(t.Context(), warmIntent(5))
	if err != nil {
		t.Fatal(err)
	}
	if out.Path != "cold: "+spare.ColdNoSpare || f.Steps() == steps {
		t.Errorf("second up: path %q, %d steps; want the cold path, built", out.Path, f.Steps()-steps)
	}
}

// Two ups claiming at once never both take the one spare: one is warm, the other builds.
func TestConcurrentClaimsNeverShareASpare(t *testing.T) {
	for round := range 5 {
		f := newPoolFake(t) // the two take turns at the admission, as on a world
		buildSpare(t, f, "spare-bbbb")
		var wg sync.WaitGroup
		outs := make([]*clusterops.Outcome, 2)
		errs := make([]error, 2)
		for i := range outs {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				outs[i], errs[i] = f.ops.Up(ctx, warmIntent(i+1))
			})
		}
		wg.Wait()
		warmCount := 0
		for i, out := range outs {
			if errs[i] != nil {
				t.Fatalf("round %d, up %d: %v", round, i+1, errs[i])
			}
			if strings.HasPrefix(out.Path, "warm:") {
				warmCount++
			} else if !strings.HasPrefix(out.Path, "cold:") {
				t.Errorf("round %d, up %d: path %q", round, i+1, out.Path)
			}
		}
		if warmCount != 1 || len(f.Rebound()) != 1 {
			t.Fatalf("round %d: %d warm ups, rebindings %q; want exactly one claim (%q / %q)", round, warmCount, f.Rebound(), outs[0].Path, outs[1].Path)
		}
	}
}

// A spare that fails its re-check is not handed out: the up goes cold, saying why, and the spare
// is marked so that no claim takes it and the schedule replaces it.
func TestUnhealthySpareIsNotHandedOut(t *testing.T) {
	f := newFake(t)
	buildSpare(t, f, "spare-cccc")
	f.SetUnhealthy("spare-cccc", "/readyz: 503")
	out, err := f.ops.Up(t.Context(), warmIntent(6))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Path, "cold: no spare fits: spare-cccc failed its re-check: readyz: /readyz: 503") {
		t.Errorf("path %q, want the cold path naming the failed re-check", out.Path)
	}
	if len(f.Rebound()) != 0 || out.Header.Labels[spare.LabelClaimedFrom] != "" || out.Claimed != "" {
		t.Errorf("an unhealthy spare was claimed: %q", f.Rebound())
	}
	doc, err := f.store.Get(t.Context(), "spare-cccc")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := spare.Of(doc.Header)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.Unhealthy, "/readyz: 503") || rec.ClaimedBy != "" {
		t.Errorf("the spare's record %+v: want it marked unhealthy, unclaimed", rec)
	}
}

// `--cold` takes the cold path though a spare is ready.
func TestColdUpLeavesTheSpare(t *testing.T) {
	f := newFake(t)
	buildSpare(t, f, "spare-dddd")
	in := warmIntent(7)
	in.Warm, in.Cold = false, true
	out, err := f.ops.Up(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if out.Path != "cold: "+spare.ColdAsked || len(f.Rebound()) != 0 {
		t.Errorf("path %q, rebindings %q: want the cold path asked, no claim", out.Path, f.Rebound())
	}
	if _, err := f.store.Get(t.Context(), "spare-dddd"); err != nil {
		t.Errorf("the spare after a cold up: %v", err)
	}
}
