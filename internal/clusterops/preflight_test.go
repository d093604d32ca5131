package clusterops_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/pool"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/sim/world/worldtest"
)

// TestQuotasRefuseBeforeAnythingIsCreated: under Scaleway's default quotas (PLAY2-NANO 5, one
// Elastic Metal server of the offer), the pre-flight on the wire. The second seed cluster does not
// fit: it is refused before anything is created — no resource, no state document, no request but
// reads — with a message naming the quota, its use, the need, the number it weighed and where
// that came from, and how to raise it, under both readings of register row quota-read: the bot's
// key reads the organization's quotas (OrganizationReadOnly on the organization), or it may not
// (the rule removed) and the documented default is weighed. Without the pre-flight the second up
// created its IPs, group and volumes, then failed on its third Instance; with quotas it could not
// read, the old pre-flight checked nothing and did the same. A parked worker holds its offer's
// quota: an up that cannot adopt it (another Talos version) is refused on the offer's quota; one
// that can adopt it fits.
func TestQuotasRefuseBeforeAnythingIsCreated(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{OrgQuotas: scwsim.DocumentedQuotas()})
	e.up(ctx, t, "acme-q-1")
	for _, tc := range []struct {
		reading, from string
		source        preflight.Source
	}{
		{"allowed", "the organization's quota instance_servers_play2_nano", preflight.FromAPI},
		{"refused", "Scaleway's documented default", preflight.FromDocs},
	} {
		t.Run("quota-read="+tc.reading, func(t *testing.T) {
			if tc.reading == "refused" {
				revokeOrganizationRead(t, e.w)
			}
			before := len(e.w.Scaleway.Inventory())
			calls := len(e.w.Scaleway.Calls())
			res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-q-2", Spec: e.spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"})
			var ref *preflight.Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("second up: %v, want a pre-flight refusal", err)
			}
			msg := err.Error()
			for _, want := range []string{"PLAY2-NANO Instances", "limit 5 (" + tc.from, "in use 3", "needs 3", preflight.QuotasPage, "nothing was created"} {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal %q does not say %q", msg, want)
				}
			}
			if ref.Check.Source != tc.source {
				t.Errorf("weighed from %s, want %s", ref.Check.Source, tc.source)
			}
			if res == nil || res.Preflight == nil || res.Preflight.Refusal == nil {
				t.Fatalf("result %+v carries no pre-flight", res)
			}
			if unread := res.Preflight.Unread; (tc.reading == "refused") != strings.Contains(unread, "OrganizationReadOnly") {
				t.Errorf("the pre-flight says the quotas were unread because %q", unread)
			}
			if after := len(e.w.Scaleway.Inventory()); after != before {
				t.Errorf("the refused up changed the inventory: %d resources, %d before", after, before)
			}
			for _, c := range e.w.Scaleway.Calls()[calls:] {
				if c.Method != "GET" {
					t.Errorf("the refused up sent %s %s", c.Method, c.Path)
				}
			}
			if _, _, err := e.ops.Load(ctx, "acme-q-2"); !errors.Is(err, clusterops.ErrNoCluster) {
				t.Errorf("the refused up left a state document: %v", err)
			}
		})
	}

	if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "acme-q-1", RequestedBy: "alice", Command: "down", ParkFor: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	before := len(e.w.Scaleway.Inventory())
	spec := e.spec
	spec.TalosVersion = "v1.14.1"
	var ref *preflight.Refusal
	_, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-p-2", Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"})
	if !errors.As(err, &ref) || ref.Check.Key != spec.BaremetalOffer || ref.Check.Used != 1 {
		t.Fatalf("an up that cannot adopt the parked worker: %v, want refused on EM_A116X_SSD with 1 in use", err)
	}
	if after := len(e.w.Scaleway.Inventory()); after != before {
		t.Errorf("the refused up changed the inventory: %d resources, %d before", after, before)
	}
	res := e.up(ctx, t, "acme-p-3")
	if pf := res.Preflight; pf == nil || len(pf.Candidates) != 1 || !pf.Candidates[0].Offer.Adopt || !pf.Candidates[0].Taken {
		t.Fatalf("the up that adopts: pre-flight %+v, want the parked worker taken", pf)
	}
}

