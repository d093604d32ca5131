package world

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/sim/loopback"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// TestBootsApplyInTheirOrder: the emulator runs its hooks after releasing its lock, on whichever
// goroutine advanced the clock, so the hook of a worker's delivery (a normal boot) can reach the
// world after the hook of the rescue boot the bot asked for right after it. Played in that order,
// the late delivery stopped the rescue system: the bot's SSH dials were refused until the rescue
// wait's 10 minutes (an up hung). The world keeps the latest boot of each server.
func TestBootsApplyInTheirOrder(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	keyLine := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
	blk, err := loopback.Shared()
	if err != nil {
		t.Fatal(err)
	}
	boot := func(ip, bootType string, seq uint64) scwsim.BaremetalEvent {
		ev := scwsim.BaremetalEvent{Zone: "fr-par-2", ID: "bm-" + ip, Name: "worker", BootType: bootType, IP: ip, Seq: seq}
		if bootType == "rescue" {
			ev.RescueUser, ev.RescuePassword, ev.SSHPublicKeys = "rescue", "pw", []string{keyLine}
		}
		return ev
	}
	for _, tc := range []struct {
		name       string
		boots      []string // boot types, in the order the hooks reach the world
		seqs       []uint64 // their order in the emulator
		wantRescue bool
	}{
		{name: "delivery, then rescue", boots: []string{"normal", "rescue"}, seqs: []uint64{1, 2}, wantRescue: true},
		{name: "rescue, then the delivery's late hook", boots: []string{"rescue", "normal"}, seqs: []uint64{2, 1}, wantRescue: true},
		{name: "rescue, then a later normal boot", boots: []string{"rescue", "normal"}, seqs: []uint64{1, 2}, wantRescue: false},
		{name: "a second rescue boot, the first one's hook late", boots: []string{"normal", "rescue", "rescue"}, seqs: []uint64{1, 3, 2}, wantRescue: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Start(context.Background(), Options{Dir: t.TempDir(), TimeFactor: 0.005, S3: "file"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			ip := blk.Next()
			for i, bt := range tc.boots {
				w.baremetalBooted(boot(ip, bt, tc.seqs[i]))
			}
			// Hosts is zero: a rescue boot's SSH host starts inside the hook, so it answers now
			// or never.
			addr := net.JoinHostPort(ip, strconv.Itoa(w.opts.RescuePort))
			cfg := &ssh.ClientConfig{User: "rescue", Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
				HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 30 * time.Second} //nolint:gosec // a test host
			c, err := ssh.Dial("tcp", addr, cfg)
			if err == nil {
				c.Close()
			}
			switch {
			case tc.wantRescue && err != nil:
				t.Fatalf("after the boots %v (emulator order %v), the rescue system at %s does not let the bot in: %v", tc.boots, tc.seqs, addr, err)
			case !tc.wantRescue && err == nil:
				t.Fatalf("after the boots %v (emulator order %v), a rescue system still answers at %s", tc.boots, tc.seqs, addr)
			}
		})
	}
}
