package talos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// SnapshotInfo is what an etcd snapshot stream was: its size and the SHA-256 of the whole
// stream (database and appended hash), the figure the bucket's copy is checked against.
type SnapshotInfo struct {
	Size   int64
	SHA256 [sha256.Size]byte
}

func (s SnapshotInfo) String() string {
	return fmt.Sprintf("%d bytes, sha256 %s", s.Size, hex.EncodeToString(s.SHA256[:]))
}

// ErrSnapshotInvalid is a snapshot etcd would refuse to restore: its appended SHA-256 is
// missing or does not match the database (etcdutl snapshot/v3_snapshot.go, copyAndVerifyDB).
var ErrSnapshotInvalid = errors.New("etcd snapshot does not verify")

// snapshotCheck hashes a stream as it passes and checks it the way etcd's restore does: the
// size modulo 512 is 32 (the SHA-256 is appended) and those last 32 bytes are the SHA-256 of
// everything before them. It holds the last 32 bytes back from the database hash as it goes.
type snapshotCheck struct {
	whole, db hash.Hash
	tail      []byte
	size      int64
}

func newSnapshotCheck() *snapshotCheck {
	return &snapshotCheck{whole: sha256.New(), db: sha256.New()}
}

func (c *snapshotCheck) Write(p []byte) (int, error) {
	c.whole.Write(p)
	c.size += int64(len(p))
	c.tail = append(c.tail, p...)

	if over := len(c.tail) - sha256.Size; over > 0 {
		c.db.Write(c.tail[:over])
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}

	return len(p), nil
}

func (c *snapshotCheck) result() (SnapshotInfo, error) {
	var info SnapshotInfo

	info.Size = c.size
	copy(info.SHA256[:], c.whole.Sum(nil))

	if c.size%512 != sha256.Size {
		return info, fmt.Errorf("%w: %d bytes, no SHA-256 appended (size mod 512 is %d, want 32)", ErrSnapshotInvalid, c.size, c.size%512)
	}

	if !bytes.Equal(c.db.Sum(nil), c.tail) {
		return info, fmt.Errorf("%w: the appended SHA-256 does not match the database", ErrSnapshotInvalid)
	}

	return info, nil
}

// SnapshotEtcd streams the etcd snapshot of the control plane at addr (Talos
// MachineService.EtcdSnapshot) to put, checking it on the way as etcd's restore will: put sees every
// byte once and nothing is kept here. A node not answering yet is retried (put is then called
// again from the start, so it must replace what an earlier call stored); a snapshot that does
// not verify fails with ErrSnapshotInvalid after put returned, and the caller must not trust
// what put stored.
func SnapshotEtcd(ctx context.Context, addr string, talosconfig []byte, put func(context.Context, io.Reader) error) (SnapshotInfo, error) {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return SnapshotInfo{}, fmt.Errorf("talosconfig for %s does not parse: %w", addr, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	var (
		info   SnapshotInfo
		putErr error
	)

	err := retry(ctx, "etcd snapshot from "+addr, transient, func(context.Context) error {
		// The stream may outlast one attempt's deadline: it runs under ctx.
		return withTrusted(ctx, addr, talosconfig, func(c *nodeAPI) error {
			rd, err := c.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{})
			if err != nil {
				return err
			}
			defer rd.Close() //nolint:errcheck

			check := newSnapshotCheck()
			src := &errTrackingReader{r: io.TeeReader(rd, check)}

			if putErr = put(ctx, src); putErr != nil {
				if src.err != nil {
					err := src.err
					putErr = nil

					return err // the node's stream failed: retried if transient
				}

				return nil
			}

			// put may stop at the end of what it wanted; the check needs everything.
			if _, err := io.Copy(io.Discard, src); err != nil {
				return err
			}

			info, err = check.result()

			return err
		})
	})

	switch {
	case putErr != nil:
		return SnapshotInfo{}, fmt.Errorf("store etcd snapshot of %s: %w", addr, putErr)
	case errors.Is(err, ErrSnapshotInvalid):
		return info, fmt.Errorf("etcd snapshot of %s: %w; take another before deleting anything", addr, err)
	case err != nil:
		return SnapshotInfo{}, fmt.Errorf("etcd snapshot of %s: %w", addr, err)
	}

	logger(ctx).Info("etcd snapshot taken", "node", addr, "snapshot", info.String())

	return info, nil
}

// errTrackingReader remembers the error of the stream under it, so an error from put can be
// told apart from the node's.
type errTrackingReader struct {
	r   io.Reader
	err error
}

func (e *errTrackingReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		e.err = err
	}

	return n, err
}

// EtcdState is the etcd service of a control plane as ServiceList reports it.
type EtcdState struct {
	State   string // Running, Failed, Waiting, …
	Message string
}

