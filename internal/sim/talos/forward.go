package talos

import (
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siderolabs/crypto/x509"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// apid's router (talos internal/app/apid/pkg/director/director.go @v1.13.9): a call whose
// metadata names another node ("node") is forwarded to that node's apid, from this node's own
// address, with this node's os:impersonator client certificate and the caller's roles in the
// metadata (internal/app/apid/pkg/backend/apid.go GetConnection: "proxyfrom" set, "node",
// "nodes" and ":authority" removed, authz.SetMetadata). A call already forwarded ("proxyfrom"),
// one without "node", and any call on a node in maintenance mode (its API service runs with node
// routing disabled: internal/app/machined/pkg/controllers/runtime/api_service_config.go) is
// served locally.

// forwardTarget tells where a call goes: "" to serve it here, else the address of the node to
// forward it to; an error refuses it as apid's director does.
func (n *Node) forwardTarget(ctx context.Context, method string) (string, error) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok || len(md["proxyfrom"]) > 0 {
		return "", nil
	}

	nodes, okNodes := md["nodes"]
	node, okNode := md["node"]

	if okNode && len(node) != 1 {
		return "", status.Error(codes.InvalidArgument, "node metadata must be single-valued")
	}

	if !okNode && !okNodes {
		return "", nil
	}

	if !n.Configured() {
		return "", nil // routing disabled in maintenance mode: served here
	}

	if okNodes {
		// The stand-in does not model one-2-many proxying (nodes metadata) beyond its one-node
		// case: a node list with this node alone is served here.
		if len(nodes) == 1 && nodes[0] == n.opts.Addr {
			return "", nil
		}

		return "", status.Errorf(codes.Unimplemented, "stand-in: one-2-many proxying (nodes metadata) of %s is not modelled", method)
	}

	if node[0] == n.opts.Addr {
		return "", nil // to itself: the real apid dials its own address; the same node answers
	}

	return node[0], nil
}

// proxyCertificate is the node's apid client certificate (os:impersonator, from the OS CA): a
// control plane issues it itself. A worker's comes from trustd on a real node: not modelled, a
// worker does not forward here.
func (n *Node) proxyCertificate() (*tls.Certificate, *clusterState, error) {
	n.mu.Lock()
	cfg, cl := n.cfg, n.cluster
	n.mu.Unlock()

	if cfg == nil || cl == nil {
		return nil, nil, status.Error(codes.Unavailable, "not configured")
	}

	if !cfg.Machine().Type().IsControlPlane() {
		return nil, nil, status.Errorf(codes.Unimplemented, "stand-in: forwarding from a worker (%s) is not modelled", n.opts.Addr)
	}

	ca, err := cl.issuer(cfg.Machine().Security().Token())
	if err != nil {
		return nil, nil, status.Error(codes.Unavailable, err.Error())
	}

	kp, err := x509.NewKeyPair(ca, x509.CommonName(n.opts.Addr), x509.Organization(string(role.Impersonator)),
		x509.NotAfter(time.Now().Add(24*time.Hour)), x509.ExtKeyUsage([]stdx509.ExtKeyUsage{stdx509.ExtKeyUsageClientAuth}))
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "issue the apid client certificate of %s: %v", n.opts.Addr, err)
	}

	cert, err := tls.X509KeyPair(kp.CrtPEM, kp.KeyPEM)
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "apid client certificate of %s: %v", n.opts.Addr, err)
	}

	return &cert, cl, nil
}

// forwardConn opens the connection to target's apid from this node's address and the metadata
// the forwarded call carries.
func (n *Node) forwardConn(ctx context.Context, target string) (*grpc.ClientConn, context.Context, error) {
	cert, cl, err := n.proxyCertificate()
	if err != nil {
		return nil, nil, err
	}

	roles, err := callerRoles(ctx)
	if err != nil {
		return nil, nil, err
	}

	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	md.Set(constants.APIAuthzRoleMetadataKey, roles...)

	if authority := md[":authority"]; len(authority) > 0 {
		md.Set("proxyfrom", authority...)
	} else {
		md.Set("proxyfrom", "unknown")
	}

	delete(md, ":authority")
	delete(md, "node")
	delete(md, "nodes")

	addr := net.JoinHostPort(target, strconv.Itoa(n.opts.APIPort))

	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return n.dialer().DialContext(ctx, "tcp", a) }),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
			MinVersion: tls.VersionTLS12, RootCAs: cl.osPool, ServerName: target, Certificates: []tls.Certificate{*cert},
		})))
	if err != nil {
		return nil, nil, status.Errorf(codes.Internal, "apid %s → %s: %v", n.opts.Addr, addr, err)
	}

	return conn, metadata.NewOutgoingContext(ctx, md), nil
}

