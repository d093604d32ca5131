package clusterops_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/spare"
)

// A claim's lines of the decision's table: which spare an up asking for the pool takes, or which
// path it takes instead and why, from the spares read once and their re-checks.

// spareFact is a spare of acme/shop built and verified age ago, fresh for a day from then.
func spareFact(name string, age time.Duration, edit ...func(*clusterops.SpareFact)) clusterops.SpareFact {
	spec := seedSpec()
	kube, err := talos.DefaultKubernetesVersion(spec.TalosVersion)
	if err != nil {
		panic(err)
	}
	ready := t0.Add(-age)
	s := clusterops.SpareFact{Candidate: spare.Candidate{Record: spare.Record{Name: name, Repository: "acme/shop",
		Phase: lifecycle.PhaseReady, Created: ready.Add(-12 * time.Minute), Ready: ready, Checked: ready, Stale: ready.Add(24 * time.Hour),
		Talos: spec.TalosVersion, Kubernetes: kube}, Spec: &spec},
		State: &provision.State{ClusterID: name, Spec: spec}}
	for _, e := range edit {
		e(&s)
	}
	return s
}

// spares are facts of no cluster yet with the bucket's spares read.
func spares(s ...clusterops.SpareFact) clusterops.Facts {
	return clusterops.Facts{Read: clusterops.NeedSpares, Spares: s}
}

// checked are f with the re-checks done: healthy, or why each failed.
func checked(f clusterops.Facts, results map[string]string) clusterops.Facts {
	f.Read |= clusterops.NeedHealth
	f.Health = results
	return f
}

func warm(in *clusterops.Intent) { in.Warm = true }

// poolOf sets the repository's pool.size.
func poolOf(size int) func(*clusterops.Intent) {
	return func(in *clusterops.Intent) { in.Bounds.Pool.Size = size }
}

// path checks the plan's path and its claim.
func path(claim, contains string) func(t *testing.T, d clusterops.Decision) {
	return func(t *testing.T, d clusterops.Decision) {
		t.Helper()
		got := ""
		if d.Plan.Claim != nil {
			got = d.Plan.Claim.Name
		}
		if got != claim {
			t.Errorf("claims %q, want %q (path %q)", got, claim, d.Plan.Path)
		}
		if !strings.Contains(d.Plan.Path, contains) {
			t.Errorf("path %q, want it to contain %q", d.Plan.Path, contains)
		}
	}
}

