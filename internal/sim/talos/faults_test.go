package talos

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Pushed faults refuse calls with Unavailable while they are pushed, and only then.
func TestFaultsRefuseCallsWhilePushed(t *testing.T) {
	ctx := testCtx(t, 30*time.Second)

	f := NewFaults(1)
	n := start(t, NodeOptions{Addr: addr(), Mode: "metal", Disks: []string{"/dev/sda"}, SystemDisk: "/dev/sda", Faults: f})
	c := insecureClient(t, ctx, n.APIAddr())

	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("no fault pushed: %v", err)
	}
	pop := f.Push(FaultRates{Unavailable: 1})
	_, err := c.Version(ctx)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("with Unavailable 1 pushed: %v, want Unavailable", err)
	}
	pop()
	if _, err := c.Version(ctx); err != nil {
		t.Fatalf("after the pop: %v", err)
	}
}
