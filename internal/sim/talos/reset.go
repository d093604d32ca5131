package talos

import (
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Reset plays machined's Reset (talos v1.14.0-rc.1,
// internal/app/machined/internal/server/v1alpha1/v1alpha1_server.go Reset, and the Reset
// sequence in internal/app/machined/pkg/runtime/v1alpha1/v1alpha1_sequencer.go):
//   - an admin call over mutual TLS (a node in maintenance mode does not serve it);
//   - SYSTEM_DISK mode with UserDisksToWipe is refused; USER_DISKS with system partitions too;
//   - each label of SystemPartitionsToWipe must name a volume the node has (STATE, EPHEMERAL
//     here), otherwise the call fails ("failed to get volume status with label");
//   - the reply comes at once, the sequence runs after it: wipe (Latency.ResetWipe, the API
//     still answering as configured: the sequence does not stop apid), then reboot
//     (Reboot=true) or power off (the stand-in then stops answering for good);
//   - STATE holds the machine config: once wiped, a metal node boots back into maintenance mode
//     (a cloud node would read its user data again). EPHEMERAL holds etcd and the pods: wiping
//     it leaves nothing of the old cluster. Wiping EPHEMERAL alone keeps the config.
func (s *machineServer) Reset(ctx context.Context, in *machineapi.ResetRequest) (*machineapi.ResetResponse, error) {
	n := s.n

	if _, _, err := n.configured(); err != nil {
		return nil, err
	}

	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}

	if len(in.GetUserDisksToWipe()) > 0 && in.GetMode() == machineapi.ResetRequest_SYSTEM_DISK {
		return nil, status.Error(codes.InvalidArgument, "reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter")
	}

	if len(in.GetSystemPartitionsToWipe()) > 0 && in.GetMode() == machineapi.ResetRequest_USER_DISKS {
		return nil, status.Error(codes.InvalidArgument, "reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter")
	}

	known := []string{constants.StatePartitionLabel, constants.EphemeralPartitionLabel}
	wipeState := len(in.GetSystemPartitionsToWipe()) == 0 && in.GetMode() != machineapi.ResetRequest_USER_DISKS

	for _, p := range in.GetSystemPartitionsToWipe() {
		if !slices.Contains(known, p.GetLabel()) {
			return nil, status.Error(codes.Unknown, fmt.Sprintf("failed to get volume status with label %q: resource not found", p.GetLabel()))
		}

		if p.GetWipe() && p.GetLabel() == constants.StatePartitionLabel {
			wipeState = true
		}
	}

	if n.resetFault() {
		return nil, status.Error(codes.Internal, "reset failed: stand-in fault injected")
	}

	n.log.Info("reset accepted", "wipe_state", wipeState, "reboot", in.GetReboot())

	n.bg.Add(1)

	go func() {
		defer n.bg.Done()
		n.runReset(wipeState, in.GetReboot())
	}()

	return &machineapi.ResetResponse{Messages: []*machineapi.Reset{{ActorId: "sim-reset"}}}, nil
}

// runReset is the sequence after the reply: the pods and etcd stop (the kube-apiserver with
// them), the disks are wiped for ResetWipe while apid still answers as configured, then the node
// reboots: it leaves the cluster (its pods and etcd data are on EPHEMERAL, always wiped by a full
// reset) and forgets the config when STATE goes. Close ends the sequence where it is.
func (n *Node) runReset(wipeState, reboot bool) {
	n.stopKube()

	if d := n.opts.Latency.ResetWipe; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()

		select {
		case <-t.C:
		case <-n.stop:
			return
		}
	}

	if !reboot {
		// Powered off: nothing answers any more. Close waits for this sequence to end, so it
		// runs beside it.
		go func() { _ = n.Close() }()

		return
	}

	n.reboot.start(n.opts.Latency.ResetReboot)

	if !wipeState {
		return
	}

	n.deconfigure()

	if len(n.opts.UserData) > 0 {
		if err := n.configure(n.opts.UserData); err != nil {
			n.log.Error("user data refused after reset", "err", err)
		}
	}
}

// reapply takes a new config on a configured node: only from an admin over mutual TLS, as apid
// authorizes ApplyConfiguration (os:admin); the node leaves its old cluster and reboots into
// the new config (a machine type change included: talos v1.14.0-rc.1
// internal/app/machined/pkg/controllers/secrets/api.go restarts on "machine type changed").
func (s *machineServer) reapply(ctx context.Context, req *machineapi.ApplyConfigurationRequest) (*machineapi.ApplyConfigurationResponse, error) {
	n := s.n

	if err := requireAdmin(ctx); err != nil {
		return nil, err
	}

	if _, _, err := n.validate(req.GetData()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	n.deconfigure()

	if err := n.configure(req.GetData()); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}

	return n.appliedWithReboot(), nil
}

// deconfigure forgets the node's config and stops what the config started (the kube-apiserver,
// trustd, the kubelet's port), as the reboot after a wipe or a new config does. A worker's join
// loop is not stopped (it ends once the worker is trusted, which a park or an adoption waits for).
func (n *Node) deconfigure() {
	n.stopKube()
	n.holdMachineConfig(nil)

	n.mu.Lock()
	cl, trustd, kubelet := n.cluster, n.trustd, n.kubelet
	lis := []net.Listener{n.trustdLis, n.kubeletLis}
	n.cfg, n.cfgBytes, n.cluster, n.apidCert, n.recoverySnap = nil, nil, nil, nil, nil
	n.trustd, n.kubelet, n.trustdLis, n.kubeletLis = nil, nil, nil, nil
	n.mu.Unlock()

	for _, l := range lis {
		if l != nil {
			_ = l.Close()
		}
	}

	if trustd != nil {
		trustd.Stop()
	}

	if kubelet != nil {
		_ = kubelet.Close()
	}

	if cl != nil {
		cl.remove(n)
	}
}

// FailReset makes the node's next Reset calls fail (a test's fault).
func (n *Node) FailReset(fail bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.failReset = fail
}

func (n *Node) resetFault() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.failReset
}