// methodTypes are the request and response messages of a gRPC method ("/pkg.Service/Method").
func methodTypes(fullMethod string) (protoreflect.MessageType, protoreflect.MessageType, error) {
	name := protoreflect.FullName(strings.ReplaceAll(strings.TrimPrefix(fullMethod, "/"), "/", "."))

	d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
	if err != nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "stand-in: cannot forward %s: %v", fullMethod, err)
	}

	md, ok := d.(protoreflect.MethodDescriptor)
	if !ok {
		return nil, nil, status.Errorf(codes.Unimplemented, "stand-in: %s is not a method", fullMethod)
	}

	in, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
	if err != nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "stand-in: cannot forward %s: %v", fullMethod, err)
	}

	out, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, nil, status.Errorf(codes.Unimplemented, "stand-in: cannot forward %s: %v", fullMethod, err)
	}

	return in, out, nil
}

// forwardUnary forwards a unary call that names another node, and serves the others here.
func (n *Node) forwardUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	target, err := n.forwardTarget(ctx, info.FullMethod)
	if err != nil || target == "" {
		if err != nil {
			return nil, err
		}

		return h(ctx, req)
	}

	_, outType, err := methodTypes(info.FullMethod)
	if err != nil {
		return nil, err
	}

	conn, octx, err := n.forwardConn(ctx, target)
	if err != nil {
		return nil, err
	}
	defer conn.Close() //nolint:errcheck

	reply := outType.New().Interface()

	var header, trailer metadata.MD
	err = conn.Invoke(octx, info.FullMethod, req, reply, grpc.Header(&header), grpc.Trailer(&trailer))

	_ = grpc.SetHeader(ctx, header)   //nolint:errcheck
	_ = grpc.SetTrailer(ctx, trailer) //nolint:errcheck

	if err != nil {
		return nil, err
	}

	return reply, nil
}

// forwardStream forwards a streaming call that names another node, and serves the others here.
func (n *Node) forwardStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx := ss.Context()

	target, err := n.forwardTarget(ctx, info.FullMethod)
	if err != nil || target == "" {
		if err != nil {
			return err
		}

		return h(srv, ss)
	}

	inType, outType, err := methodTypes(info.FullMethod)
	if err != nil {
		return err
	}

	conn, octx, err := n.forwardConn(ctx, target)
	if err != nil {
		return err
	}
	defer conn.Close() //nolint:errcheck

	octx, cancel := context.WithCancel(octx)
	defer cancel()

	cs, err := conn.NewStream(octx, &grpc.StreamDesc{ServerStreams: info.IsServerStream, ClientStreams: info.IsClientStream}, info.FullMethod)
	if err != nil {
		return err
	}

	// Client → target, until the client closes its side.
	up := make(chan error, 1)

	go func() {
		for {
			m := inType.New().Interface()
			if err := ss.RecvMsg(m); err != nil {
				if errors.Is(err, io.EOF) {
					up <- cs.CloseSend()
				} else {
					up <- err
				}

				return
			}

			if err := cs.SendMsg(m); err != nil {
				up <- err

				return
			}
		}
	}()

	// Target → client, until the target ends the call.
	first := true

	for {
		m := outType.New().Interface()

		err := cs.RecvMsg(m)
		if first {
			if hd, herr := cs.Header(); herr == nil {
				_ = ss.SendHeader(hd) //nolint:errcheck
			}

			first = false
		}

		if errors.Is(err, io.EOF) {
			ss.SetTrailer(cs.Trailer())

			return nil
		}

		if err != nil {
			ss.SetTrailer(cs.Trailer())

			return err
		}

		if err := ss.SendMsg(m); err != nil {
			return err
		}

		select {
		case uerr := <-up:
			if uerr != nil {
				return uerr
			}
		default:
		}
	}
}

// callerRoles are the roles of the call's client, as apid's authz injector reads them: from the
// client certificate's O=, or, for a client with os:impersonator (another apid forwarding), from
// the metadata (pkg/grpc/middleware/authz/injector.go, Enabled mode, @v1.13.9).
func callerRoles(ctx context.Context) ([]string, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil, status.Error(codes.Unauthenticated, "no peer")
	}

	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return nil, status.Error(codes.Unauthenticated, "client certificate required")
	}

	orgs := info.State.PeerCertificates[0].Subject.Organization
	if slices.Contains(orgs, string(role.Impersonator)) {
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get(constants.APIAuthzRoleMetadataKey)) > 0 {
			return md.Get(constants.APIAuthzRoleMetadataKey), nil
		}
	}

	return orgs, nil
}
