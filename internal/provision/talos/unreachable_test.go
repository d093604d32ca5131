package talos

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
)

// retrySignal is a log handler that tells, once, the error of the first retried attempt.
type retrySignal struct {
	once  *sync.Once
	first chan string
}

func (r retrySignal) Enabled(context.Context, slog.Level) bool { return true }
func (r retrySignal) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r retrySignal) WithGroup(string) slog.Handler            { return r }

func (r retrySignal) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message != "Talos API not ready, retrying" {
		return nil
	}

	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			r.once.Do(func() { r.first <- a.Value.String() })
		}

		return true
	})

	return nil
}

// A node's Talos API port refuses connections while the machine reboots or boots (nothing
// listens on it yet): every wait of the bot takes a refused connection as "not up yet" and waits
// for the node within its deadline, as it must for a real node. Here each call starts against an
// address where nothing listens, and the node starts there once the call retried a refusal.
func TestWaitsForANodeNotListeningYet(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		// node starts the node the call waits for; call is the bot's operation on it.
		node func(in Input, cfgs *Configs) simtalos.NodeOptions
		call func(ctx context.Context, addr string, cfgs *Configs) error
	}{
		{"apply in maintenance mode",
			func(_ Input, _ *Configs) simtalos.NodeOptions {
				return simtalos.NodeOptions{Addr: loopback(), Mode: "metal", Disks: []string{"/dev/sda"}}
			},
			func(ctx context.Context, addr string, cfgs *Configs) error {
				_, err := ApplyInsecure(ctx, addr, cfgs.Worker)
				return err
			}},
		{"wait for trust",
			func(in Input, cfgs *Configs) simtalos.NodeOptions {
				return simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane}
			},
			func(ctx context.Context, addr string, cfgs *Configs) error {
				return WaitTrusted(ctx, addr, cfgs.Talosconfig)
			}},
		{"bootstrap",
			func(in Input, cfgs *Configs) simtalos.NodeOptions {
				return simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane}
			},
			func(ctx context.Context, addr string, cfgs *Configs) error {
				return Bootstrap(ctx, addr, cfgs.Talosconfig)
			}},
		{"kubeconfig",
			func(in Input, cfgs *Configs) simtalos.NodeOptions {
				return simtalos.NodeOptions{Addr: in.ControlPlaneIPs[0], Mode: "cloud", UserData: cfgs.ControlPlane}
			},
			func(ctx context.Context, addr string, cfgs *Configs) error {
				_, err := Kubeconfig(ctx, addr, cfgs.Talosconfig)
				return err
			}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			in, cfgs := freshCluster(t, "", "/dev/sda")
			opts := tt.node(in, cfgs)
			addr := net.JoinHostPort(opts.Addr, "50000")

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()

			sig := retrySignal{once: new(sync.Once), first: make(chan string, 1)}
			cctx := WithRetryInterval(WithLogger(ctx, slog.New(sig)), 20*time.Millisecond)

			done := make(chan error, 1)
			go func() { done <- tt.call(cctx, addr, cfgs) }()

			select {
			case first := <-sig.first:
				if !strings.Contains(first, "connection refused") {
					t.Errorf("first attempt failed with %q, want a refused connection (nothing listens yet)", first)
				}
			case err := <-done:
				t.Fatalf("the call ended before any node listened on %s: %v", addr, err)
			case <-ctx.Done():
				t.Fatalf("no retried attempt within the deadline: %v", ctx.Err())
			}

			startNode(t, opts)

			select {
			case err := <-done:
				if err != nil {
					t.Errorf("once the node listened: %v", err)
				}
			case <-ctx.Done():
				t.Fatalf("the call did not end once the node listened: %v", ctx.Err())
			}
		})
	}
}
