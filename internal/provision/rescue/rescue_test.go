package rescue

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/sim/imagefactory"
	"github.com/pocbot/pocbot/internal/sim/loopback"
	simrescue "github.com/pocbot/pocbot/internal/sim/rescue"
)

const ver = "v1.13.11"

func TestTriggerHash(t *testing.T) {
	t.Parallel()
	base := TriggerHash("http://f/image/a/v1/metal-amd64.raw.zst", "/dev/sda", "srv-1")
	if base != TriggerHash("http://f/image/a/v1/metal-amd64.raw.zst", "/dev/sda", "srv-1") || len(base) != 64 {
		t.Fatal("TriggerHash is not a stable sha256 hex")
	}
	for _, tc := range []struct{ url, disk, srv string }{
		{"http://f/image/b/v1/metal-amd64.raw.zst", "/dev/sda", "srv-1"},
		{"http://f/image/a/v1/metal-amd64.raw.zst", "/dev/sdb", "srv-1"},
		{"http://f/image/a/v1/metal-amd64.raw.zst", "/dev/sda", "srv-2"},
		{"http://f/image/a/v1/metal-amd64.raw.zst/dev/sda", "", "srv-1"}, // field boundaries matter
	} {
		if TriggerHash(tc.url, tc.disk, tc.srv) == base {
			t.Errorf("TriggerHash(%q,%q,%q) did not change", tc.url, tc.disk, tc.srv)
		}
	}
}

func TestChooseDisk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, json, want, wantDisk, wantErr string
	}{
		{name: "new format", json: `{"blockdevices":[{"name":"loop0","size":536870912,"type":"loop","mountpoint":"/run/live","ro":true,"rm":false},{"name":"sda","size":256060514304,"type":"disk","mountpoint":null,"ro":false,"rm":false,"children":[{"name":"sda1","size":1000,"type":"part","mountpoint":null}]}]}`, wantDisk: "sda"},
		{name: "old format strings", json: `{"blockdevices":[{"name":"sdb","size":"1000","type":"disk","mountpoint":null,"ro":"0","rm":"0"},{"name":"sda","size":"2000","type":"disk","mountpoint":null,"ro":"0","rm":"0"}]}`, wantDisk: "sda"},
		{name: "nvme order", json: `{"blockdevices":[{"name":"nvme1n1","size":10,"type":"disk"},{"name":"nvme0n1","size":10,"type":"disk"}]}`, wantDisk: "nvme0n1"},
		{name: "skip mounted take next", json: `{"blockdevices":[{"name":"sda","size":10,"type":"disk","children":[{"name":"sda1","type":"part","mountpoint":"/mnt"}]},{"name":"sdb","size":10,"type":"disk"}]}`, wantDisk: "sdb"},
		{name: "forced disk", json: `{"blockdevices":[{"name":"sda","size":10,"type":"disk"},{"name":"sdb","size":10,"type":"disk"}]}`, want: "/dev/sdb", wantDisk: "sdb"},
		{name: "forced disk mounted", json: `{"blockdevices":[{"name":"sda","size":10,"type":"disk"},{"name":"sdb","size":10,"type":"disk","children":[{"name":"sdb2","type":"part","mountpoint":"/boot"}]}]}`, want: "sdb", wantErr: "/dev/sdb has mounted filesystems (/boot)"},
		{name: "only disk mounted", json: `{"blockdevices":[{"name":"sda","size":10,"type":"disk","children":[{"name":"sda1","type":"part","mountpoint":"/"}]}]}`, wantErr: "/dev/sda has mounted filesystems (/)"},
		{name: "read-only and removable", json: `{"blockdevices":[{"name":"sr0","size":10,"type":"rom"},{"name":"sda","size":10,"type":"disk","ro":true},{"name":"sdb","size":10,"type":"disk","rm":true}]}`, wantErr: "read-only"},
		{name: "none", json: `{"blockdevices":[{"name":"loop0","size":10,"type":"loop"}]}`, wantErr: "no whole disk"},
		{name: "forced missing", json: `{"blockdevices":[{"name":"sda","size":10,"type":"disk"}]}`, want: "sdz", wantErr: "not found"},
		{name: "garbage", json: `lsblk: unknown column`, wantErr: "parse lsblk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ChooseDisk([]byte(tc.json), tc.want)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || d.Name != tc.wantDisk {
				t.Fatalf("ChooseDisk = %+v, %v; want %s", d, err, tc.wantDisk)
			}
		})
	}
}

