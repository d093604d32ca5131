package talos

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// TestDecideRecover: the recover's decision from every control plane's etcd service, the
// first being the node to recover on.
func TestDecideRecover(t *testing.T) {
	t.Parallel()

	n := func(addr, state string) NodeEtcd { return NodeEtcd{Addr: addr, EtcdState: EtcdState{State: state}} }

	for _, tc := range []struct {
		name  string
		nodes []NodeEtcd
		want  RecoverStep
	}{
		{"all Preparing: the guide's state", []NodeEtcd{n("a", "Preparing"), n("b", "Preparing"), n("c", "Preparing")}, RecoverUpload},
		{"first Failed after its join timeout, empty data directory", []NodeEtcd{n("a", "Failed"), n("b", "Failed"), n("c", "Preparing")}, RecoverUpload},
		{"first Waiting: /var/lib may not be mounted", []NodeEtcd{n("a", "Waiting"), n("b", "Preparing"), n("c", "Preparing")}, RecoverWait},
		{"first Starting", []NodeEtcd{n("a", "Starting"), n("b", "Preparing")}, RecoverWait},
		{"first Finished (a Bootstrap in progress)", []NodeEtcd{n("a", "Finished")}, RecoverWait},
		{"the first runs etcd: a rerun", []NodeEtcd{n("a", "Running"), n("b", "Preparing"), n("c", "Waiting")}, RecoverDone},
		{"a peer runs etcd, the first was replaced", []NodeEtcd{n("a", "Preparing"), n("b", "Running"), n("c", "Running")}, RecoverDone},
		{"a peer runs etcd, the first is Failed", []NodeEtcd{n("a", "Failed"), n("b", "Preparing"), n("c", "Running")}, RecoverDone},
		{"a peer runs etcd, the first still Waiting", []NodeEtcd{n("a", "Waiting"), n("b", "Running")}, RecoverDone},
		{"no control plane", nil, RecoverWait},
	} {
		if got := DecideRecover(tc.nodes); got.Step != tc.want || got.Why == "" {
			t.Errorf("%s: %+v, want step %d with a reason", tc.name, got, tc.want)
		}
	}
}

// pausedCluster is a cluster whose etcd snapshot was taken (holding the ConfigMap "app") and
// whose nodes are gone: what a resume starts from.
type pausedCluster struct {
	tc   *testCluster
	snap []byte
	info SnapshotInfo
}

