package clusterops

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/statestore"
)

// ErrRunnerOutside is a read that would need the runner admitted to a cluster's control planes
// when the operator asked reads not to open the security group (Ops.NoReadRunnerAccess).
var ErrRunnerOutside = errors.New("this runner is outside the cluster's admin_cidrs")

// readLockWait bounds the wait for the cluster's lock before a read opens the security group: a
// person waits for the answer; a run holding the lock for longer is reported, not waited for.
const readLockWait = 5 * time.Second

// readAccess is how a read that talks to the nodes (Status's checks, MachineConfigs) may reach
// them from this runner.
type readAccess int

const (
	readDirect  readAccess = iota // the admin CIDRs cover the runner, or there is nothing to reach
	readOpen                      // outside them: admit the runner for the read, as a run does
	readRefused                   // outside them, and the operator asked reads not to open the group
)

// decideReadAccess decides how a read reaches st's nodes from runnerCIDR. Pure: read, decide, act.
func decideReadAccess(st *provision.State, runnerCIDR string, noOpen bool) readAccess {
	if outsideAdminCIDRs(st, runnerCIDR) == "" || !hasControlPlanes(st) {
		return readDirect
	}
	if noOpen {
		return readRefused
	}
	return readOpen
}

// hasControlPlanes tells whether st records a control plane and its security group: what a read
// of the nodes goes through (a paused cluster has none).
func hasControlPlanes(st *provision.State) bool {
	if _, ok := st.Resources[scaleway.NodeSecGroup]; !ok {
		return false
	}
	for i := range st.Spec.CPCount {
		if _, ok := st.Resources[scaleway.NodeServer(i)]; ok {
			return true
		}
	}
	return false
}

// withRunnerAccess runs read with this runner admitted to the cluster's control planes by the
// security group for the read only, as a run that changes the cluster admits it
// (admin-access-open … admin-access-close): under the cluster's lock (taken within
// readLockWait), the temporary CIDR recorded in the state, the group's rules put, read run, then
// the rule removed, even when read fails. A process killed in between leaves the CIDR in the
// state, which the next run and the reaper's CloseRunnerAccess remove. opened is false when the
// group was not opened (the lock held by another run: read runs as it can, and the error says
// why); read's own error is returned as it is.
func (o *Ops) withRunnerAccess(ctx context.Context, clusterName, command string, read func(context.Context) error) (opened bool, err error) {
	if o.Build == nil {
		return false, errors.Join(read(ctx), errors.New("the security group was not opened to this runner for the read: these operations have no cluster graph (open them with the bot's whole parts)"))
	}
	in := Intent{Cluster: clusterName, Command: command + " (runner access)", RequestedBy: "pocbot"}
	h, err := o.acquire(ctx, statestore.ClusterLock(clusterName), in, readLockWait)
	if err != nil {
		var le *statestore.LockedError
		if errors.As(err, &le) {
			return false, errors.Join(read(ctx), fmt.Errorf("the security group was not opened to this runner for the read: %s holds the cluster's lock", le.Holder.Command))
		}
		return false, err
	}
	defer o.release(ctx, h)
	hctx := h.Context()
	doc, err := o.Store.Get(hctx, clusterName)
	if err != nil {
		return false, err
	}
	st, err := decodeState(doc)
	if err != nil {
		return false, err
	}
	g, engine, err := o.prepare(st, nil)
	if err != nil {
		return false, err
	}
	saver := noCancel{&docSaver{store: o.Store, cluster: clusterName, doc: doc, fault: o.saveFault}}
	open := provision.NewGraph()
	for _, name := range []string{cluster.NodeAdminOpen, scaleway.NodeSecRules} {
		n, ok := g.Node(name)
		if !ok {
			return false, fmt.Errorf("the graph has no %s step", name)
		}
		if name == scaleway.NodeSecRules {
			n.Needs = []string{cluster.NodeAdminOpen}
		} else {
			n.Needs = nil
		}
		if err := open.Add(n); err != nil {
			return false, err
		}
	}
	openErr := engine.Up(hctx, open, st, saver)
	if openErr == nil {
		err = read(hctx)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(hctx), time.Minute)
	defer cancel()
	if st.Outputs[scaleway.OutAdminTemporary] != "" {
		if cerr := runAdminClose(cctx, g, engine, st, saver); cerr != nil {
			openErr = errors.Join(openErr, fmt.Errorf("remove this runner's temporary rule after the read (the next run or the reaper removes it): %w", cerr))
		}
	}
	if openErr != nil {
		return false, fmt.Errorf("admit this runner to the control planes of %q for the read: %w", clusterName, openErr)
	}
	return true, err
}
