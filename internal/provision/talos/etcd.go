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

// RecoverEtcd restores the cluster's etcd on the control plane at addr from a snapshot: it
// uploads what open yields (MachineService.EtcdRecover), checking it on the way as etcd's
// restore will and against want, and only then asks for Bootstrap with recover_etcd; it waits
// until the etcd service runs. A node whose etcd already runs is left as it is (a rerun after
// the bootstrap). A snapshot that does not verify is never bootstrapped from.
func RecoverEtcd(ctx context.Context, addr string, talosconfig []byte, want SnapshotInfo, open func(context.Context) (io.ReadCloser, error)) error {
	if _, err := clientconfig.FromBytes(talosconfig); err != nil {
		return fmt.Errorf("talosconfig for %s does not parse: %w", addr, err)
	}

	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()

	var st EtcdState

	err := retry(ctx, "etcd state on "+addr, always, func(actx context.Context) error {
		var err error
		st, err = EtcdService(actx, addr, talosconfig)

		return err
	})
	if err != nil {
		return fmt.Errorf("recover etcd on %s: %w", addr, err)
	}

	switch st.State {
	case "Running":
		logger(ctx).Info("etcd already runs: not recovering it again", "node", addr)

		return nil
	case "Failed":
		return fmt.Errorf("recover etcd on %s: %w earlier (%s); reset the node's EPHEMERAL partition or replace the node", addr, ErrRecoverFailed, st.Message)
	}

	err = retry(ctx, "upload etcd snapshot to "+addr, transient, func(context.Context) error {
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

	err = retry(ctx, "bootstrap etcd from the snapshot on "+addr, bootstrapRetryable, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *nodeAPI) error {
			return c.Bootstrap(actx, &machineapi.BootstrapRequest{RecoverEtcd: true})
		})
	})
	if err != nil && status.Code(err) != codes.AlreadyExists {
		return fmt.Errorf("bootstrap etcd from the snapshot on %s: %w", addr, err)
	}

	// The restore runs in the etcd service after Bootstrap answered: its outcome is the
	// service's state.
	err = retry(ctx, "etcd to run on "+addr, func(err error) bool { return !errors.Is(err, ErrRecoverFailed) }, func(actx context.Context) error {
		st, err := EtcdService(actx, addr, talosconfig)

		switch {
		case err != nil:
			return err
		case st.State == "Running":
			return nil
		case st.State == "Failed":
			return fmt.Errorf("%w: %s", ErrRecoverFailed, st.Message)
		default:
			return fmt.Errorf("etcd is %s: %s", st.State, st.Message)
		}
	})
	if err != nil {
		return fmt.Errorf("recover etcd on %s: %w", addr, err)
	}

	logger(ctx).Info("etcd recovered from the snapshot", "node", addr, "snapshot", want.String())

	return nil
}
