package loopback

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
)

// A held block is never handed out again, and nobody else can bind its claim; released, it can.
func TestClaimIsExclusive(t *testing.T) {
	const n = 10 // of 235: other test binaries on the machine claim blocks meanwhile
	held := map[string]*Block{}
	defer func() {
		for _, b := range held {
			_ = b.Release()
		}
	}()
	for range n {
		b, err := Claim()
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := held[b.Base()]; dup {
			t.Fatalf("block %s handed out twice", b.Base())
		}
		held[b.Base()] = b
		if ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", b.Base(), ClaimPort)); err == nil {
			ln.Close()
			t.Fatalf("%s:%d bound while the block is held", b.Base(), ClaimPort)
		} else if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("second bind of %s: %v, want EADDRINUSE", b.Base(), err)
		}
	}
	for base, b := range held {
		if err := b.Release(); err != nil {
			t.Fatal(err)
		}
		delete(held, base)
		ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", base, ClaimPort))
		if err != nil && !errors.Is(err, syscall.EADDRINUSE) { // EADDRINUSE: another binary took it since
			t.Fatalf("released %s: bind: %v", base, err)
		}
		if ln != nil {
			ln.Close()
		}
		break
	}
}

// Next walks the block, never the base, a .0 or a .255.
func TestNext(t *testing.T) {
	b := &Block{x: 42}
	seen := map[string]bool{}
	for i := range 600 {
		a := b.Next()
		ip := net.ParseIP(a).To4()
		if ip == nil || ip[0] != 127 || ip[1] != 42 || ip[3] == 0 || ip[3] == 255 || seen[a] {
			t.Fatalf("address %d = %s: want a fresh 127.42.y.z, z not 0 or 255", i, a)
		}
		seen[a] = true
	}
	if a := (&Block{x: 42}).Next(); a != "127.42.0.1" {
		t.Errorf("first address %s, want 127.42.0.1", a)
	}
	if !strings.HasPrefix(b.Base(), "127.42.0.0") {
		t.Errorf("base %s", b.Base())
	}
}

// The blocks older checkouts pick without a claim come last.
func TestClaimPrefersUnclaimedRange(t *testing.T) {
	b, err := Claim()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	// Other binaries may hold all of 220..254 only if 35 of them run at once.
	if b.x < Unclaimed || b.x > Last {
		t.Errorf("first claim took 127.%d, want a block in %d..%d", b.x, Unclaimed, Last)
	}
}
