package talos

import (
	"context"
	"fmt"
	"path"
	"slices"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/resource"
	"github.com/cosi-project/runtime/pkg/state"
	"github.com/cosi-project/runtime/pkg/state/impl/inmem"
	"github.com/cosi-project/runtime/pkg/state/impl/namespaced"
	"github.com/cosi-project/runtime/pkg/state/protobuf/server"
	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/resources/block"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// servedTypes are the COSI resource types the stand-in holds; any other type is refused the way
// Talos refuses a type without a resource definition.
// servedTypes are the resource types the stand-in serves, each with its namespace.
var servedTypes = map[resource.Type]resource.Namespace{
	block.DiskType: block.NamespaceName, block.SystemDiskType: block.NamespaceName,
	configres.MachineConfigType: configres.NamespaceName,
}

// registerResources serves the COSI resource API (cosi.resource.State) over the node's gRPC server,
// holding a block.Disk per disk and the block.SystemDisk singleton when the node booted from one
// of them. As on a real node the API is read-only and limited to known types and namespaces; in
// maintenance mode a client without certificate may read it (block.Disk is not sensitive).
func (n *Node) registerResources(ctx context.Context, s *grpc.Server) error {
	if n.opts.NoResourceAPI {
		return nil
	}

	st := state.WrapCore(namespaced.NewState(inmem.Build))

	for i, dev := range n.opts.Disks {
		d := block.NewDisk(block.NamespaceName, path.Base(dev))
		spec := d.TypedSpec()
		spec.DevPath = dev
		spec.SetSize(480 << 30)
		spec.IOSize, spec.SectorSize = 512, 512
		spec.Model, spec.Serial, spec.Transport = "SIM-SSD", fmt.Sprintf("SIM%04d", i), "nvme"

		if err := st.Create(ctx, d); err != nil {
			return fmt.Errorf("hold disk %s as a COSI resource: %w", dev, err)
		}
	}

	if n.opts.SystemDisk != "" {
		if !slices.Contains(n.opts.Disks, n.opts.SystemDisk) {
			return fmt.Errorf("system disk %s is not among the node's disks %v", n.opts.SystemDisk, n.opts.Disks)
		}

		sd := block.NewSystemDisk(block.NamespaceName, block.SystemDiskID)
		sd.TypedSpec().DiskID, sd.TypedSpec().DevPath = path.Base(n.opts.SystemDisk), n.opts.SystemDisk

		if err := st.Create(ctx, sd); err != nil {
			return fmt.Errorf("hold the system disk as a COSI resource: %w", err)
		}
	}

	n.mu.Lock()
	n.cosi = st
	cfg := n.cfg
	n.mu.Unlock()

	// A node configured from static user data before the resource API existed holds its config too.
	if cfg != nil {
		n.holdMachineConfig(cfg)
	}

	filtered := state.WrapCore(state.Filter(st, n.resourceAccess))
	cosiv1alpha1.RegisterStateServer(s, server.NewState(filtered))

	return nil
}

// resourceAccess is the stand-in's reading of Talos's resource access policy: writes refused,
// unknown types and namespaces refused (PermissionDenied), and, once configured, the os:admin
// client certificate the rest of the configured API requires (block resources are readable by
// any role on a real node; the stand-in's clients only ever hold os:admin).
func (n *Node) resourceAccess(ctx context.Context, access state.Access) error {
	if !access.Verb.Readonly() {
		return status.Error(codes.PermissionDenied, "write access is not allowed")
	}

	ns, ok := servedTypes[access.ResourceType]
	if !ok {
		return status.Error(codes.PermissionDenied, fmt.Sprintf("resource type %q is not supported", access.ResourceType))
	}

	if access.ResourceNamespace != ns {
		return status.Error(codes.PermissionDenied, fmt.Sprintf("namespace %q is not supported", access.ResourceNamespace))
	}

	// The machine configuration is Sensitive: os:admin only (internal/app/resources/access.go
	// @v1.13.9); a maintenance node has none to show.
	if n.Configured() || access.ResourceType == configres.MachineConfigType {
		return requireAdmin(ctx)
	}

	return nil
}

// countCalls records every call by its full gRPC method name, for tests that check which API a
// client used.
// holdMachineConfig keeps the active MachineConfig resource (config namespace, id v1alpha1) in
// step with the applied config; nil removes it (reset to maintenance).
func (n *Node) holdMachineConfig(cfg config.Provider) {
	n.mu.Lock()
	st := n.cosi
	n.mu.Unlock()
	if st == nil {
		return
	}
	ctx := context.Background() // in-memory state: nothing here waits
	md := resource.NewMetadata(configres.NamespaceName, configres.MachineConfigType, configres.ActiveID, resource.VersionUndefined)
	_ = st.Destroy(ctx, md) //nolint:errcheck // absent is fine
	if cfg != nil {
		if err := st.Create(ctx, configres.NewMachineConfig(cfg)); err != nil {
			n.log.Error("hold the machine config as a COSI resource", "err", err)
		}
	}
}

func (n *Node) countCalls(method string) {
	n.mu.Lock()
	defer n.mu.Unlock()

	if n.calls == nil {
		n.calls = map[string]int{}
	}

	n.calls[method]++
}

func (n *Node) countUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	n.countCalls(info.FullMethod)

	return h(ctx, req)
}

func (n *Node) countStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	n.countCalls(info.FullMethod)

	return h(srv, ss)
}

// Calls returns how many times the node was called a gRPC method, by its full name
// ("/storage.StorageService/Disks", "/cosi.resource.State/List", ...).
func (n *Node) Calls(method string) int {
	n.mu.Lock()
	defer n.mu.Unlock()

	return n.calls[method]
}