func claimCases() []decisionCase {
	fresh, older := spareFact("spare-fresh", time.Hour), spareFact("spare-older", 5*time.Hour)
	up := clusterops.VerbUp
	return []decisionCase{
		{name: "a warm up reads the spares first", verb: up, in: intent(warm), need: clusterops.NeedSpares},
		{name: "a warm up without spares goes cold, saying so", verb: up, in: intent(warm, poolOf(1)), facts: spares(),
			need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "cold: no spare in the pool")},
		{name: "without a pool or a spare a warm up says no path", verb: up, in: intent(warm), facts: spares(),
			need: clusterops.NeedQuote | clusterops.NeedPreflight, check: func(t *testing.T, d clusterops.Decision) {
				if d.Plan.Path != "" || d.Plan.Claim != nil {
					t.Errorf("path %q, claim %v: want none", d.Plan.Path, d.Plan.Claim)
				}
			}},
		{name: "a warm up re-checks the freshest spare before it plans it", verb: up, in: intent(warm), facts: spares(older, fresh),
			need: clusterops.NeedHealth, check: path("spare-fresh", "")},
		{name: "a claim of a healthy spare needs its price, not the pre-flight", verb: up, in: intent(warm),
			facts: checked(spares(older, fresh), map[string]string{"spare-fresh": ""}), need: clusterops.NeedQuote,
			check: path("spare-fresh", "warm: claimed a warm spare (age 1.0 h): spare-fresh")},
		{name: "a claim passes the budget the spare already fills", verb: up,
			in:    intent(warm, func(in *clusterops.Intent) { in.Bounds.MaxClusters = 1 }),
			facts: claimBudgeted(checked(spares(fresh), map[string]string{"spare-fresh": ""}), "spare-fresh"),
			check: func(t *testing.T, d clusterops.Decision) {
				path("spare-fresh", "warm:")(t, d)
				if !d.Plan.Write || d.Plan.Header.Labels[spare.LabelClaimedFrom] != "spare-fresh" || d.Plan.Header.Kind != "issue" ||
					!d.Plan.Header.Expires.After(t0) {
					t.Errorf("plan %+v: want the issue's header written, claimed from spare-fresh, with an expiry", d.Plan)
				}
			}},
		{name: "a cold up counts the spares in the budget", verb: up,
			in:     intent(func(in *clusterops.Intent) { in.Cold = true; in.Bounds.MaxClusters = 1 }),
			facts:  claimBudgeted(clusterops.Facts{}, "spare-fresh"),
			refuse: lifecycle.RefuseBudget},
		{name: "a spare that fails its re-check is not handed out", verb: up, in: intent(warm),
			facts: checked(spares(fresh), map[string]string{"spare-fresh": "/readyz: connection refused"}),
			need:  clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "spare-fresh failed its re-check: /readyz")},
		{name: "after a failed re-check the next freshest is checked", verb: up, in: intent(warm),
			facts: checked(spares(older, fresh), map[string]string{"spare-fresh": "nodes: 3 of 4 Ready"}),
			need:  clusterops.NeedHealth, check: path("spare-older", "")},
		{name: "a spare another run claimed first is not chosen again", verb: up, in: intent(warm),
			facts: func() clusterops.Facts {
				f := checked(spares(older, fresh), map[string]string{"spare-fresh": "", "spare-older": ""})
				f.Lost = map[string]string{"spare-fresh": "no longer claimable: claimed by acme-shop-41"}
				return f
			}(), need: clusterops.NeedQuote, check: path("spare-older", "warm:")},
		{name: "--cold looks at no spare", verb: up, in: intent(func(in *clusterops.Intent) { in.Cold = true }),
			need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "cold: cold path asked (--cold)")},
		{name: "a stale spare is never handed out", verb: up, in: intent(warm), facts: spares(spareFact("spare-old", 30*time.Hour)),
			need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "stale")},
		{name: "an unshared spare of another repository is not offered", verb: up, in: intent(warm),
			facts: spares(spareFact("spare-web", time.Hour, func(s *clusterops.SpareFact) { s.Repository = "acme/web" })),
			need:  clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "belongs to acme/web")},
		{name: "a spare built with another worker offer is not claimed", verb: up,
			in:    intent(warm, withPatch(clusterops.SpecPatch{"worker-offer": "EM-B112X-SSD"})),
			facts: spares(fresh), need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "was built with")},
		{name: "a DNS name cannot be given to a running spare", verb: up,
			in:    intent(warm, withPatch(clusterops.SpecPatch{"dns-zone": "prod.example.com"}), func(in *clusterops.Intent) { in.Number = 0 }),
			facts: spares(fresh), need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "has no DNS name")},
		{name: "an existing cluster converges: no spare is looked at", verb: up, in: intent(warm), facts: read(doc(lifecycle.PhaseReady)),
			check: path("", "")},
		{name: "a spare's own build claims no spare", verb: up,
			in:   intent(warm, func(in *clusterops.Intent) { in.Kind, in.Number, in.Cluster = spare.Kind, 0, "spare-new" }),
			need: clusterops.NeedQuote | clusterops.NeedPreflight, check: path("", "")},
	}
}

// claimBudgeted are f with the price read and the budget's others read: the spare named running
// at 4.30 € a day.
func claimBudgeted(f clusterops.Facts, running string) clusterops.Facts {
	f.Read |= clusterops.NeedSpares | clusterops.NeedQuote | clusterops.NeedPreflight | clusterops.NeedBudget
	f.Quote = &cost.Quote{Daily: cost.EUR(4, 300_000_000)}
	f.Running = []cost.ClusterCost{{Name: running, Daily: cost.EUR(4, 300_000_000)}}
	return f
}
