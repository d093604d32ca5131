package talos

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
)

// waitFor polls cond until it returns nil, failing the test with what it waited for and cond's
// last answer when ctx ends first. The condition is the state itself, never a guess at how long
// it takes to arrive.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() error) {
	t.Helper()

	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()

	for {
		err := cond()
		if err == nil {
			return
		}

		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s (%v): last: %v", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// gateHandler is a log handler that holds the goroutine logging msg until open is closed, after
// telling reached: a way to stop a node's goroutine at a known point of its code.
type gateHandler struct {
	msg     string
	reached chan struct{}
	open    chan struct{}
	once    *sync.Once
}

func newGate(msg string) *gateHandler {
	return &gateHandler{msg: msg, reached: make(chan struct{}), open: make(chan struct{}), once: new(sync.Once)}
}

func (g *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (g *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return g }
func (g *gateHandler) WithGroup(string) slog.Handler            { return g }

func (g *gateHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == g.msg {
		g.once.Do(func() { close(g.reached) })
		<-g.open
	}

	return nil
}

// portFree tells whether host:port can be listened on (and frees it again).
func portFree(host string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}

	return l.Close()
}

// A node closed while it handles an ApplyConfiguration (the world reboots or deletes the server
// while the bot applies its config) must not outlive Close: once Close returns, no handler of
// the node runs any more and nothing the config started (kubelet on 10250, trustd on 50001)
// holds its ports, so a node started again on the same address comes up. grpc-go's Stop does
// not wait for running handlers by itself: a handler finishing after Close used to start the
// kubelet and trustd listeners of a node already gone, for the life of the process.
func TestCloseWaitsForAnApplyInFlight(t *testing.T) {
	t.Parallel()

	a, cp, _, _ := clusterAt(t, forms[0], "/dev/sda")

	ctx := testCtx(t, 30*time.Second)

	gate := newGate("config applied, leaving maintenance mode")
	n, err := StartNode(ctx, NodeOptions{Addr: a, Mode: "metal", Disks: []string{"/dev/sda"}, Logger: slog.New(gate),
		Latency: Latency{ApplyReboot: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}

	c, err := client.New(ctx, client.WithEndpoints(n.APIAddr()), client.WithTLSConfig(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() //nolint:errcheck

	go func() { _, _ = c.ApplyConfiguration(ctx, &machineapi.ApplyConfigurationRequest{Data: cp}) }()

	select {
	case <-gate.reached: // the handler took the config and is about to start the kubelet and trustd
	case <-ctx.Done():
		t.Fatalf("the ApplyConfiguration handler never reached its configure step: %v", ctx.Err())
	}

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = n.Close()
	}()

	waitFor(t, ctx, "Close to shut the Talos API listener", func() error {
		conn, err := net.DialTimeout("tcp", n.APIAddr(), time.Second)
		if err != nil {
			return nil
		}

		_ = conn.Close()

		return errors.New("the Talos API still accepts connections")
	})

	close(gate.open) // the handler goes on: it starts what its config needs, then replies

	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatalf("Close did not return once the handler could finish: %v", ctx.Err())
	}

	// The handler's last act is the reboot into the new config.
	waitFor(t, ctx, "the ApplyConfiguration handler to finish", func() error {
		n.reboot.mu.Lock()
		defer n.reboot.mu.Unlock()

		if n.reboot.until.IsZero() {
			return errors.New("the node has not started its reboot into the config yet")
		}

		return nil
	})

	for _, port := range []int{DefaultKubeletPort, DefaultTrustdPort, DefaultAPIPort} {
		if err := portFree(a, port); err != nil {
			t.Errorf("port %d of the closed node still taken once its last handler finished: %v", port, err)
		}
	}

	again, err := StartNode(ctx, NodeOptions{Addr: a, Mode: "cloud", UserData: cp, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("a node started again on %s: %v", a, err)
	}

	_ = again.Close()
}

// A node outlives the context it was started with: StartNode's ctx bounds the start only, and the
// boot, the API and the node's life end at Close. Tests start nodes with t.Context(), which ends
// before their cleanups close the nodes; a node bound to it would stop booting or answering while a
// test (or a world built on the node) still uses it.
func TestNodeOutlivesItsStartContext(t *testing.T) {
	t.Parallel()

	startCtx, cancel := context.WithCancel(t.Context())
	n, err := StartNode(startCtx, NodeOptions{Addr: addr(), Mode: "metal", Disks: []string{"/dev/sda"},
		BootDelay: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = n.Close() })
	cancel() // still booting

	ctx := testCtx(t, 20*time.Second)
	c := insecureClient(t, ctx, n.APIAddr())

	waitFor(t, ctx, "the node's API once it booted", func() error {
		_, err := c.Disks(ctx)

		return err
	})
}

// A start that fails after the static user data configured the node (its Talos API port taken)
// gives back what the config opened.
func TestFailedStartFreesItsPorts(t *testing.T) {
	t.Parallel()

	a, cp, _, _ := clusterAt(t, forms[0], "/dev/sda")

	taken, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(DefaultAPIPort)))
	if err != nil {
		t.Fatal(err)
	}

	_, err = StartNode(t.Context(), NodeOptions{Addr: a, Mode: "cloud", UserData: cp, Logger: slog.New(slog.DiscardHandler)})
	_ = taken.Close()

	if err == nil {
		t.Fatal("StartNode succeeded on a taken Talos API port")
	}

	for _, port := range []int{DefaultKubeletPort, DefaultTrustdPort} {
		if err := portFree(a, port); err != nil {
			t.Errorf("port %d still taken after the failed start: %v", port, err)
		}
	}
}

// What a node dials from its own address (a worker's join: kubelet → 6443, trustd → 50001) holds
// a port of that address, from the kernel's ephemeral range, which holds 50000 and 50001: while
// the connection lives, and for TIME_WAIT (60 s) after the node closed it. A node started there
// later (a parked worker's trustd, the next host of a world reusing the loopback block) must
// still be able to listen on that port.
func TestNodeDialsLeaveItsPortsFree(t *testing.T) {
	t.Parallel()

	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close() //nolint:errcheck

	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}

			go func() {
				_, _ = c.Read(make([]byte, 1)) // until the node closes its side
				_ = c.Close()
			}()
		}
	}()

	n := &Node{opts: NodeOptions{Addr: addr()}}

	c, err := n.dialer().Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}

	port := c.LocalAddr().(*net.TCPAddr).Port

	if err := portFree(n.opts.Addr, port); err != nil {
		t.Errorf("while the node's connection is open: %v", err)
	}

	_ = c.Close() // the node closes first: its side waits in TIME_WAIT

	if err := portFree(n.opts.Addr, port); err != nil {
		t.Errorf("after the node closed its connection (TIME_WAIT): %v", err)
	}
}

