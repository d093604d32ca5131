package rescue

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// SSHD is a real OpenSSH server on loopback, standing for a rescue system.
type SSHD struct {
	Addr string
	User string
	// Signer is the client key authorised to log in.
	Signer ssh.Signer
	// HostKey is the server's host key.
	HostKey ssh.PublicKey
	// DiskPath is the file that /dev/sda maps to in the session.
	DiskPath string
	DiskSize int64
}

// SSHDOptions configure StartSSHD.
type SSHDOptions struct {
	DiskSize int64 // default 256 MiB
	// MountPoint, when set, makes the lsblk shim show sda1 mounted there.
	MountPoint string
}

// lsblkShim answers like util-linux lsblk -J -b for one file-backed disk.
const lsblkShim = `#!/bin/sh
# Stand-in lsblk: one whole disk "sda" backed by $POC_RESCUE_DISK.
size=$(stat -c %s "$POC_RESCUE_DISK")
if [ -n "$POC_RESCUE_MOUNT" ]; then
  children=', "children": [{"name": "sda1", "size": '"$((size / 2))"', "type": "part", "mountpoint": "'"$POC_RESCUE_MOUNT"'", "ro": false, "rm": false}]'
fi
printf '{"blockdevices": [{"name": "loop0", "size": 536870912, "type": "loop", "mountpoint": null, "ro": true, "rm": false}, {"name": "sda", "size": %s, "type": "disk", "mountpoint": null, "ro": false, "rm": false%s}]}\n' "$size" "$children"
`

// ddShim maps /dev/sda to the disk file, refuses any other device, and drops
// O_DIRECT (the file may sit on a filesystem that refuses it), then runs the
// real dd.
const ddShim = `#!/bin/bash
args=()
for a in "$@"; do
  case "$a" in
    if=/dev/sda) a="if=$POC_RESCUE_DISK" ;;
    of=/dev/sda) a="of=$POC_RESCUE_DISK" ;;
    if=/dev/*|of=/dev/*) echo "dd shim: refusing device ${a#*=}" >&2; exit 1 ;;
    iflag=*|oflag=*)
      k=${a%%=*}; v=$(echo "${a#*=}" | tr ',' '\n' | grep -vx direct | paste -sd, -)
      if [ -z "$v" ]; then continue; fi
      a="$k=$v" ;;
  esac
  args+=("$a")
done
# conv=notrunc: a disk is never truncated; writing a file would be.
case " ${args[*]} " in *" of="*) args+=(conv=notrunc) ;; esac
exec /bin/dd "${args[@]}"
`

// StartSSHD starts /usr/sbin/sshd -D on a free loopback port for the test,
// with a generated host key, one authorised client key, and a session PATH
// whose lsblk and dd shims map /dev/sda to a temp file, so the session never
// touches a real disk. It skips when sshd is missing, unless CI is set.
// sshd is stopped when the test ends.
func StartSSHD(tb testing.TB, opts SSHDOptions) *SSHD {
	tb.Helper()
	bin := "/usr/sbin/sshd"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI is set and OpenSSH sshd is required at %s: %v (apt-get install openssh-server)", bin, err)
		}
		tb.Skipf("OpenSSH sshd not installed at %s (apt-get install openssh-server): %v", bin, err)
	}
	if opts.DiskSize <= 0 {
		opts.DiskSize = 256 << 20
	}
	dir := tb.TempDir()
	// sshd's StrictModes wants the home and key files not group/world
	// writable; TempDir is 0700 already.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		tb.Fatalf("mkdir /run/sshd (privilege separation dir): %v", err)
	}

	hostPriv := writeKey(tb, filepath.Join(dir, "host_ed25519"))
	clientPriv := writeKey(tb, filepath.Join(dir, "client_ed25519"))
	hostSigner, _ := ssh.NewSignerFromKey(hostPriv)
	clientSigner, _ := ssh.NewSignerFromKey(clientPriv)
	authKeys := filepath.Join(dir, "authorized_keys")
	mustWrite(tb, authKeys, ssh.MarshalAuthorizedKey(clientSigner.PublicKey()), 0o600)

	bindir := filepath.Join(dir, "bin")
	mustMkdir(tb, bindir)
	mustWrite(tb, filepath.Join(bindir, "lsblk"), []byte(lsblkShim), 0o755)
	mustWrite(tb, filepath.Join(bindir, "dd"), []byte(ddShim), 0o755)
	disk := filepath.Join(dir, "disk.img")
	f, err := os.Create(disk)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(opts.DiskSize); err != nil {
		tb.Fatal(err)
	}
	f.Close()

	// SetEnv (OpenSSH ≥ 7.8) puts the shims first on PATH for every
	// session; the login shell keeps it because it is not a login shell
	// for exec sessions.
	port := freePort(tb)
	user := currentUser(tb)
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
AllowUsers %s
SetEnv PATH=%s:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin POC_RESCUE_DISK=%s POC_RESCUE_MOUNT=%s
LogLevel ERROR
`, port, filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "sshd.pid"), authKeys, user, bindir, disk, opts.MountPoint)
	cfgPath := filepath.Join(dir, "sshd_config")
	mustWrite(tb, cfgPath, []byte(cfg), 0o600)

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-D", "-e", "-f", cfgPath)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			tb.Errorf("sshd (pid %d) did not stop", cmd.Process.Pid)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			tb.Fatalf("sshd exited at start: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("sshd did not listen on %s within 10s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &SSHD{Addr: addr, User: user, Signer: clientSigner, HostKey: hostSigner.PublicKey(), DiskPath: disk, DiskSize: opts.DiskSize}
}

func writeKey(tb testing.TB, path string) ed25519.PrivateKey {
	tb.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	blk, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		tb.Fatal(err)
	}
	mustWrite(tb, path, pem.EncodeToMemory(blk), 0o600)
	return priv
}

func mustWrite(tb testing.TB, path string, b []byte, mode os.FileMode) {
	tb.Helper()
	if err := os.WriteFile(path, b, mode); err != nil {
		tb.Fatal(err)
	}
}

func mustMkdir(tb testing.TB, path string) {
	tb.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		tb.Fatal(err)
	}
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func currentUser(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		tb.Fatalf("id -un: %v", err)
	}
	return strings.TrimSpace(string(out))
}
