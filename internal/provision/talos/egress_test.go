package talos

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// Register row node-egress, under each reading, on one control plane of the Talos stand-in (no
// world): open, the Cilium agent becomes ready; blocked (the node cannot pull the agent's
// image), the cilium check fails saying which pod waits on which image and that the nodes must
// reach the registries (the row), instead of pointing at agent logs that do not exist.
func TestCiliumCheckNamesAnImagePullTheNodesCannotMake(t *testing.T) {
	t.Parallel()
	for _, blocked := range []bool{false, true} {
		t.Run(map[bool]string{false: "open", true: "blocked"}[blocked], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			addr := loopback()
			in := baseInput(t)
			in.ControlPlaneIPs, in.Endpoint = []string{addr}, "https://"+addr+":6443"
			cfgs, err := Generate(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			startNode(t, simtalos.NodeOptions{Addr: addr, Mode: "cloud", UserData: cfgs.ControlPlane, ImagePullBlocked: func() bool { return blocked },
				Latency: simtalos.Latency{CNIReady: time.Millisecond}})
			if err := Bootstrap(ctx, addr, cfgs.Talosconfig); err != nil {
				t.Fatal(err)
			}
			kc, err := Kubeconfig(ctx, addr, cfgs.Talosconfig)
			if err != nil {
				t.Fatal(err)
			}
			in2 := ReadyInput{Kubeconfig: kc, DialAddr: net.JoinHostPort(addr, "6443"), Nodes: 1}
			for {
				c := CheckReady(ctx, in2)[1]
				if c.Name != CheckCilium {
					t.Fatalf("check 1 is %s", c.Name)
				}
				installed := !strings.Contains(c.Detail, "no Cilium DaemonSet") && !strings.Contains(c.Detail, "Cilium agents:")
				switch {
				case !blocked && c.OK:
					return
				case blocked && installed:
					if c.OK || c.Try != NodeEgressTry || len(c.Explain) != 1 || !strings.Contains(c.Explain[0], "ImagePullBackOff") ||
						!strings.Contains(c.Explain[0], "quay.io/cilium/cilium") {
						t.Fatalf("blocked: %+v, want the agent's pull named and the node-egress row's advice", c)
					}
					return
				}
				select {
				case <-ctx.Done():
					t.Fatalf("blocked %v: the check never settled: %+v", blocked, c)
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}
}

// Only the kubelet's pull reasons count as a pull the node cannot make.
func TestPullFailures(t *testing.T) {
	mk := func(reason string) pod {
		var p pod
		p.Metadata.Name, p.Spec.NodeName = "cilium-x", "cp-0"
		cs := containerStatus{Name: "cilium-agent", Image: "quay.io/cilium/cilium"}
		if reason != "" {
			cs.State.Waiting = &struct {
				Reason  string `json:"reason"`
				Message string `json:"message"`
			}{Reason: reason}
		}
		p.Status.ContainerStatuses = []containerStatus{cs}
		return p
	}
	for reason, want := range map[string]int{"": 0, "ContainerCreating": 0, "CrashLoopBackOff": 0, "ErrImagePull": 1, "ImagePullBackOff": 1} {
		got := pullFailures([]pod{mk(reason)})
		if len(got) != want || want == 1 && !strings.Contains(got[0], "quay.io/cilium/cilium") {
			t.Errorf("%q: %v, want %d naming the image", reason, got, want)
		}
	}
}