// Reset replies at once and its sequence runs after: pods and etcd stop, the disks are wiped,
// and only then the node reboots. apid is not among the services the sequence stops, so until
// the reboot the node still answers as configured (mutual TLS), and a client without a
// certificate is still asked for one. Close ends a sequence still running.
func TestResetAnswersAsConfiguredUntilItsReboot(t *testing.T) {
	t.Parallel()

	a, cp, _, tcfg := clusterAt(t, forms[0], "/dev/sda")

	ctx := testCtx(t, 30*time.Second)

	n, err := StartNode(ctx, NodeOptions{Addr: a, Mode: "cloud", UserData: cp, Logger: slog.New(slog.DiscardHandler),
		Latency: Latency{ResetWipe: time.Hour, ResetReboot: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}

	mtls := func() *client.Client { return trustedTalos(t, ctx, tcfg, n) }

	if err := mtls().ResetGeneric(ctx, &machineapi.ResetRequest{Reboot: true, Mode: machineapi.ResetRequest_SYSTEM_DISK}); err != nil {
		t.Fatalf("Reset: %v", err)
	}

	if _, err := mtls().Version(ctx); err != nil {
		t.Errorf("during the reset sequence, before the reboot, the node did not answer as configured: %v", err)
	}

	if !n.Configured() {
		t.Error("the node forgot its config before its reset sequence wiped STATE")
	}

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_ = n.Close()
	}()

	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatalf("Close did not end the reset sequence: %v", ctx.Err())
	}
}