// EtcdService reads the etcd service's state on the control plane at addr (one attempt).
func EtcdService(ctx context.Context, addr string, talosconfig []byte) (EtcdState, error) {
	var st EtcdState

	err := withTrusted(ctx, addr, talosconfig, func(c *nodeAPI) error {
		resp, err := c.ServiceList(ctx)
		if err != nil {
			return err
		}

		for _, m := range resp.GetMessages() {
			for _, s := range m.GetServices() {
				if s.GetId() == "etcd" {
					st = EtcdState{State: s.GetState(), Message: s.GetHealth().GetLastMessage()}
					if evs := s.GetEvents().GetEvents(); st.Message == "" && len(evs) > 0 {
						st.Message = evs[len(evs)-1].GetMsg()
					}

					return nil
				}
			}
		}

		return errors.New("the node lists no etcd service (not a control plane?)")
	})
	if err != nil {
		return EtcdState{}, fmt.Errorf("etcd service on %s: %w", addr, err)
	}

	return st, nil
}

// ErrRecoverFailed is an etcd that failed to restore from the uploaded snapshot: the node's
// etcd data directory is no longer empty, so it must be reset (or replaced) before another try.
var ErrRecoverFailed = errors.New("etcd recovery failed")

// NodeEtcd is one control plane's etcd service, as read before a recover.
type NodeEtcd struct {
	Addr string
	EtcdState
}

// RecoverStep is what a recover does next, from every control plane's etcd service.
type RecoverStep int

const (
	// RecoverWait: the node to recover on cannot take the upload yet (its etcd service is not
	// Preparing: /var/lib may not be mounted, EtcdRecover would answer FailedPrecondition).
	RecoverWait RecoverStep = iota
	// RecoverUpload: etcd runs nowhere and the node's service is Preparing, or Failed (a
	// control plane that found no cluster to join fails after 30 minutes with an empty data
	// directory, and Bootstrap starts etcd anew from that state).
	RecoverUpload
	// RecoverDone: etcd already runs on a control plane. An earlier run recovered it (a node
	// replaced since joins that cluster by itself); a recover now would start a second one.
	RecoverDone
)

// RecoverDecision is DecideRecover's answer and its reason, for the log and the error.
type RecoverDecision struct {
	Step RecoverStep
	Why  string
}

// DecideRecover applies the disaster-recovery guide's checks (Talos v1.13 "Recover from the
// backup": every etcd instance Preparing, none running; the guide is in siderolabs/docs,
// public/talos/v1.13/build-and-extend-talos/cluster-operations-and-maintenance/
// disaster-recovery.mdx: the talos repository holds no website/ since v1.12) to the etcd service
// of every control plane, the first being the node to recover on. The source's rules, talos
// v1.13.9:
//   - services/etcd.go: a control plane without etcd data looks for a cluster to join in its
//     pre-step (state Preparing) for constants.EtcdJoinTimeout (30 min), then the service is
//     Failed with its data directory still empty; BootstrapEtcd stops the service whatever its
//     state and starts it in bootstrap mode, so Failed is no reason to refuse;
//   - v1alpha1_server.go EtcdRecover: FailedPrecondition while /var/lib does not exist; the
//     service is Waiting until its volumes (/var/lib, the etcd data) are mounted, Preparing after;
//   - BootstrapEtcd on one node never looks at the others: a node that still has no data
//     while its peers run etcd starts a cluster of its own beside theirs.
func DecideRecover(nodes []NodeEtcd) RecoverDecision {
	if len(nodes) == 0 {
		return RecoverDecision{Step: RecoverWait, Why: "no control plane to recover on"}
	}

	for _, n := range nodes {
		if n.State == "Running" {
			return RecoverDecision{Step: RecoverDone, Why: fmt.Sprintf("etcd already runs on %s: the cluster was recovered by an earlier run; recovering again would start a second etcd cluster", n.Addr)}
		}
	}

	switch first := nodes[0]; first.State {
	case "Preparing", "Failed":
		return RecoverDecision{Step: RecoverUpload, Why: fmt.Sprintf("etcd runs on no control plane and %s's is %s (%s)", first.Addr, first.State, first.Message)}
	default:
		return RecoverDecision{Step: RecoverWait, Why: fmt.Sprintf("etcd on %s is %s (%s), not Preparing yet", first.Addr, first.State, first.Message)}
	}
}

// etcdStates reads the etcd service of every control plane (one attempt each).
func etcdStates(ctx context.Context, addrs []string, talosconfig []byte) ([]NodeEtcd, error) {
	out := make([]NodeEtcd, 0, len(addrs))

	for _, a := range addrs {
		st, err := EtcdService(ctx, a, talosconfig)
		if err != nil {
			return nil, err
		}

		out = append(out, NodeEtcd{Addr: a, EtcdState: st})
	}

	return out, nil
}

// uploadRetryable: a node not listening yet, or one whose /var/lib is not mounted yet.
func uploadRetryable(err error) bool {
	return transient(err) || status.Code(err) == codes.FailedPrecondition
}