func pauseTestCluster(t *testing.T, ctx context.Context) *pausedCluster {
	t.Helper()

	tc := newTestCluster(t, "")
	cp := tc.cpAddrs[0]

	if err := Bootstrap(ctx, cp, tc.cfg.Talosconfig); err != nil {
		t.Fatal(err)
	}

	kc, err := Kubeconfig(ctx, cp, tc.cfg.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatal(err)
	}

	if code, obj := kubeDo(t, ctx, kc, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		map[string]any{"metadata": map[string]any{"name": "app"}, "data": map[string]any{"deployed": "before the pause"}}); code != http.StatusCreated {
		t.Fatalf("create ConfigMap = %d %v", code, obj)
	}

	var buf bytes.Buffer

	info, err := SnapshotEtcd(ctx, cp, tc.cfg.Talosconfig, func(_ context.Context, r io.Reader) error {
		buf.Reset()
		_, err := io.Copy(&buf, r)

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, n := range append(tc.cps, tc.worker) {
		_ = n.Close()
	}

	return &pausedCluster{tc: tc, snap: buf.Bytes(), info: info}
}

func (p *pausedCluster) open(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(p.snap)), nil
}

// resume starts the control planes again on their addresses, each with opts (Addr, Mode and
// UserData set here).
func (p *pausedCluster) resume(t *testing.T, opts func(i int) simtalos.NodeOptions) []*simtalos.Node {
	t.Helper()

	var nodes []*simtalos.Node

	for i, a := range p.tc.cpAddrs {
		o := opts(i)
		o.Addr, o.Mode, o.UserData = a, "cloud", p.tc.cfg.ControlPlane
		nodes = append(nodes, startNode(t, o))
	}

	return nodes
}

// recovered checks that the cluster serves what was written before the pause, from one etcd.
func (p *pausedCluster) recovered(t *testing.T, ctx context.Context, n *simtalos.Node) {
	t.Helper()

	kc, err := Kubeconfig(ctx, p.tc.cpAddrs[0], p.tc.cfg.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatal(err)
	}

	code, obj := kubeDo(t, ctx, kc, http.MethodGet, "/api/v1/namespaces/default/configmaps/app", nil)
	if data, _ := obj["data"].(map[string]any); code != http.StatusOK || data["deployed"] != "before the pause" {
		t.Fatalf("ConfigMap after the resume = %d %v", code, obj)
	}

	if got := n.EtcdClusters(); got != 1 {
		t.Fatalf("the control planes run %d etcd clusters, want 1", got)
	}
}

func waitEtcdState(t *testing.T, ctx context.Context, addr string, talosconfig []byte, want string) {
	t.Helper()

	for {
		st, err := EtcdService(ctx, addr, talosconfig)
		if err == nil && st.State == want {
			return
		}

		select {
		case <-ctx.Done():
			t.Fatalf("etcd on %s never became %s: last %+v, %v", addr, want, st, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRecoverEtcdFollowsTalosRules: the resume's recover against the etcd states Talos v1.13.9
// shows (sim/talos etcdsvc.go): a control plane whose etcd failed after its join timeout is
// recovered (the old code refused it); a node whose /var/lib is not mounted yet is waited for
// (the old code uploaded at once and failed on FailedPrecondition); a rerun that meets a replaced
// first control plane while its peers run etcd leaves them alone (the old code, which read the
// first node only, bootstrapped a second etcd cluster).
func TestRecoverEtcdFollowsTalosRules(t *testing.T) {
	t.Parallel()

	t.Run("Failed after the join timeout", func(t *testing.T) {
		t.Parallel()

		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()

		p := pauseTestCluster(t, ctx)
		nodes := p.resume(t, func(int) simtalos.NodeOptions {
			return simtalos.NodeOptions{EtcdJoinTimeout: 50 * time.Millisecond, BootTimeout: time.Hour}
		})
		waitEtcdState(t, ctx, p.tc.cpAddrs[0], p.tc.cfg.Talosconfig, "Failed")

		if err := RecoverEtcd(ctx, p.tc.cpAddrs, p.tc.cfg.Talosconfig, p.info, p.open); err != nil {
			t.Fatalf("RecoverEtcd on a node whose etcd failed waiting to join: %v", err)
		}

		p.recovered(t, ctx, nodes[0])
	})

	t.Run("/var/lib not mounted yet", func(t *testing.T) {
		t.Parallel()

		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()

		p := pauseTestCluster(t, ctx)
		nodes := p.resume(t, func(int) simtalos.NodeOptions { return simtalos.NodeOptions{VarLibDelay: time.Second} })

		if err := RecoverEtcd(ctx, p.tc.cpAddrs, p.tc.cfg.Talosconfig, p.info, p.open); err != nil {
			t.Fatalf("RecoverEtcd on a node whose /var/lib is not mounted yet: %v", err)
		}

		p.recovered(t, ctx, nodes[0])
	})

	t.Run("a replaced control plane on a rerun", func(t *testing.T) {
		t.Parallel()

		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()

		p := pauseTestCluster(t, ctx)
		nodes := p.resume(t, func(int) simtalos.NodeOptions { return simtalos.NodeOptions{} })

		if err := RecoverEtcd(ctx, p.tc.cpAddrs, p.tc.cfg.Talosconfig, p.info, p.open); err != nil {
			t.Fatal(err)
		}

		for _, a := range p.tc.cpAddrs {
			waitEtcdState(t, ctx, a, p.tc.cfg.Talosconfig, "Running")
		}

		// The run crashed after the recover; the first control plane was replaced meanwhile and
		// is still looking for its cluster when the rerun reads it.
		_ = nodes[0].Close()
		fresh := startNode(t, simtalos.NodeOptions{Addr: p.tc.cpAddrs[0], Mode: "cloud", UserData: p.tc.cfg.ControlPlane,
			Latency: simtalos.Latency{EtcdJoin: time.Hour}})
		waitEtcdState(t, ctx, p.tc.cpAddrs[0], p.tc.cfg.Talosconfig, "Preparing")

		if err := RecoverEtcd(ctx, p.tc.cpAddrs, p.tc.cfg.Talosconfig, p.info, p.open); err != nil {
			t.Fatalf("RecoverEtcd again: %v", err)
		}

		if got := fresh.EtcdClusters(); got != 1 {
			t.Fatalf("after the rerun the control planes run %d etcd clusters, want 1", got)
		}
	})
}
