package clusterops_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/preflight"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// TestQuotasRefuseBeforeAnythingIsCreated: under Scaleway's default quotas (PLAY2-NANO 5, one
// Elastic Metal server of the offer), the pre-flight on the wire. The second seed cluster does not
// fit: it is refused before anything is created — no resource, no state document, no request but
// reads — with a message naming the quota, its use, the need and how to raise it (without the
// pre-flight it created its IPs, group and volumes, then failed on its third Instance). A parked
// worker holds its offer's quota: an up that cannot adopt it (another Talos version) is refused
// on the offer's quota; one that can adopt it fits.
func TestQuotasRefuseBeforeAnythingIsCreated(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{OrgQuotas: scwsim.DocumentedQuotas()})
	e.up(ctx, t, "acme-q-1")
	before := len(e.w.Scaleway.Inventory())
	calls := len(e.w.Scaleway.Calls())
	res, err := e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-q-2", Spec: e.spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"})
	var ref *preflight.Refusal
	if !errors.As(err, &ref) {
		t.Fatalf("second up: %v, want a pre-flight refusal", err)
	}
	msg := err.Error()
	for _, want := range []string{scaleway.InstanceTypeQuota("PLAY2-NANO"), "limit 5", "in use 3", "needs 3", preflight.QuotasPage, "nothing was created"} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if res == nil || res.Preflight == nil || res.Preflight.Refusal == nil {
		t.Errorf("result %+v carries no pre-flight", res)
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

	if _, err := e.ops.Down(ctx, clusterops.Intent{Cluster: "acme-q-1", RequestedBy: "alice", Command: "down", ParkFor: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	before = len(e.w.Scaleway.Inventory())
	spec := e.spec
	spec.TalosVersion = "v1.14.1"
	_, err = e.ops.Up(ctx, clusterops.Intent{Cluster: "acme-p-2", Spec: spec, TTL: time.Hour, RequestedBy: "alice", Command: "up"})
	if !errors.As(err, &ref) || ref.Check.Quota != "EM_A116X_SSD" || ref.Check.Used != 1 {
		t.Fatalf("an up that cannot adopt the parked worker: %v, want refused on EM_A116X_SSD with 1 in use", err)
	}
	if after := len(e.w.Scaleway.Inventory()); after != before {
		t.Errorf("the refused up changed the inventory: %d resources, %d before", after, before)
	}
	res = e.up(ctx, t, "acme-p-3")
	if pf := res.Preflight; pf == nil || len(pf.Candidates) != 1 || !pf.Candidates[0].Offer.Adopt || !pf.Candidates[0].Taken {
		t.Fatalf("the up that adopts: pre-flight %+v, want the parked worker taken", pf)
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
}