// revokeOrganizationRead deletes, with the owner's key, the policy that grants the bot's key
// OrganizationReadOnly: its quota reads are refused from then on (register row quota-read).
func revokeOrganizationRead(t *testing.T, w *world.World) {
	t.Helper()
	api := iam.NewAPI(worldtest.Client(t, w, w.ScalewayURL))
	pols, err := api.ListPolicies(&iam.ListPoliciesRequest{PolicyName: scw.StringPtr("pocbot-organization")}, scw.WithAllPages())
	if err != nil || len(pols.Policies) != 1 {
		t.Fatalf("the bot's organization policy: %+v, %v", pols, err)
	}
	if err := api.DeletePolicy(&iam.DeletePolicyRequest{PolicyID: pols.Policies[0].ID}); err != nil {
		t.Fatal(err)
	}
}

// TestOffersOutOfStock: the stock of the worker's offers on the wire, with one server of the
// default offer in stock. An offer out of stock does not stop an up that adopts a parked worker
// (the stock check is for an order, and none is made); worker_offers whose first offer is out of
// stock take the next one listed and say why. The fallback is an offer on sale: production's
// pre-flight prices every candidate, and the catalog's end-of-sale offers (EM-A115X-SSD) have no
// price, so they are skipped.
func TestOffersOutOfStock(t *testing.T) {
	spec := provision.DefaultSpec()
	e, ctx := start(t, 4*time.Minute, world.Options{Stock: map[string]int{spec.BaremetalOffer: 1}})
	first := e.up(ctx, t, "acme-shop-4")
	if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "acme-shop-4", RequestedBy: "alice", Command: "down", ParkFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	second := e.up(ctx, t, "acme-shop-5") // the one server of the offer is the parked one
	if got, want := second.State.Resources[scaleway.NodeWorker].ID, first.State.Resources[scaleway.NodeWorker].ID; got != want {
		t.Fatalf("worker = %s, want the parked %s", got, want)
	}

	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-s-1", Spec: e.spec, TTL: time.Hour, RequestedBy: "alice", Command: "up",
		WorkerOffers: []string{spec.BaremetalOffer, "EM-B112X-SSD"}})
	if err != nil {
		t.Fatalf("up with a fallback offer: %v", err)
	}
	if got := res.State.Spec.BaremetalOffer; got != "EM-B112X-SSD" {
		t.Errorf("worker offer %s, want the fallback EM-B112X-SSD", got)
	}
	pf := res.Preflight
	if pf == nil || len(pf.Candidates) != 2 || pf.Candidates[0].Skipped != "out of stock" || !pf.Candidates[1].Taken {
		t.Fatalf("pre-flight %+v, want the first offer skipped for its stock and the second taken", pf)
	}
	if !slices.Contains(inventory(e, "baremetal_server"), res.State.Resources[scaleway.NodeWorker].ID) {
		t.Error("the worker is not in the inventory")
	}

	// Register row em-stock: a scheduled pause (ParkWhileScarce, no park_for) of acme-shop-5,
	// whose offer has no server left, keeps its worker parked instead of giving it back for the
	// resume to order again, and says why (parkPlan's table holds every stock).
	worker := second.State.Resources[scaleway.NodeWorker].ID
	obs := &notesObserver{}
	paused, err := e.ops.Run(ctx, clusterops.VerbPause, clusterops.Intent{Cluster: "acme-shop-5", RequestedBy: "pocbot-reaper",
		Command: "pause (schedule)", ParkWhileScarce: 11 * time.Hour}, obs)
	if err != nil {
		t.Fatalf("scheduled pause: %v", err)
	}
	if doc := e.pool(t); !slices.ContainsFunc(doc.Workers, func(w pool.Worker) bool { return w.ServerID == worker }) {
		t.Fatalf("pool after the scheduled pause: %+v, want the worker %s parked", doc.Workers, worker)
	}
	for _, d := range paused.Report.Deleted {
		if d.Kind == scaleway.KindBaremetal {
			t.Fatalf("the scheduled pause deleted the worker: %+v", d)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.ContainsFunc(obs.notes, func(n string) bool {
		return strings.Contains(n, "kept parked: "+spec.BaremetalOffer+" is empty on stock")
	}) {
		t.Errorf("the scheduled pause does not say why it kept the worker: %q", obs.notes)
	}
}
