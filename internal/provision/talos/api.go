package talos

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	cosiv1alpha1 "github.com/cosi-project/runtime/api/v1alpha1"
	"github.com/cosi-project/runtime/pkg/state"
	cosiclient "github.com/cosi-project/runtime/pkg/state/protobuf/client"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	storageapi "github.com/siderolabs/talos/pkg/machinery/api/storage"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"github.com/siderolabs/talos/pkg/machinery/client/resolver"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// nodeAPI is one gRPC connection to a node's Talos API (apid), with the services the bot calls:
// Talos machinery's generated MachineService and StorageService clients and COSI's state client,
// wired as machinery's client.New wires them (pkg/machinery/client/client.go and connection.go
// @v1.14.1: one channel, the 32 MiB receive limit of constants.GRPCMaxMessageSize, the same
// HTTP/2 window sizes, TLS credentials from the talosconfig's context). The bot does not link
// machinery's client package itself: the Omni and SideroV1 request signing it always links
// (gopenpgp, go-crypto, circl; about 1.3 MB of the release binary, issue 22) serves no call the
// bot makes, since a talosconfig the bot generates authenticates by certificate only.
// TestNodeAPIAnswersAsMachineryClient holds each method's answer equal to machinery's client's
// on the same node.
type nodeAPI struct {
	conn    *grpc.ClientConn
	machine machineapi.MachineServiceClient
	storage storageapi.StorageServiceClient
	// COSI reads the node's resources (block.Disk, config.MachineConfig), as Client.COSI does.
	COSI state.State
}

// dialNode opens a channel to the apid at endpoint (host:port, or a host on apid's port 50000)
// with the TLS config given; cluster is the talosconfig context's cluster ("" for none).
// grpc.NewClient connects lazily: the first call dials.
func dialNode(endpoint string, tlsConfig *tls.Config, cluster string, opts ...grpc.DialOption) (*nodeAPI, error) {
	endpoint = resolver.EnsureEndpointsHavePorts([]string{endpoint}, constants.ApidPort)[0]
	md := clientMetadata(cluster)
	unary := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoker(metadata.AppendToOutgoingContext(ctx, md...), method, req, reply, cc, opts...)
	}
	stream := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return streamer(metadata.AppendToOutgoingContext(ctx, md...), desc, cc, method, opts...)
	}

	opts = append([]grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(constants.GRPCMaxMessageSize)),
		grpc.WithTransportCredentials(credentials.NewTLS(tlsConfig)),
		grpc.WithInitialWindowSize(65535 * 32),
		grpc.WithInitialConnWindowSize(65535 * 16),
		grpc.WithChainUnaryInterceptor(unary),
		grpc.WithChainStreamInterceptor(stream),
	}, opts...)

	conn, err := grpc.NewClient("dns:///"+endpoint, opts...)
	if err != nil {
		return nil, err
	}

	return &nodeAPI{
		conn:    conn,
		machine: machineapi.NewMachineServiceClient(conn),
		storage: storageapi.NewStorageServiceClient(conn),
		COSI:    state.WrapCore(cosiclient.NewAdapter(cosiv1alpha1.NewStateClient(conn))),
	}, nil
}

// clientMetadata is what machinery's client adds to every call (grpc_connection_wrapper.go
// @v1.14.1, appendMetadata): "runtime: Talos", and the talosconfig context's cluster as
// "context" when it names one (Omni routes by it).
func clientMetadata(cluster string) []string {
	md := []string{"runtime", "Talos"}
	if cluster != "" {
		md = append(md, "context", cluster)
	}

	return md
}

