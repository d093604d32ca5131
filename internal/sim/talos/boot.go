package talos

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// errBooting is what a client's TLS handshake meets while the node boots: a real node's apid is
// not listening yet, which a gRPC client sees as Unavailable, as it does here.
var errBooting = errors.New("talos stand-in: the node is still booting (apid not started)")

// boot plays the part of the boot sequence the bot can observe: after BootDelay the node fetches
// its user data once (Talos's platform code reads it during boot, never again), comes up
// configured when it found a config, and in maintenance mode when it found none. A config that
// does not validate leaves the node failed: its API never answers (the boot sequence stops).
func (n *Node) boot(ctx context.Context) {
	defer close(n.bootDone)

	if n.opts.BootDelay > 0 {
		select {
		case <-ctx.Done():
			return
		case <-time.After(n.opts.BootDelay):
		}
	}

	if n.opts.UserDataSource == nil {
		// No source: the static UserData (if any) was applied when the node started.
		n.setBootErr(nil)

		return
	}

	data, err := n.opts.UserDataSource(ctx)
	if err != nil {
		n.setBootErr(fmt.Errorf("fetch user data at boot: %w", err))

		return
	}

	if len(data) == 0 {
		n.log.Info("no user data at boot: maintenance mode")
		n.setBootErr(nil)

		return
	}

	if err := n.configure(data); err != nil {
		n.setBootErr(fmt.Errorf("user data config refused at boot: %w", err))

		return
	}

	n.setBootErr(nil)
}

func (n *Node) setBootErr(err error) {
	if err != nil {
		n.log.Error("boot failed", "err", err)
	}

	n.mu.Lock()
	n.booted, n.bootErr = true, err
	n.mu.Unlock()
}

// bootState tells whether the API may answer yet: nil once booted, errBooting while booting, the
// boot failure after a failed boot.
func (n *Node) bootState() error {
	n.mu.Lock()
	defer n.mu.Unlock()

	switch {
	case !n.booted:
		return errBooting
	case n.bootErr != nil:
		return fmt.Errorf("talos stand-in: boot failed, the API is down: %w", n.bootErr)
	default:
		return nil
	}
}

// WaitBooted waits until the node finished booting (configured or in maintenance mode) or ctx ends.
func (n *Node) WaitBooted(ctx context.Context) error {
	select {
	case <-n.bootDone:
		return n.bootState()
	case <-ctx.Done():
		return fmt.Errorf("talos stand-in %s: still booting: %w", n.opts.Addr, ctx.Err())
	}
}

// sinceConfigured is how long ago the node was configured (at boot, or by ApplyConfiguration).
func (n *Node) sinceConfigured() time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.opts.now().Sub(n.configuredAt)
}

// criReady tells whether the container runtime runs: a real control plane refuses Bootstrap with
// "bootstrap is not available yet" until then, here for CRIDelay after it was configured.
func (n *Node) criReady() bool { return n.sinceConfigured() >= n.opts.CRIDelay }

// timeSynced tells whether NTP has synchronized the clock: a real control plane refuses Bootstrap
// with "time is not in sync yet" until then, here for TimeSyncDelay after the runtime started.
func (n *Node) timeSynced() bool {
	return n.sinceConfigured() >= n.opts.CRIDelay+n.opts.TimeSyncDelay
}