// world is a factory stand-in plus the raw image it serves.
type world struct {
	f      *imagefactory.Factory
	url    string // the .raw.zst
	img    Image
	rawSHA string
	raw    []byte
}

func newWorld(t *testing.T, rawSize int64) world {
	t.Helper()
	f, err := imagefactory.Start(t.Context(), "127.0.0.1:0", imagefactory.Options{RawSize: rawSize})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	_, id := images.Schematic(nil)
	r, err := f.Artifact(id, ver, imagefactory.MetalRawZst)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(r)
	sum := sha256.Sum256(raw)
	img := Image{Zstd: images.MetalRawZstURL(f.URL(), id, ver), XZ: images.MetalRawXZURL(f.URL(), id, ver)}
	return world{f: f, url: img.Zstd, img: img, rawSHA: hex.EncodeToString(sum[:]), raw: raw}
}

func clientKey(t *testing.T) ssh.Signer {
	t.Helper()
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func startSim(t *testing.T, opts simrescue.Options) *simrescue.Server {
	t.Helper()
	if opts.DiskPath == "" {
		opts.DiskPath = filepath.Join(t.TempDir(), "sda.img")
	}
	s, err := simrescue.Start(t.Context(), opts) // serves past t.Context() until the cleanup's Close
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func diskPrefix(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	return b
}

type logBuf struct{ bytes.Buffer }

func testLog(t *testing.T) (*slog.Logger, *logBuf) {
	var b logBuf
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func TestWriteImageSim(t *testing.T) {
	t.Parallel()
	const rawSize = 9<<20 + 512
	w := newWorld(t, rawSize)
	key := clientKey(t)
	fast := Target{WaitTimeout: 5 * time.Second, RetryInterval: 50 * time.Millisecond, AuthGrace: 300 * time.Millisecond}

	// The rescue system as Scaleway documents it: user "rescue", not root,
	// sudo with the rescue password, a login shell that is not bash.
	t.Run("password, sudo -S, TOFU, bytes equal", func(t *testing.T) {
		disk := filepath.Join(t.TempDir(), "sda.img")
		s := startSim(t, simrescue.Options{User: "rescue", Password: "rescue-pw", DiskPath: disk, DiskSize: 64 << 20})
		tg := fast
		tg.Addr, tg.User, tg.Password = s.Addr(), "rescue", "rescue-pw"
		log, lb := testLog(t)
		res, err := WriteImage(t.Context(), tg, w.img, log)
		if err != nil {
			t.Fatal(err)
		}
		if res.Disk != "/dev/sda" || res.BytesWritten != rawSize || res.SHA256 != w.rawSHA || res.DiskSize != 64<<20 || res.Decompressor != "zstd" || res.ImageURL != w.img.Zstd {
			t.Fatalf("result %+v, want /dev/sda %d bytes sha %s through zstd", res, rawSize, w.rawSHA)
		}
		if res.HostKey != ssh.FingerprintSHA256(s.HostKey()) {
			t.Fatalf("host key %s, server has %s", res.HostKey, ssh.FingerprintSHA256(s.HostKey()))
		}
		if !bytes.Equal(diskPrefix(t, disk, rawSize), w.raw) {
			t.Fatal("bytes on the disk differ from the decompressed image")
		}
		if !strings.Contains(lb.String(), "recorded rescue host key SHA256:") || !strings.Contains(lb.String(), "sudo with the rescue password") {
			t.Fatalf("log lacks the recorded host key or the privilege line:\n%s", lb.String())
		}
		if strings.Contains(lb.String(), "rescue-pw") {
			t.Fatal("the rescue password is in the log")
		}
	})

	// rescue_server may be empty: the bot logs in as "rescue" with the key
	// it passed in ssh_key_ids, and cases differ by what sudo wants.
	for _, tc := range []struct {
		name     string
		opts     simrescue.Options
		sudoPW   func(context.Context) (string, error)
		wantErr  string
		wantDec  string
		wantPriv string
	}{
		{name: "no user, key, passwordless sudo", opts: simrescue.Options{SudoNoPassword: true}, wantDec: "zstd", wantPriv: "sudo without password"},
		{name: "no zstd: xz image", opts: simrescue.Options{SudoNoPassword: true, Missing: []string{"zstd"}}, wantDec: "xz"},
		{name: "password comes late", opts: simrescue.Options{Password: "late-pw"},
			sudoPW: func(context.Context) (string, error) { return "late-pw", nil }, wantDec: "zstd", wantPriv: "sudo with the rescue password"},
		{name: "no password anywhere", opts: simrescue.Options{Password: "unknown-pw"}, wantErr: "sudo wants a password, but the API gave none"},
		{name: "password never comes", opts: simrescue.Options{Password: "unknown-pw"},
			sudoPW: func(context.Context) (string, error) {
				return "", errors.New("rescue_server.password still empty after 5m0s")
			}, wantErr: "still empty after 5m0s"},
		{name: "wrong password from the API", opts: simrescue.Options{Password: "real-pw"},
			sudoPW: func(context.Context) (string, error) { return "stale-pw", nil }, wantErr: "incorrect password"},
		{name: "no zstd nor xz", opts: simrescue.Options{SudoNoPassword: true, Missing: []string{"zstd", "xz"}}, wantErr: "lacks zstd or xz"},
		{name: "no sudo", opts: simrescue.Options{Missing: []string{"sudo"}}, wantErr: "lacks sudo"},
		{name: "no bash", opts: simrescue.Options{SudoNoPassword: true, Missing: []string{"bash"}}, wantErr: "lacks bash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			disk := filepath.Join(t.TempDir(), "sda.img")
			opts := tc.opts
			opts.User, opts.AuthorizedKeys, opts.DiskPath, opts.DiskSize = "rescue", []ssh.PublicKey{key.PublicKey()}, disk, 64<<20
			s := startSim(t, opts)
			tg := fast
			tg.Addr, tg.Signer, tg.SudoPassword = s.Addr(), key, tc.sudoPW // no user, no password: rescue_server was empty
			log, lb := testLog(t)
			res, err := WriteImage(t.Context(), tg, w.img, log)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if b := diskPrefix(t, disk, 4096); !bytes.Equal(b, make([]byte, 4096)) {
					t.Fatal("the disk was written despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.SHA256 != w.rawSHA || res.Decompressor != tc.wantDec || !bytes.Equal(diskPrefix(t, disk, rawSize), w.raw) {
				t.Fatalf("result %+v: want sha %s through %s, and the image on the disk", res, w.rawSHA, tc.wantDec)
			}
			if tc.wantDec == "xz" && res.ImageURL != w.img.XZ {
				t.Fatalf("wrote %s, want the .raw.xz %s", res.ImageURL, w.img.XZ)
			}
			if tc.wantPriv != "" && !strings.Contains(lb.String(), tc.wantPriv) {
				t.Fatalf("log lacks %q:\n%s", tc.wantPriv, lb.String())
			}
		})
	}

	t.Run("key auth, expected key matches", func(t *testing.T) {
		s := startSim(t, simrescue.Options{User: "rescue", AuthorizedKeys: []ssh.PublicKey{key.PublicKey()}, SudoNoPassword: true, DiskSize: 64 << 20})
		tg := fast
		tg.Addr, tg.Signer = s.Addr(), key
		tg.ExpectedHostKey = string(ssh.MarshalAuthorizedKey(s.HostKey()))
		if _, err := WriteImage(t.Context(), tg, w.img, nil); err != nil {
			t.Fatal(err)
		}
	})

	refusals := []struct {
		name    string
		opts    simrescue.Options
		tweak   func(*Target, *simrescue.Server)
		url     string
		wantErr string
		is      error
	}{
		{name: "host key mismatch", opts: simrescue.Options{User: "rescue", Password: "pw"},
			tweak: func(tg *Target, _ *simrescue.Server) {
				other := startSim(t, simrescue.Options{User: "rescue", Password: "pw"}) // another boot, another key
				tg.ExpectedHostKey = ssh.FingerprintSHA256(other.HostKey())
			}, wantErr: "mismatch", is: ErrHostKeyMismatch},
		{name: "mounted partition", opts: simrescue.Options{User: "rescue", Password: "pw", MountPoint: "/mnt/data"}, wantErr: "/dev/sda has mounted filesystems (/mnt/data)"},
		{name: "image not found", opts: simrescue.Options{User: "rescue", Password: "pw"}, url: strings.Replace(w.url, w.url[strings.Index(w.url, "/image/")+7:][:64], strings.Repeat("ab", 32), 1), wantErr: "returned error: 404"},
		{name: "disk too small", opts: simrescue.Options{User: "rescue", Password: "pw", DiskSize: 4 << 20}, wantErr: "No space left"},
		{name: "wrong password", opts: simrescue.Options{User: "rescue", Password: "other"}, wantErr: "refused user"},
		{name: "not a URL", opts: simrescue.Options{User: "rescue", Password: "pw"}, url: "file:///etc/passwd", wantErr: "not an http(s) URL"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.DiskSize == 0 {
				tc.opts.DiskSize = 64 << 20
			}
			tc.opts.DiskPath = filepath.Join(t.TempDir(), "sda.img")
			s := startSim(t, tc.opts)
			tg := fast
			tg.Addr, tg.Password = s.Addr(), "pw"
			if tc.tweak != nil {
				tc.tweak(&tg, s)
			}
			img := w.img
			if tc.url != "" {
				img.Zstd = tc.url
			}
			_, err := WriteImage(t.Context(), tg, img, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v is not %v", err, tc.is)
			}
			if tc.name == "mounted partition" || tc.name == "host key mismatch" {
				if b := diskPrefix(t, tc.opts.DiskPath, 4096); !bytes.Equal(b, make([]byte, 4096)) {
					t.Fatal("the disk was written despite the refusal")
				}
			}
		})
	}

	// sshd answers before the keys and the password are in place: the
	// refusals of that window are tried again for AuthGrace. Counted instead
	// (three refusals, one RetryInterval apart), they failed the write
	// after 100 ms here, and after ~10 s at the production interval.
	t.Run("credentials land after sshd answers", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			tg   func(Target, *simrescue.Server) Target
		}{
			{"password", func(tg Target, s *simrescue.Server) Target { tg.Addr, tg.Password = s.Addr(), "pw"; return tg }},
			{"key", func(tg Target, s *simrescue.Server) Target { tg.Addr, tg.Signer = s.Addr(), key; return tg }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := startSim(t, simrescue.Options{User: "rescue", Password: "pw", AuthorizedKeys: []ssh.PublicKey{key.PublicKey()},
					CredentialsAfter: 500 * time.Millisecond, SudoNoPassword: true, DiskSize: 64 << 20})
				tg := tc.tg(fast, s)
				tg.AuthGrace = 4 * time.Second
				res, err := WriteImage(t.Context(), tg, w.img, nil)
				if err != nil || res.SHA256 != w.rawSHA {
					t.Fatalf("credentials in place 500 ms after sshd answered: %+v, %v", res, err)
				}
			})
		}
	})

	t.Run("waits for SSH", func(t *testing.T) {
		// An address nothing listens on yet (a fresh one of this process's
		// loopback block: no other process can take it meanwhile); the
		// server starts only later, and the client must keep trying.
		blk, err := loopback.Shared()
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort(blk.Next(), "2222")
		started := make(chan *simrescue.Server, 1)
		go func() {
			time.Sleep(400 * time.Millisecond)
			s, err := simrescue.Start(t.Context(), simrescue.Options{Addr: addr, User: "rescue", Password: "pw", DiskPath: filepath.Join(t.TempDir(), "d"), DiskSize: 64 << 20})
			if err != nil {
				t.Error(err)
			}
			started <- s
		}()
		tg := fast
		tg.Addr, tg.Password = addr, "pw"
		res, err := WriteImage(t.Context(), tg, w.img, nil)
		if s := <-started; s != nil {
			defer s.Close()
		}
		if err != nil || res.SHA256 != w.rawSHA {
			t.Fatalf("after waiting: %+v, %v", res, err)
		}
	})

	t.Run("gives up waiting", func(t *testing.T) {
		tg := fast
		tg.Addr, tg.Password, tg.WaitTimeout = "127.0.0.1:1", "pw", 300*time.Millisecond
		start := time.Now()
		_, err := WriteImage(t.Context(), tg, w.img, nil)
		if err == nil || !strings.Contains(err.Error(), "did not answer") || time.Since(start) > 3*time.Second {
			t.Fatalf("err = %v after %v", err, time.Since(start))
		}
	})
}

