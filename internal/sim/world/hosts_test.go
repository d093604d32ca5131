package world

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/pocbot/pocbot/internal/sim/loopback"
	rescuesim "github.com/pocbot/pocbot/internal/sim/rescue"
	talossim "github.com/pocbot/pocbot/internal/sim/talos"
)

// A stop or delete event of a server stops the host on its address only while that host is
// still the server's: a reserved IP can move to another server, which boots there, before the
// first server stops. The world used to find a server's host by the address it last had, and
// stopped the newcomer's Talos node: a running control plane whose port 50000 refused.
func TestLateStopOfAServerSparesTheNextHostOnItsAddress(t *testing.T) {
	blk, err := loopback.Shared()
	if err != nil {
		t.Fatal(err)
	}

	ip := blk.Next()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := &World{log: log, nodes: map[string]*talossim.Node{}, rescues: map[string]*rescuesim.Server{},
		written: map[string]bool{}, gens: map[string]int{}, hostOf: map[string]string{}}
	t.Cleanup(func() { _ = w.Close() })

	boot := func(serverID string) {
		w.replaceHost(ip, serverID, func() (closer, error) {
			return talossim.StartNode(t.Context(), talossim.NodeOptions{Addr: ip, Mode: "metal", Disks: []string{"/dev/sda"}, Logger: log})
		})
	}

	boot("old-server")
	boot("new-server") // the address went to another server, which booted on it
	w.hostGone("old-server")

	n := w.Node(ip)
	if n == nil {
		t.Fatalf("the old server's stop removed the new server's node on %s", ip)
	}

	c, err := net.Dial("tcp", n.APIAddr())
	if err != nil {
		t.Fatalf("the new server's Talos API on %s: %v", n.APIAddr(), err)
	}
	_ = c.Close()

	w.hostGone("new-server")

	if w.Node(ip) != nil {
		t.Errorf("the new server's own stop left its node on %s", ip)
	}
}
