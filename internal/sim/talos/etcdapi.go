package talos

import (
	"context"
	"errors"
	"io"
	"slices"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// snapshotChunk is the size of the Data messages EtcdSnapshot streams (etcd's maintenance
// Snapshot sends 32 KiB blobs; Talos's chunker re-cuts them, the client concatenates).
const snapshotChunk = 32 << 10

// controlPlaneOnly answers as machinehelper.CheckControlplane does on a worker.
func controlPlaneOnly(isCP bool, api string) error {
	if !isCP {
		return status.Errorf(codes.Unimplemented, "%s is only available on control plane nodes", api)
	}

	return nil
}

// adminOnControlPlane is admin's cluster on a control plane only (a worker answers as Talos
// does).
func (s *machineServer) adminOnControlPlane(ctx context.Context, api string) (*clusterState, error) {
	cfg, cl, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}

	if err := controlPlaneOnly(cfg.Machine().Type().IsControlPlane(), api); err != nil {
		return nil, err
	}

	return cl, nil
}

// EtcdSnapshot streams the cluster's etcd snapshot: the database, then its SHA-256 (etcd's
// maintenance Snapshot), cut into Data messages.
func (s *machineServer) EtcdSnapshot(_ *machineapi.EtcdSnapshotRequest, stream grpc.ServerStreamingServer[common.Data]) error {
	cl, err := s.adminOnControlPlane(stream.Context(), "etcd snapshot")
	if err != nil {
		return err
	}

	data, err := s.n.localStore(cl)
	if err != nil {
		// Talos wraps the etcd client's error without a gRPC code of its own.
		return status.Errorf(codes.Unknown, "failed reading etcd snapshot: %v", err)
	}

	snap := data.snapshot()

	// etcd writes the database out before the first byte goes (Latency.EtcdSnapshot).
	select {
	case <-time.After(s.n.opts.Latency.EtcdSnapshot):
	case <-stream.Context().Done():
		return stream.Context().Err()
	}

	for chunk := range slices.Chunk(snap, snapshotChunk) {
		if err := stream.Send(&common.Data{Bytes: chunk}); err != nil {
			return err
		}
	}

	s.n.log.Info("etcd snapshot sent", "bytes", len(snap))

	return nil
}

// EtcdRecover stores the uploaded snapshot where the etcd service's recovery reads it
// (/var/lib/etcd.snapshot), replacing any earlier upload; an upload cut short leaves none.
func (s *machineServer) EtcdRecover(stream grpc.ClientStreamingServer[common.Data, machineapi.EtcdRecoverResponse]) error {
	if _, _, err := s.admin(stream.Context()); err != nil {
		return err
	}

	// The source stats /var/lib before anything else: EPHEMERAL not mounted yet.
	if !s.n.varLibMounted() {
		return status.Error(codes.FailedPrecondition, "etcd service is not ready for recovery yet")
	}

	if _, err := s.adminOnControlPlane(stream.Context(), "etcd recover"); err != nil {
		return err
	}

	// O_TRUNC: the earlier upload is gone as soon as a new one starts.
	s.n.setRecoverySnapshot(nil)

	var buf []byte

	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return err
		}

		buf = append(buf, msg.GetBytes()...)
	}

	if buf == nil {
		buf = []byte{}
	}

	s.n.setRecoverySnapshot(buf)
	s.n.log.Info("etcd recovery snapshot uploaded", "bytes", len(buf))

	return stream.SendAndClose(&machineapi.EtcdRecoverResponse{Messages: []*machineapi.EtcdRecover{{}}})
}

func (n *Node) setRecoverySnapshot(b []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()

	n.recoverySnap = b
}

// takeRecoverySnapshot returns the uploaded snapshot and forgets it: Talos removes the file
// once etcd was restored from it (and a failed restore leaves a data directory that refuses a
// second Bootstrap anyway).
func (n *Node) takeRecoverySnapshot() []byte {
	n.mu.Lock()
	defer n.mu.Unlock()

	b := n.recoverySnap
	n.recoverySnap = nil

	return b
}

// ServiceList lists the etcd service of a control plane as etcdOf models it (etcdsvc.go).
func (s *machineServer) ServiceList(ctx context.Context, _ *emptypb.Empty) (*machineapi.ServiceListResponse, error) {
	cfg, cl, err := s.admin(ctx)
	if err != nil {
		return nil, err
	}

	var services []*machineapi.ServiceInfo

	if cfg.Machine().Type().IsControlPlane() {
		v := cl.etcdOf(s.n, s.n.etcdTimeline())
		services = append(services, &machineapi.ServiceInfo{
			Id:     "etcd",
			State:  v.state,
			Events: &machineapi.ServiceEvents{Events: []*machineapi.ServiceEvent{{Msg: v.msg, State: v.state, Ts: timestamppb.Now()}}},
			Health: &machineapi.ServiceHealth{Healthy: v.data != nil, LastMessage: v.msg},
		})
	}

	return &machineapi.ServiceListResponse{Messages: []*machineapi.ServiceList{{Services: services}}}, nil
}