// TestWriteImageRealSSHD runs the same write through a real OpenSSH sshd
// whose login shell is dash (/bin/sh), as a user that is not root and
// reaches the disk only through sudo (a shim), with the real bash, curl,
// zstd or xz, tee, sha256sum and dd (behind a dd shim that maps /dev/sda to a
// file), and proves the bytes on the "disk" are the decompressed image. The
// URL carries shell metacharacters to prove the quoting, through two shells.
func TestWriteImageRealSSHD(t *testing.T) {
	t.Parallel()
	const rawSize = 12<<20 + 4096
	w := newWorld(t, rawSize)
	bad := strings.Replace(w.url, w.url[strings.Index(w.url, "/image/")+7:][:64], strings.Repeat("ab", 32), 1)
	for _, tc := range []struct {
		name     string
		opts     simrescue.SSHDOptions
		password bool
		img      Image
		wantDec  string
		wantErr  string
	}{
		{name: "sudo with the password", password: true, img: Image{Zstd: w.url + "?x='$(touch${IFS}/tmp/pocbot-pwned)';echo", XZ: w.img.XZ}, wantDec: "zstd"},
		{name: "passwordless sudo, no password known", opts: simrescue.SSHDOptions{SudoNoPassword: true}, img: w.img, wantDec: "zstd"},
		{name: "no zstd: xz", opts: simrescue.SSHDOptions{Missing: []string{"zstd"}}, password: true, img: w.img, wantDec: "xz"},
		{name: "sudo wants a password none knows", img: w.img, wantErr: "sudo wants a password"},
		{name: "refuses mounted", opts: simrescue.SSHDOptions{MountPoint: "/srv"}, password: true, img: w.img, wantErr: "/dev/sda has mounted filesystems (/srv)"},
		{name: "curl failure fails the pipeline", password: true, img: Image{Zstd: bad, XZ: w.img.XZ}, wantErr: "returned error: 404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.DiskSize = 64 << 20
			d := simrescue.StartSSHD(t, opts)
			tg := Target{Addr: d.Addr, User: d.User, Signer: d.Signer, ExpectedHostKey: ssh.FingerprintSHA256(d.HostKey),
				WaitTimeout: 10 * time.Second, RetryInterval: 100 * time.Millisecond}
			if tc.password {
				tg.Password = d.Password
			}
			ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
			defer cancel()
			res, err := WriteImage(ctx, tg, tc.img, slog.New(slog.NewTextHandler(tWriter{t}, nil)))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if b := diskPrefix(t, d.DiskPath, 4096); !bytes.Equal(b, make([]byte, 4096)) {
					t.Fatal("the disk was written despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat("/tmp/pocbot-pwned"); err == nil {
				os.Remove("/tmp/pocbot-pwned")
				t.Fatal("the URL's shell metacharacters were executed")
			}
			if res.BytesWritten != rawSize || res.SHA256 != w.rawSHA || res.Decompressor != tc.wantDec {
				t.Fatalf("result %+v, want %d bytes sha %s through %s", res, rawSize, w.rawSHA, tc.wantDec)
			}
			if !bytes.Equal(diskPrefix(t, d.DiskPath, rawSize), w.raw) {
				t.Fatal("bytes on the disk differ from the decompressed image")
			}
			if fi, _ := os.Stat(d.DiskPath); fi.Size() != 64<<20 {
				t.Fatalf("disk file size changed to %d", fi.Size())
			}
		})
	}
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// A command cut short by its context (a run killed, a step timed out) returns while the SSH
// session may still be delivering output: what run returns must be its own copy, never a buffer
// the session's copier goes on writing (a data race the race detector saw in CI's soak). The
// command writes to stdout and stderr without end; the bytes returned must stay as they were.
func TestRunCutShortOwnsItsOutput(t *testing.T) {
	t.Parallel()
	d := simrescue.StartSSHD(t, simrescue.SSHDOptions{DiskSize: 1 << 20})
	tg := Target{Addr: d.Addr, User: d.User, Signer: d.Signer, ExpectedHostKey: ssh.FingerprintSHA256(d.HostKey),
		WaitTimeout: 10 * time.Second, RetryInterval: 100 * time.Millisecond}
	dctx, dcancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer dcancel()
	c, _, err := Dial(dctx, tg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		// Cut short once the command is well under way: after 4,000 lines on stderr (a pipe
		// holds 64 KiB, so sshd has read and sent stdout's lines too). A fixed deadline of a
		// few hundred milliseconds passed before a loaded machine's shell had written anything.
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		var returned atomic.Bool
		lines, lateLines := 0, 0 // read and written only by the copier
		out, errOut, err := run(ctx, c, `while :; do echo 0123456789abcdef; echo fedcba9876543210 >&2; done`, nil, func(string) {
			if lines++; lines == 4000 {
				cancel()
			}
			if returned.Load() {
				lateLines++
				t.Errorf("a line reached the callback after run returned (%d)", lateLines)
			}
		})
		returned.Store(true)
		cancel()
		if err == nil || !errors.Is(err, context.Canceled) {
			t.Fatalf("an endless command ended with %v, want its context's end", err)
		}
		if len(out) == 0 || len(errOut) == 0 {
			t.Fatalf("nothing returned from %d stdout and %d stderr bytes received", len(out), len(errOut))
		}
		keep := append([]byte(nil), out...)
		time.Sleep(50 * time.Millisecond) // let a copier that outlived run write, if one does
		if !bytes.Equal(out, keep) {
			t.Fatal("the stdout returned changed after run returned")
		}
	}
}
