package clusterops_test

import (
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/cost"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

// The status view `/poc status` and `bot status` both render: a running cluster at its running
// price, a paused one at its paused price (bot status used to price the machines a paused
// cluster no longer has), and the facts of the header, the lock and the state.
func TestStatusView(t *testing.T) {
	now := time.Date(2026, 10, 17, 9, 20, 0, 0, time.UTC)
	created := now.Add(-2 * time.Hour)
	q := cost.NewQuoter(cost.TableSource{})
	running, err := clusterops.Quote(t.Context(), q, provision.DefaultSpec(), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	paused, err := clusterops.QuotePaused(t.Context(), q, provision.DefaultSpec(), 0, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	state := func() *provision.State {
		return &provision.State{Spec: provision.DefaultSpec(),
			Resources: map[string]*provision.Record{
				scaleway.NodeIP(0): {Kind: "ip", ID: "ip-0", Zone: "fr-par-1", Attrs: map[string]string{"address": "51.15.0.1"}},
				"worker":           {Kind: "baremetal.server", ID: "bm-1", Zone: "fr-par-2", Status: "ready", Attrs: map[string]string{"ipv4": "163.172.0.9"}},
			},
			Outputs: map[string]string{cluster.OutTalosNodes: "51.15.0.1", cluster.OutWorkerIP: "163.172.0.9"}}
	}
	for _, tc := range []struct {
		name  string
		phase lifecycle.Phase
		q     *cost.Quoter
		daily string
	}{
		{"ready", lifecycle.PhaseReady, q, running.Daily.Format(2)},
		{"paused", lifecycle.PhasePaused, q, paused.Daily.Format(2)},
		{"unpriced", lifecycle.PhaseReady, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &clusterops.Status{
				Header: statestore.Header{Cluster: "acme-shop-42", Phase: string(tc.phase), Created: created, Expires: now.Add(6 * time.Hour),
					Repository: "acme/shop", Number: 42, Kind: "issue", RequestedBy: "alice"},
				State:  state(),
				Lock:   &statestore.LockInfo{ID: "l1", RunID: "9002", Actor: "bob", Command: "/poc extend", Since: now.Add(-time.Minute), Expires: now.Add(time.Minute)},
				Health: []clusterops.Health{{Name: "kubernetes-api", Target: "51.15.0.1:6443", Detail: "connection refused"}},
			}
			v := clusterops.StatusView(t.Context(), s, tc.q, now)
			if v.DailyCost != tc.daily {
				t.Errorf("daily cost %q, want %q", v.DailyCost, tc.daily)
			}
			if (tc.q != nil) != (v.UntilExpiry != "") {
				t.Errorf("until expiry %q with a quoter %v", v.UntilExpiry, tc.q != nil)
			}
			if !v.Exists || v.Phase != tc.phase || v.Repository != "acme/shop" || v.Number != 42 || v.RequestedBy != "alice" ||
				v.Lock == nil || v.Lock.ID != "l1" || v.Lock.Actor != "bob" || v.Edge != "163.172.0.9" ||
				len(v.APIEndpoints) != 1 || v.APIEndpoints[0] != "51.15.0.1:6443" {
				t.Errorf("view %+v", v)
			}
			if len(v.Resources) != 2 || v.Resources[0].Address != "51.15.0.1" || v.Resources[1].Address != "163.172.0.9" || v.Resources[1].Zone != "fr-par-2" {
				t.Errorf("resources %+v: want the state's, sorted, with their address (an IP's ipv4 attribute too)", v.Resources)
			}
			if len(v.Health) != 1 || v.Health[0].OK || v.Health[0].Target != "51.15.0.1:6443" {
				t.Errorf("health %+v", v.Health)
			}
		})
	}
}
