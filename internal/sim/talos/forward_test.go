package talos

import (
	"context"
	"fmt"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/client"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// TestControlPlaneForwardsByNodeMetadata: apid's router. The worker's firewall admits its Talos
// API from the control plane's address only; a client outside it cannot reach the worker, but the
// same client, calling the control plane with the worker's address in the "node" metadata, is
// answered by the worker (the control plane forwards from its own address, the caller's os:admin
// role carried along, so the Sensitive machine config is readable). The forwarded call is the
// worker's, not the control plane's; it fails when the worker's network refuses the control
// plane; and "node" must be single-valued.
func TestControlPlaneForwardsByNodeMetadata(t *testing.T) {
	t.Parallel()

	cpAddr, cp, worker, tcfg := clusterAt(t, forms[0], "/dev/sda")
	wAddr := addr()
	fw := apidOnly(fmt.Sprintf("  - subnet: %s/32\n", cpAddr))

	ctx := testCtx(t, time.Minute)

	var refuseCP atomic.Bool

	cpNode := start(t, NodeOptions{Addr: cpAddr, Mode: "cloud", UserData: cp})
	w := start(t, NodeOptions{Addr: wAddr, Mode: "cloud", UserData: append(append([]byte{}, worker...), fw...),
		Network: func(src netip.Addr, _ string, _ int) bool { return !refuseCP.Load() || src.String() != cpAddr }})

	cpc := trustedTalos(t, ctx, tcfg, cpNode)
	if err := cpc.Bootstrap(ctx, nil); err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}

	waitFor(t, ctx, "the worker to get its certificate from trustd", func() error {
		if w.Trusted() {
			return nil
		}

		return fmt.Errorf("join: %v", w.JoinError())
	})

	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 3*time.Second) }

	// Direct: this test's address (127.0.0.1) is not in the worker's firewall.
	direct := trustedTalos(t, ctx, tcfg, w)
	dctx, dcancel := short()
	if _, err := direct.Version(dctx); err == nil {
		t.Error("the worker answered a client its firewall does not admit")
	}
	dcancel()

	cpBefore, wBefore := cpNode.Calls("/machine.MachineService/Version"), w.Calls("/machine.MachineService/Version")
	if _, err := cpc.Version(client.WithNode(ctx, wAddr)); err != nil {
		t.Fatalf("Version of the worker through the control plane: %v", err)
	}

	if got := w.Calls("/machine.MachineService/Version") - wBefore; got != 1 {
		t.Errorf("the worker served %d forwarded Version calls, want 1", got)
	}

	if got := cpNode.Calls("/machine.MachineService/Version") - cpBefore; got != 0 {
		t.Errorf("the control plane served %d Version calls itself, want 0 (forwarded)", got)
	}

	mc, err := safe.StateGetByID[*configres.MachineConfig](client.WithNode(ctx, wAddr), cpc.COSI, configres.ActiveID)
	if err != nil {
		t.Fatalf("the worker's machine config through the control plane (os:admin carried in the metadata): %v", err)
	}

	if mc.Provider().Machine().Type().IsControlPlane() {
		t.Error("the forwarded read answered with the control plane's config, not the worker's")
	}

	// A streaming call (COSI List) is forwarded too.
	list, err := safe.StateListAll[*configres.MachineConfig](client.WithNode(ctx, wAddr), cpc.COSI)
	if err != nil || list.Len() != 1 || list.Get(0).Provider().Machine().Type().IsControlPlane() {
		t.Errorf("the worker's machine configs listed through the control plane: %d, %v", list.Len(), err)
	}

	refuseCP.Store(true)

	fctx, fcancel := short()
	if _, err := cpc.Version(client.WithNode(fctx, wAddr)); err == nil {
		t.Error("a forwarded call got through a network that refuses the control plane")
	}
	fcancel()

	refuseCP.Store(false)

	two := metadata.AppendToOutgoingContext(ctx, "node", wAddr, "node", cpAddr)
	if _, err := cpc.Version(two); client.StatusCode(err) != codes.InvalidArgument {
		t.Errorf("two node values = %v, want InvalidArgument", err)
	}
}