// talosconfigTLS is the mutual-TLS config of the talosconfig's current context: its CA as the only
// root, its certificate and key as the client's (machinery's buildTLSConfig and
// CertificateFromConfigContext read the same three fields).
// It also returns the context's cluster, for clientMetadata.
func talosconfigTLS(cfg *clientconfig.Config) (*tls.Config, string, error) {
	cc, ok := cfg.Contexts[cfg.Context]
	if !ok || cc == nil {
		return nil, "", fmt.Errorf("talosconfig has no context %q", cfg.Context)
	}

	tlsConfig := &tls.Config{}

	if cc.CA != "" {
		ca, err := base64.StdEncoding.DecodeString(cc.CA)
		if err != nil {
			return nil, "", fmt.Errorf("talosconfig context %q: CA is not base64: %w", cfg.Context, err)
		}

		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(ca) {
			return nil, "", fmt.Errorf("talosconfig context %q: CA holds no PEM certificate", cfg.Context)
		}
	}

	if cc.Crt != "" || cc.Key != "" {
		crt, err := base64.StdEncoding.DecodeString(cc.Crt)
		if err != nil {
			return nil, "", fmt.Errorf("talosconfig context %q: crt is not base64: %w", cfg.Context, err)
		}

		key, err := base64.StdEncoding.DecodeString(cc.Key)
		if err != nil {
			return nil, "", fmt.Errorf("talosconfig context %q: key is not base64: %w", cfg.Context, err)
		}

		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, "", fmt.Errorf("talosconfig context %q: client key pair: %w", cfg.Context, err)
		}

		tlsConfig.Certificates = []tls.Certificate{pair}
	}

	return tlsConfig, cc.Cluster, nil
}

func (c *nodeAPI) Close() error { return c.conn.Close() }

// withNode makes apid forward the calls under ctx to the node at addr (the "node" metadata of
// machinery's client.WithNode, which also drops a "nodes" set earlier).
func withNode(ctx context.Context, addr string) context.Context {
	md, _ := metadata.FromOutgoingContext(ctx)
	md = md.Copy()
	md.Delete("nodes")
	md.Set("node", addr)

	return metadata.NewOutgoingContext(ctx, md)
}

// replyMessage is one node's part of an apid reply: apid fills its metadata with the node's
// hostname and, when that node failed, its error (api/common/common.proto, Metadata).
type replyMessage interface{ GetMetadata() *common.Metadata }

// nodeErrors is the error of a reply whose parts carry a node's error, nil when none does
// (machinery's client.FilterMessages: one error per failed node, named by its hostname, with the
// node's gRPC status when it sent one).
func nodeErrors[M replyMessage](msgs []M) error {
	var errs []error

	for _, m := range msgs {
		md := m.GetMetadata()
		if md == nil || md.GetError() == "" {
			continue
		}

		err := errors.New(md.GetError())
		if md.GetStatus() != nil {
			err = status.FromProto(md.GetStatus()).Err()
		}

		errs = append(errs, fmt.Errorf("%s: %w", md.GetHostname(), err))
	}

	return errors.Join(errs...)
}

