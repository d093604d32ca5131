package rescue

import (
	"time"

	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/ssh"
)

// Options configure the in-process rescue host.
type Options struct {
	// Addr to listen on, e.g. "127.0.0.5:2222"; default "127.0.0.1:0".
	Addr string
	// User is the login; it is not root (Scaleway's rescue user is
	// "rescue"), so writing the disk takes sudo. User "root" is root.
	User string
	// Password logs in over SSH and answers sudo's prompt, like the
	// rescue password the API gives.
	Password       string
	AuthorizedKeys []ssh.PublicKey
	// SudoNoPassword makes sudo run without asking (a NOPASSWD sudoers
	// entry); otherwise sudo wants Password on standard input (sudo -S).
	SudoNoPassword bool
	// Missing lists commands the rescue image lacks (e.g. "zstd"): the
	// login shell answers "not found" and command -v finds nothing.
	Missing []string
	// DiskPath is the file standing for /dev/sda; created (sparse) with
	// DiskSize bytes when missing. DiskSize defaults to 2 GiB.
	DiskPath string
	DiskSize int64
	// MountPoint, when set, shows a partition sda1 mounted there, so the
	// bot must refuse the disk.
	MountPoint string
	// CredentialsAfter makes the SSH server refuse every login (password
	// and key alike) until this long after Start, as a rescue boot whose
	// keys and password land after its sshd answers would. Zero: in place
	// at once.
	CredentialsAfter time.Duration
	// WriteTime is the least time a write of the disk takes (the real
	// image written at the real disk's rate; the world passes its
	// profile's figure, scaled). Zero: as fast as the file takes it.
	WriteTime  time.Duration
	HTTPClient *http.Client
	Log        *slog.Logger
}

// Server is a running rescue host.
type Server struct {
	opts    Options
	ln      net.Listener
	hostKey ssh.Signer
	cfg     *ssh.ServerConfig
	http    *http.Client
	log     *slog.Logger
	written atomic.Int64

	mu       sync.Mutex
	commands []string
	wg       sync.WaitGroup
	cancel   context.CancelFunc
	conns    map[net.Conn]struct{}
}

// Start listens and serves until Close is called; ctx bounds the listen only (the server
// outlives it, as a booted host outlives whoever asked for the boot). Every Start makes a new
// host key, as every rescue boot does.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.DiskSize <= 0 {
		opts.DiskSize = 2 << 30
	}
	if opts.DiskPath == "" {
		return nil, errors.New("rescue stand-in: DiskPath (the file standing for /dev/sda) is required")
	}
	if opts.User == "" || (opts.Password == "" && len(opts.AuthorizedKeys) == 0) {
		return nil, errors.New("rescue stand-in: a user and a password or authorized keys are required")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	f, err := os.OpenFile(opts.DiskPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("rescue stand-in: open disk file: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() < opts.DiskSize {
		err = f.Truncate(opts.DiskSize)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("rescue stand-in: size disk file: %w", err)
		}
	}
	f.Close()

	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, hostKey: signer, log: opts.Log, http: opts.HTTPClient, conns: map[net.Conn]struct{}{}}
	if s.http == nil {
		s.http = &http.Client{}
	}
	started := time.Now()
	credentialsIn := func() bool { return time.Since(started) >= opts.CredentialsAfter }
	s.cfg = &ssh.ServerConfig{
		PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if credentialsIn() && opts.Password != "" && c.User() == opts.User && subtle.ConstantTimeCompare(pw, []byte(opts.Password)) == 1 {
				return nil, nil
			}
			return nil, errors.New("access denied")
		},
		PublicKeyCallback: func(c ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if credentialsIn() && c.User() == opts.User {
				for _, k := range opts.AuthorizedKeys {
					if bytes.Equal(k.Marshal(), key.Marshal()) {
						return nil, nil
					}
				}
			}
			return nil, errors.New("access denied")
		},
	}
	s.cfg.AddHostKey(signer)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("rescue stand-in: listen on %s: %w", opts.Addr, err)
	}
	s.ln = ln
	ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Add(1)
	go s.serve(ctx)
	go func() { <-ctx.Done(); _ = ln.Close() }()
	return s, nil
}

// Addr is the listening address (host:port).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// HostKey is this boot's host key.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// BytesWritten is what the last dd wrote to the disk.
func (s *Server) BytesWritten() int64 { return s.written.Load() }

// Commands lists every command stage run so far.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.commands...)
}

func (s *Server) record(c string) {
	s.mu.Lock()
	s.commands = append(s.commands, c)
	s.mu.Unlock()
}

// Close stops the server and waits for its sessions to end.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) syncDisk() error {
	f, err := os.OpenFile(s.opts.DiskPath, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (s *Server) serve(ctx context.Context) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.handleConn(ctx, c)
		}()
	}
}

func (s *Server) handleConn(ctx context.Context, c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, s.cfg)
	if err != nil {
		s.log.Debug("rescue stand-in: handshake failed", "remote", c.RemoteAddr().String(), "error", err)
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	defer wg.Wait()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.session(ctx, ch, creqs)
		}()
	}
}

func (s *Server) session(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for req := range reqs {
		switch req.Type {
		case "exec":
			if len(req.Payload) < 4 {
				_ = req.Reply(false, nil)
				continue
			}
			n := binary.BigEndian.Uint32(req.Payload)
			if int(n) > len(req.Payload)-4 {
				_ = req.Reply(false, nil)
				continue
			}
			cmd := string(req.Payload[4 : 4+n])
			_ = req.Reply(true, nil)
			done := make(chan int, 1)
			go func() {
				sh := newShell(s, ch, ch.Stderr())
				done <- sh.run(ctx, cmd, ch)
			}()
			// Keep draining requests (a signal or the channel closing
			// cancels the command) until it ends.
			var status int
		wait:
			for {
				select {
				case status = <-done:
					break wait
				case r, ok := <-reqs:
					if !ok {
						cancel()
						<-done
						return
					}
					if r.Type == "signal" {
						cancel()
					}
					if r.WantReply {
						_ = r.Reply(false, nil)
					}
				}
			}
			s.log.Debug("rescue stand-in: command done", "command", cmd, "status", status)
			_, _ = ch.SendRequest("exit-status", false, binary.BigEndian.AppendUint32(nil, uint32(status)))
			return
		case "env", "pty-req":
			_ = req.Reply(req.Type == "env", nil)
		default:
			_ = req.Reply(false, nil)
		}
	}
}
