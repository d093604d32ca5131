package clusterops_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/sim/world"
	"github.com/pocbot/pocbot/internal/statestore"
)

func healthByName(hs []clusterops.Health) map[string]clusterops.Health {
	m := map[string]clusterops.Health{}
	for _, h := range hs {
		m[h.Name] = h
	}
	return m
}

// One up, then the status of the running cluster, of a held lock, of a powered-off control plane,
// of a cluster whose up stopped before its IPs, and of no cluster.
func TestStatus(t *testing.T) {
	e, ctx := start(t, 3*time.Minute, world.Options{})
	const name = "acme-shop-7"
	if _, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: e.spec, TTL: 8 * time.Hour,
		Repository: "acme/shop", Number: 7, Kind: "issue", RequestedBy: "alice", Command: "up"}); err != nil {
		t.Fatalf("up: %v", err)
	}

	t.Run("without health: header, state, free lock, no check", func(t *testing.T) {
		s, err := e.ops.Status(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.Header.Phase != string(lifecycle.PhaseReady) || s.Header.Repository != "acme/shop" || s.Header.Number != 7 {
			t.Errorf("header = %+v", s.Header)
		}
		if s.State == nil || s.State.Resources[scaleway.NodeServer(0)] == nil || s.State.Outputs[cluster.OutAPIEndpoint] == "" {
			t.Errorf("state lacks the servers or the endpoint: %+v", s.State)
		}
		if s.Lock != nil {
			t.Errorf("lock = %+v after up released it, want nil", s.Lock)
		}
		if s.Health != nil {
			t.Errorf("health checked although not asked: %+v", s.Health)
		}
	})

	t.Run("healthy cluster: every Talos API and readyz answer", func(t *testing.T) {
		t0 := time.Now()
		s, err := e.ops.Status(ctx, name, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("health of a ready cluster took %s", time.Since(t0).Round(time.Millisecond))
		got := healthByName(s.Health)
		// The readiness checks up waits for (cluster-ready), every one of them: /poc status and
		// bot status both show this list.
		want := append([]string{"talos-api cp-0", "talos-api cp-1", "talos-api cp-2", "talos-api worker", "kubernetes-api"},
			talos.ReadyChecks...)
		if len(s.Health) != len(want) {
			t.Errorf("health has %d entries, want %d: %+v", len(s.Health), len(want), s.Health)
		}
		for _, n := range want {
			h, ok := got[n]
			if !ok || !h.OK || h.Target == "" {
				t.Errorf("%s: %+v, want OK with a target", n, h)
			}
		}
		if s.Unreachable != "" {
			t.Errorf("a runner inside admin_cidrs is told it is outside: %q", s.Unreachable)
		}
		if !strings.HasPrefix(got["kubernetes-api"].Target, "https://") {
			t.Errorf("kubernetes-api target = %q, want the API URL", got["kubernetes-api"].Target)
		}
	})

	t.Run("machine configs: what every node runs, secrets redacted unless asked", func(t *testing.T) {
		for _, withSecrets := range []bool{false, true} {
			cfgs, err := e.ops.MachineConfigs(ctx, name, withSecrets)
			if err != nil {
				t.Fatal(err)
			}
			if len(cfgs) != 4 || cfgs[3].Node != "worker" {
				t.Fatalf("machine configs of %d nodes (%+v), want cp-0..cp-2 and the worker", len(cfgs), cfgs)
			}
			for _, c := range cfgs {
				if c.Err != nil {
					t.Fatalf("%s: %v", c.Node, c.Err)
				}
				cfg, err := configloader.NewFromBytes(c.Config)
				if err != nil {
					t.Fatalf("%s: the config does not load: %v", c.Node, err)
				}
				if want := c.Node != "worker"; cfg.Machine().Type().IsControlPlane() != want {
					t.Errorf("%s: control plane = %v", c.Node, !want)
				}
				if len(cfg.NetworkRules().Rules()) == 0 {
					t.Errorf("%s: no firewall rule in the config it runs", c.Node)
				}
				token := cfg.Machine().Security().Token()
				if redacted := token == talos.Redacted; redacted == withSecrets || token == "" {
					t.Errorf("%s with secrets %v: machine token %q", c.Node, withSecrets, token)
				}
			}
		}
	})

	t.Run("held lock names its holder", func(t *testing.T) {
		l, err := e.store.Lock(ctx, name, statestore.LockInfo{Actor: "bob", Command: "up", RunID: "991"}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		s, err := e.ops.Status(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.Lock == nil || s.Lock.Actor != "bob" || s.Lock.RunID != "991" || s.Lock.Command != "up" || s.Lock.ID == "" {
			t.Errorf("lock = %+v, want bob's up of run 991", s.Lock)
		}
	})

	t.Run("a powered-off control plane fails its check quickly, the others stay OK", func(t *testing.T) {
		s, err := e.ops.Status(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		rec := s.State.Resources[scaleway.NodeServer(1)]
		ip := strings.Split(s.State.Outputs[cluster.OutTalosNodes], ",")[1]
		client, err := scw.NewClient(scw.WithAPIURL(e.w.ScalewayURL), scw.WithAuth(e.w.AccessKey, e.w.SecretKey),
			scw.WithDefaultProjectID(world.ProjectID))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := instance.NewAPI(client).ServerAction(&instance.ServerActionRequest{Zone: scw.Zone(rec.Zone),
			ServerID: rec.ID, Action: instance.ServerActionPoweroff}); err != nil {
			t.Fatalf("power off cp-1: %v", err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for slices.Contains(e.w.Nodes(), ip) {
			if time.Now().After(deadline) {
				t.Fatalf("cp-1 (%s) still answers 30 s after power-off", ip)
			}
			time.Sleep(50 * time.Millisecond)
		}
		t0 := time.Now()
		s, err = e.ops.Status(ctx, name, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("status with a dead node took %s", time.Since(t0).Round(time.Millisecond))
		got := healthByName(s.Health)
		// Quickly: the closed port fails the dial, before any protocol check spends its budget.
		// (A bound on the elapsed time would fail on a loaded machine, not on a slow status.)
		if h := got["talos-api cp-1"]; h.OK || !strings.Contains(h.Detail, ip) || !strings.HasPrefix(h.Detail, "cannot connect") {
			t.Errorf("cp-1 = %+v, want not OK, failed at the dial, naming %s", h, ip)
		}
		for _, n := range []string{"talos-api cp-0", "talos-api cp-2", "kubernetes-api"} {
			if !got[n].OK {
				t.Errorf("%s = %+v, want OK", n, got[n])
			}
		}
	})

	t.Run("an up that stopped before its IPs: health says why, no error", func(t *testing.T) {
		st, err := provision.NewState("early-1", e.spec)
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.store.Put(ctx, &statestore.Document{Header: statestore.Header{Cluster: "early-1", Created: time.Now(),
			Phase: string(lifecycle.PhaseFailed)}, Body: body}); err != nil {
			t.Fatal(err)
		}
		s, err := e.ops.Status(ctx, "early-1", true)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Health) != 1 || s.Health[0].OK || !strings.Contains(s.Health[0].Detail, "run up") {
			t.Errorf("health = %+v, want one failed entry telling to run up", s.Health)
		}
	})

	t.Run("no such cluster", func(t *testing.T) {
		_, err := e.ops.Status(ctx, "nobody-1", true)
		if !errors.Is(err, clusterops.ErrNoCluster) {
			t.Errorf("err = %v, want ErrNoCluster", err)
		}
	})
}

// TestOutsideAdminCIDRs: the hint a status gives when the runner is outside the admin CIDRs (and
// holds no temporary rule of its own).
func TestOutsideAdminCIDRs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		admin     []string
		temporary string
		runner    string
		hint      bool
	}{
		{"runner unknown", []string{"198.51.100.0/24"}, "", "", false},
		{"everyone admitted", []string{"0.0.0.0/0"}, "", "203.0.113.7/32", false},
		{"runner inside", []string{"198.51.100.0/24", "203.0.113.0/24"}, "", "203.0.113.7/32", false},
		{"runner as a bare address inside", []string{"203.0.113.0/24"}, "", "203.0.113.7", false},
		{"runner outside", []string{"198.51.100.0/24"}, "", "203.0.113.7/32", true},
		{"runner wider than the admin CIDR", []string{"203.0.113.0/28"}, "", "203.0.113.0/24", true},
		{"a run holds the runner's temporary rule", []string{"198.51.100.0/24"}, "203.0.113.7/32", "203.0.113.7/32", false},
		{"a temporary rule that covers the runner", []string{"198.51.100.0/24"}, "203.0.113.0/24", "203.0.113.7/32", false},
		{"another runner's temporary rule", []string{"198.51.100.0/24"}, "192.0.2.1/32", "203.0.113.7/32", true},
		{"runner that does not parse", []string{"198.51.100.0/24"}, "", "not-a-cidr", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &provision.State{Spec: provision.Spec{AdminCIDRs: tc.admin}, Outputs: map[string]string{}}
			if tc.temporary != "" {
				st.Outputs[scaleway.OutAdminTemporary] = tc.temporary
			}
			got := clusterops.OutsideAdminCIDRs(st, tc.runner)
			if (got != "") != tc.hint {
				t.Fatalf("hint = %q, want one: %v", got, tc.hint)
			}
			if tc.hint && (!strings.Contains(got, tc.runner) || !strings.Contains(got, strings.Join(tc.admin, ", "))) {
				t.Errorf("hint %q does not name the runner %s and the admin CIDRs %v", got, tc.runner, tc.admin)
			}
		})
	}
}