func (c *nodeAPI) Version(ctx context.Context) (*machineapi.VersionResponse, error) {
	resp, err := c.machine.Version(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	return resp, nodeErrors(resp.GetMessages())
}

func (c *nodeAPI) ApplyConfiguration(ctx context.Context, req *machineapi.ApplyConfigurationRequest) (*machineapi.ApplyConfigurationResponse, error) {
	resp, err := c.machine.ApplyConfiguration(ctx, req)
	if err != nil {
		return nil, err
	}

	return resp, nodeErrors(resp.GetMessages())
}

func (c *nodeAPI) Bootstrap(ctx context.Context, req *machineapi.BootstrapRequest) error {
	resp, err := c.machine.Bootstrap(ctx, req)
	if err != nil {
		return err
	}

	return nodeErrors(resp.GetMessages())
}

func (c *nodeAPI) ServiceList(ctx context.Context) (*machineapi.ServiceListResponse, error) {
	resp, err := c.machine.ServiceList(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	return resp, nodeErrors(resp.GetMessages())
}

func (c *nodeAPI) ResetGeneric(ctx context.Context, req *machineapi.ResetRequest) error {
	resp, err := c.machine.Reset(ctx, req)
	if err != nil {
		return err
	}

	return nodeErrors(resp.GetMessages())
}

// Disks is StorageService.Disks, which Talos keeps for nodes that serve no block.Disk resources.
func (c *nodeAPI) Disks(ctx context.Context) (*storageapi.DisksResponse, error) {
	resp, err := c.storage.Disks(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	return resp, nodeErrors(resp.GetMessages())
}

// dataStream is a server stream of common.Data chunks (Kubeconfig, EtcdSnapshot).
type dataStream interface {
	Recv() (*common.Data, error)
	grpc.ClientStream
}

// readStream is the bytes of a data stream as they arrive; a chunk whose metadata carries an
// error ends the reader with it (machinery's client.ReadStream: an error of status Canceled or
// DeadlineExceeded ends it cleanly, as there).
func readStream(stream dataStream) io.ReadCloser {
	pr, pw := io.Pipe()

	go func() {
		for {
			data, err := stream.Recv()
			switch {
			case errors.Is(err, io.EOF):
				pw.Close() //nolint:errcheck

				return
			case err != nil:
				pw.CloseWithError(err)

				return
			}

			if len(data.GetBytes()) > 0 {
				if _, err := pw.Write(data.GetBytes()); err != nil {
					return // the reader was closed
				}
			}

			if md := data.GetMetadata(); md.GetError() != "" {
				pw.CloseWithError(streamError(md))

				return
			}
		}
	}()

	return pr
}

func streamError(md *common.Metadata) error {
	if md.GetStatus() == nil {
		return errors.New(md.GetError())
	}

	switch codes.Code(md.GetStatus().GetCode()) {
	case codes.Canceled, codes.DeadlineExceeded:
		return nil
	}

	return status.FromProto(md.GetStatus()).Err()
}

// EtcdSnapshot streams the node's etcd snapshot (MachineService.EtcdSnapshot).
func (c *nodeAPI) EtcdSnapshot(ctx context.Context, req *machineapi.EtcdSnapshotRequest) (io.ReadCloser, error) {
	stream, err := c.machine.EtcdSnapshot(ctx, req)
	if err != nil {
		return nil, err
	}

	return readStream(stream), stream.CloseSend()
}

// etcdRecoverChunk is the size of the chunks EtcdRecover sends (machinery's client sends 4 KiB).
const etcdRecoverChunk = 4096

// EtcdRecover uploads a snapshot for the next Bootstrap with recover_etcd
// (MachineService.EtcdRecover, a client stream of common.Data chunks).
func (c *nodeAPI) EtcdRecover(ctx context.Context, snapshot io.Reader) (*machineapi.EtcdRecoverResponse, error) {
	up, err := c.machine.EtcdRecover(ctx)
	if err != nil {
		return nil, err
	}

	buf := make([]byte, etcdRecoverChunk)

	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}

		n, rerr := snapshot.Read(buf)
		if n > 0 {
			// An io.EOF from Send means the server ended the stream: its status comes with
			// CloseAndRecv.
			if err := up.Send(&common.Data{Bytes: buf[:n]}); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			} else if err != nil {
				break
			}
		}

		if errors.Is(rerr, io.EOF) {
			break
		}

		if rerr != nil {
			return nil, fmt.Errorf("read the snapshot: %w", rerr)
		}
	}

	resp, err := up.CloseAndRecv()
	if err != nil {
		return nil, err
	}

	return resp, nodeErrors(resp.GetMessages())
}

// Kubeconfig is the admin kubeconfig (MachineService.Kubeconfig streams a gzipped tar archive
// holding the one file).
func (c *nodeAPI) Kubeconfig(ctx context.Context) ([]byte, error) {
	stream, err := c.machine.Kubeconfig(ctx, &emptypb.Empty{})
	if err != nil {
		return nil, err
	}

	r := readStream(stream)
	defer r.Close() //nolint:errcheck

	if err := stream.CloseSend(); err != nil {
		return nil, err
	}

	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig archive: %w", err)
	}

	var out bytes.Buffer

	tr := tar.NewReader(gz)

	for {
		_, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}

		if err != nil {
			return nil, fmt.Errorf("kubeconfig archive: %w", err)
		}

		if _, err := io.Copy(&out, tr); err != nil {
			return nil, fmt.Errorf("kubeconfig archive: %w", err)
		}
	}

	if err := gz.Close(); err != nil {
		return nil, fmt.Errorf("kubeconfig archive: %w", err)
	}

	return out.Bytes(), nil
}
