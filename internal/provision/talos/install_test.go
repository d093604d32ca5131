package talos

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// TestInterruptedCiliumInstallConverges: the rendered chart is Talos's inline manifest; the
// manifest controller of every control plane (sim/talos manifests.go, after manifest_apply.go
// @v1.13.9) is cut off in the middle of its runs again and again, then a control plane is
// replaced and runs it again: every object of the manifest ends up created exactly once, the
// runs after that create nothing, and the Kubernetes API serves the Cilium DaemonSet.
func TestInterruptedCiliumInstallConverges(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	addrs := []string{loopback(), loopback(), loopback()}
	in := baseInput(t)
	in.ControlPlaneIPs, in.Endpoint = addrs, "https://"+addrs[0]+":6443"

	cfgs, err := Generate(ctx, in)
	if err != nil {
		t.Fatal(err)
	}

	want := slices.Sorted(func(yield func(string) bool) {
		for _, m := range inlineManifests(t, cfgs.ControlPlane) {
			for _, o := range manifestIDs(t, m) {
				if !yield(o) {
					return
				}
			}
		}
	})
	if len(want) < 8 {
		t.Fatalf("the rendered manifest has %d objects: %v", len(want), want)
	}

	var (
		mu       sync.Mutex
		attempts []string // every create the controllers started
		cut      = 5      // the next runs fail after this many creates each
	)

	fault := func(obj string) error {
		mu.Lock()
		defer mu.Unlock()

		attempts = append(attempts, obj)
		if cut > 0 && len(attempts)%cut == 0 {
			cut-- // each interruption a little earlier, until the runs go through
			return errors.New("connection reset by peer")
		}

		return nil
	}

	var nodes []*simtalos.Node
	for _, a := range addrs {
		nodes = append(nodes, startNode(t, simtalos.NodeOptions{Addr: a, Mode: "cloud", UserData: cfgs.ControlPlane, ManifestFault: fault}))
	}

	if err := Bootstrap(ctx, addrs[0], cfgs.Talosconfig); err != nil {
		t.Fatal(err)
	}

	kc, err := Kubeconfig(ctx, addrs[0], cfgs.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatal(err)
	}

	converged := func() []string {
		for {
			got, err := nodes[0].ManifestObjects()
			if err == nil && len(got) == len(want) {
				return got
			}

			select {
			case <-ctx.Done():
				t.Fatalf("the install never converged: %d of %d objects (%v)", len(got), len(want), err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	converged()

	mu.Lock()
	interrupted := len(attempts) - len(want)
	mu.Unlock()

	if interrupted < 3 {
		t.Fatalf("only %d interrupted creates: the test did not cut the runs short", interrupted)
	}

	// A replaced control plane runs the controller again: it finds everything and creates nothing.
	mu.Lock()
	before := len(attempts)
	mu.Unlock()

	_ = nodes[0].Close()
	nodes[0] = startNode(t, simtalos.NodeOptions{Addr: addrs[0], Mode: "cloud", UserData: cfgs.ControlPlane, ManifestFault: fault})

	for nodes[0].ManifestRuns() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the replaced control plane never ran the manifest controller")
		case <-time.After(20 * time.Millisecond):
		}
	}

	got := converged()

	mu.Lock()
	after := len(attempts)
	mu.Unlock()

	if after != before {
		t.Errorf("the rerun on a replaced control plane created %d objects again", after-before)
	}

	if len(got) != len(want) {
		t.Errorf("objects %v, want %v", got, want)
	}

	if code, obj := kubeDo(t, ctx, kc, http.MethodGet, "/apis/apps/v1/namespaces/kube-system/daemonsets/cilium", nil); code != http.StatusOK {
		t.Errorf("the Cilium DaemonSet = %d %v", code, obj)
	}
}

// manifestIDs are a manifest's objects as "apiVersion/Kind/name".
func manifestIDs(t *testing.T, manifest string) []string {
	t.Helper()

	var out []string

	for _, doc := range strings.Split(manifest, "\n---\n") {
		var kind, name, api string

		for _, l := range strings.Split(doc, "\n") {
			switch {
			case strings.HasPrefix(l, "kind: "):
				kind = strings.TrimPrefix(l, "kind: ")
			case strings.HasPrefix(l, "apiVersion: "):
				api = strings.TrimPrefix(l, "apiVersion: ")
			case strings.HasPrefix(l, "  name: ") && name == "":
				name = strings.TrimPrefix(l, "  name: ")
			}
		}

		if kind != "" {
			out = append(out, api+"/"+kind+"/"+name)
		}
	}

	return out
}