// RecoverEtcd restores the cluster's etcd from a snapshot on the first of the control planes at
// addrs. It reads every control plane's etcd service first (DecideRecover): it waits until the
// node's service is Preparing (or Failed), and leaves the cluster alone when etcd runs on any
// control plane (a rerun). It then uploads what open yields (MachineService.EtcdRecover,
// retried while the node answers FailedPrecondition), checking it on the way as etcd's restore
// will and against want, and only then asks for Bootstrap with recover_etcd; it waits until the
// etcd service runs. A snapshot that does not verify is never bootstrapped from.
func RecoverEtcd(ctx context.Context, addrs []string, talosconfig []byte, want SnapshotInfo, open func(context.Context) (io.ReadCloser, error)) error {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return fmt.Errorf("talosconfig for %v does not parse: %w", addrs, err)
	}

	if len(addrs) == 0 {
		return errors.New("recover etcd: no control plane given")
	}

	addr := addrs[0]

	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	var d RecoverDecision

	err := retry(ctx, "etcd on every control plane ready for the recover", always, func(actx context.Context) error {
		nodes, err := etcdStates(actx, addrs, talosconfig)
		if err != nil {
			return err
		}

		if d = DecideRecover(nodes); d.Step == RecoverWait {
			return errors.New(d.Why)
		}

		return nil
	})
	if err != nil {
		return fmt.Errorf("recover etcd on %s: %w", addr, err)
	}

	if d.Step == RecoverDone {
		logger(ctx).Info("not recovering etcd again", "node", addr, "why", d.Why)

		return nil
	}

	logger(ctx).Info("recovering etcd", "node", addr, "why", d.Why)

	if err := uploadSnapshot(ctx, addr, talosconfig, want, open); err != nil {
		return err
	}

	already := false

	err = retry(ctx, "bootstrap etcd from the snapshot on "+addr, bootstrapRetryable, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *nodeAPI) error {
			return c.Bootstrap(actx, &machineapi.BootstrapRequest{RecoverEtcd: true})
		})
	})

	switch {
	case status.Code(err) == codes.AlreadyExists:
		already = true // a rerun after the bootstrap, or a data directory a failed restore left
	case err != nil:
		return fmt.Errorf("bootstrap etcd from the snapshot on %s: %w", addr, err)
	}

	if err := waitEtcdRunning(ctx, addr, talosconfig, already); err != nil {
		return err
	}

	logger(ctx).Info("etcd recovered from the snapshot", "node", addr, "snapshot", want.String())

	return nil
}

// uploadSnapshot sends the stored snapshot for the next Bootstrap{recover_etcd}, checking it on
// the way; a FailedPrecondition (/var/lib not mounted yet) is waited out.
func uploadSnapshot(ctx context.Context, addr string, talosconfig []byte, want SnapshotInfo, open func(context.Context) (io.ReadCloser, error)) error {
	err := retry(ctx, "upload etcd snapshot to "+addr, uploadRetryable, func(context.Context) error {
		src, err := open(ctx)
		if err != nil {
			return fmt.Errorf("open the stored snapshot: %w", err)
		}
		defer src.Close() //nolint:errcheck

		check := newSnapshotCheck()

		if err := withTrusted(ctx, addr, talosconfig, func(c *nodeAPI) error {
			_, err := c.EtcdRecover(ctx, io.TeeReader(src, check))

			return err
		}); err != nil {
			return err
		}

		got, err := check.result()
		if err != nil {
			return err
		}

		if got != want {
			return fmt.Errorf("%w: the stored snapshot holds %s, the one taken was %s", ErrSnapshotInvalid, got, want)
		}

		return nil
	})
	if err != nil {
		return fmt.Errorf("upload etcd snapshot to %s: %w (nothing was bootstrapped from it)", addr, err)
	}

	return nil
}

// waitEtcdRunning waits for the restore's outcome, the etcd service's state: the restore runs
// in the service after Bootstrap answered. After an AlreadyExists a Failed service is one an
// earlier restore left with data in its directory.
func waitEtcdRunning(ctx context.Context, addr string, talosconfig []byte, already bool) error {
	err := retry(ctx, "etcd to run on "+addr, func(err error) bool { return !errors.Is(err, ErrRecoverFailed) }, func(actx context.Context) error {
		st, err := EtcdService(actx, addr, talosconfig)

		switch {
		case err != nil:
			return err
		case st.State == "Running":
			return nil
		case st.State == "Failed" && already:
			return fmt.Errorf("%w earlier (%s), and its data directory is not empty (Bootstrap: AlreadyExists)", ErrRecoverFailed, st.Message)
		case st.State == "Failed":
			return fmt.Errorf("%w: %s", ErrRecoverFailed, st.Message)
		default:
			return fmt.Errorf("etcd is %s: %s", st.State, st.Message)
		}
	})
	if err != nil {
		if errors.Is(err, ErrRecoverFailed) {
			return fmt.Errorf("recover etcd on %s: %w; reset the node's EPHEMERAL partition or replace the node, then resume again", addr, err)
		}

		return fmt.Errorf("recover etcd on %s: %w", addr, err)
	}

	return nil
}
