// Package loopback hands out blocks of loopback addresses (127.X.0.0/16) that no other holder uses
// at the same time, in this process or in another one on the machine.
//
// The stand-ins listen on fixed ports of their own address (a Talos node on 50000, a rescue host
// on 2222), so two test worlds that hand out the same addresses fight over them: the second
// listen fails, and the bot of one world talks to the hosts of the other (a rescue SSH host that
// refuses its password, a port 50000 that refuses the connection once the other world closes, a
// node that never answers). `go test ./...` runs several test binaries at once, each with
// parallel worlds, so a block picked at random is not enough: picking 20 of 200 at random
// collides more often than not.
//
// A claim is a TCP listener on the block's base address 127.X.0.0 (never handed out to a host) at
// one fixed port: the kernel lets one socket only bind it, across processes, and releases it when
// the holder closes it or dies, so no lock file outlives a crashed test.
//
// ServeHTTP serves a stand-in's HTTP API on a free port of 127.0.0.1.
package loopback

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// ClaimPort is the port of the claim listener on a block's base address. It is below the
// kernel's ephemeral range (32768-60999 on Linux) so no outgoing connection takes it.
const ClaimPort = 31999

// First and Last bound the second octet of the blocks handed out: 127.0/16 holds 127.0.0.1,
// 127.10/16 is the Scaleway emulator's default base and 127.18/16 a fixed base of a test that
// listens nowhere; blocks start above them.
const (
	First = 20
	Last  = 254
)

// Block is a claimed 127.X.0.0/16.
type Block struct {
	x    int
	ln   net.Listener
	next atomic.Uint32
}

// Unclaimed is the first block of the range tried first. Before this package, a world took a
// random block in 127.20-219 without claiming it; a checkout that old (another branch) may run
// its tests on the same machine, so blocks it never picks go first.
const Unclaimed = 220

// Claim claims a free block, trying them in a random order, Unclaimed..Last before First..
// Unclaimed-1. It fails only when every block is held (or the claim port is taken on every
// address, e.g. by a listener on 0.0.0.0:ClaimPort).
func Claim() (*Block, error) {
	var last error
	for _, r := range [][2]int{{Unclaimed, Last}, {First, Unclaimed - 1}} {
		n := r[1] - r[0] + 1
		start, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
		if err != nil {
			return nil, err
		}
		for i := range n {
			x := r[0] + (int(start.Int64())+i)%n
			ln, err := net.Listen("tcp", fmt.Sprintf("127.%d.0.0:%d", x, ClaimPort))
			if err == nil {
				return &Block{x: x, ln: ln}, nil
			}
			last = err
			if !errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("loopback: claim 127.%d.0.0/16: %w", x, err)
			}
		}
	}
	return nil, fmt.Errorf("loopback: no free 127.X.0.0/16 block for X in %d..%d (a block is claimed by listening on 127.X.0.0:%d; is something listening on 0.0.0.0:%d?): %w", First, Last, ClaimPort, ClaimPort, last)
}

// Base is the block's first address, 127.X.0.0 (the Scaleway emulator's IPBase).
func (b *Block) Base() string { return fmt.Sprintf("127.%d.0.0", b.x) }

// Next returns the block's next unused address, never a .0 or .255 last octet. It panics when
// the block's 65024 addresses are spent (no test needs that many).
func (b *Block) Next() string {
	n := b.next.Add(1) - 1
	hi, lo := n/254, n%254+1
	if hi > 255 {
		panic("loopback: block " + b.Base() + "/16 spent")
	}
	return fmt.Sprintf("127.%d.%d.%d", b.x, hi, lo)
}

// Release frees the block for another holder. Close what listens in it first.
func (b *Block) Release() error { return b.ln.Close() }

var (
	shared     *Block
	sharedErr  error
	sharedOnce sync.Once
)

// Shared is one block claimed for the life of the process (released when it exits), for tests
// that only need fresh addresses one at a time.
func Shared() (*Block, error) {
	sharedOnce.Do(func() { shared, sharedErr = Claim() })
	return shared, sharedErr
}

// ServeHTTP serves h on 127.0.0.1 (a free port) until stop is called; ctx bounds the listen
// only. name prefixes the listen error and the log line of a failed serve. stop shuts the server
// down (5 s of grace, then it closes it) and waits until it has stopped; it may be called more
// than once.
func ServeHTTP(ctx context.Context, h http.Handler, log *slog.Logger, name string) (url string, stop func(), err error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("%s: listen on 127.0.0.1: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(name+": serve", "err", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			<-done
		})
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// Reach opens a TCP connection from src to addr on the world's loopback and completes a TLS
// handshake (every port of a Talos node speaks TLS, and a connection a firewall or security
// group refuses is reset at accept in the world; the client side of TLS 1.3 finishes before the
// server asks for a certificate): nil means addr is open to src.
func Reach(src, addr string) error {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // reachability only
	if err != nil {
		return err
	}
	return c.Close()
}
