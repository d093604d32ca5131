package rescue

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/pocbot/pocbot/internal/sim/loopback"
	"github.com/pocbot/pocbot/internal/testenv"
)

// SSHD is a real OpenSSH server on loopback, standing for a rescue system.
type SSHD struct {
	Addr string
	// User is the login sshd accepts: the user running the test (sshd can
	// log in no other without root). The session still sees itself as the
	// unprivileged "rescue" (uid 1000) until sudo: see the id shim.
	User string
	// Password is sudo's password (empty with SudoNoPassword).
	Password string
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
	// SudoNoPassword makes the sudo shim run without asking; otherwise it
	// wants SSHD.Password on standard input (sudo -S).
	SudoNoPassword bool
	// Missing lists tools left off the session's PATH (e.g. "zstd").
	Missing []string
	// LoginShell reads the session's command (default /bin/sh, dash on
	// Debian and Ubuntu): sshd runs "<login shell> -c <command>".
	LoginShell string
}

// sessionTools are the real programs the session's PATH offers, besides the
// shims; nothing else of the machine is on it, so Missing really removes a
// tool.
var sessionTools = []string{"bash", "sh", "curl", "zstd", "xz", "tee", "sha256sum", "sync", "true", "cat", "stat", "tr", "grep", "paste"}

// lsblkShim answers like util-linux lsblk -J -b for one file-backed disk.
const lsblkShim = `#!/bin/sh
# Stand-in lsblk: one whole disk "sda" backed by $POC_RESCUE_DISK.
size=$(stat -c %s "$POC_RESCUE_DISK")
if [ -n "$POC_RESCUE_MOUNT" ]; then
  children=', "children": [{"name": "sda1", "size": '"$((size / 2))"', "type": "part", "mountpoint": "'"$POC_RESCUE_MOUNT"'", "ro": false, "rm": false}]'
fi
printf '{"blockdevices": [{"name": "loop0", "size": 536870912, "type": "loop", "mountpoint": null, "ro": true, "rm": false}, {"name": "sda", "size": %s, "type": "disk", "mountpoint": null, "ro": false, "rm": false%s}]}\n' "$size" "$children"
`

// ddShim maps /dev/sda to the disk file, refuses any other device, refuses
// every device to a session that did not go through sudo (/dev/sda is
// root:disk 0660), and drops O_DIRECT (the file may sit on a filesystem that
// refuses it), then runs the real dd. TOKEN is replaced per start.
const ddShim = `#!/bin/bash
if [ "$POC_RESCUE_ROOT" != TOKEN ]; then
  for a in "$@"; do
    case "$a" in if=/dev/*|of=/dev/*) echo "dd: failed to open '${a#*=}': Permission denied" >&2; exit 1 ;; esac
  done
fi
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

// idShim answers like id(1) for the rescue user (uid 1000), or root under
// sudo.
const idShim = `#!/bin/sh
if [ "$POC_RESCUE_ROOT" = TOKEN ]; then u=0; n=root; else u=1000; n=rescue; fi
case "$*" in
  -u) echo "$u" ;;
  -un|-nu|"-u -n"|"-n -u") echo "$n" ;;
  *) echo "uid=$u($n) gid=$u($n) groups=$u($n)" ;;
esac
`

// sudoShim follows sudo(8) for -S (password on standard input, read a byte
// at a time by bash's read), -p, -n and --, asks nothing when PASSWORD is
// empty (NOPASSWD) or the caller is already root, and runs the command with
// the root marker the dd and id shims check. Unlike the real sudo it keeps
// the environment (the shims need POC_RESCUE_DISK).
const sudoShim = `#!/bin/bash
want=PASSWORD
S=0; n=0; prompt="[sudo] password for $(id -un): "
while [ $# -gt 0 ]; do
  case "$1" in
    --) shift; break ;;
    -S) S=1; shift ;;
    -n) n=1; shift ;;
    -p) prompt=$2; shift 2 ;;
    -*) echo "sudo: the stand-in does not know the option $1" >&2; exit 1 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: sudo [-nS] [-p prompt] [--] command" >&2; exit 1; }
if [ "$POC_RESCUE_ROOT" != TOKEN ] && [ -n "$want" ]; then
  [ $n = 1 ] && { echo "sudo: a password is required" >&2; exit 1; }
  [ $S = 1 ] || { echo "sudo: a terminal is required to read the password; either use the -S option to read from standard input or configure an askpass helper" >&2; exit 1; }
  try=0
  while :; do
    printf '%s' "$prompt" >&2
    if ! IFS= read -r line; then
      if [ $try = 0 ]; then echo "sudo: no password was provided" >&2; else echo "sudo: $try incorrect password attempt(s)" >&2; fi
      exit 1
    fi
    [ "$line" = "$want" ] && break
    try=$((try+1))
    [ $try = 3 ] && { echo "sudo: 3 incorrect password attempts" >&2; exit 1; }
    echo "Sorry, try again." >&2
  done
fi
export POC_RESCUE_ROOT=TOKEN
exec "$@"
`

// StartSSHD starts /usr/sbin/sshd -D on port 2222 of a fresh address of the
// process's loopback block (package loopback) for the test,
// with a generated host key, one authorised client key, and a session PATH
// whose lsblk and dd shims map /dev/sda to a temp file, so the session never
// touches a real disk. The session models Scaleway's rescue login: the
// command is read by a non-bash login shell (ForceCommand hands
// $SSH_ORIGINAL_COMMAND to LoginShell), the user is not root (id shim) and
// reaches the disk only through the sudo shim. It skips when sshd is
// missing, unless CI is set. sshd is stopped when the test ends.
func StartSSHD(tb testing.TB, opts SSHDOptions) *SSHD {
	tb.Helper()
	bin := "/usr/sbin/sshd"
	if _, err := os.Stat(bin); err != nil {
		testenv.Unavailable(tb, "OpenSSH sshd at "+bin, "apt-get install openssh-server", err)
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

	if opts.LoginShell == "" {
		opts.LoginShell = "/bin/sh"
	}
	token := hex.EncodeToString(randomBytes(tb, 16))
	password := ""
	if !opts.SudoNoPassword {
		password = hex.EncodeToString(randomBytes(tb, 12))
	}
	bindir := filepath.Join(dir, "bin")
	mustMkdir(tb, bindir)
	fill := strings.NewReplacer("TOKEN", token, "PASSWORD", "'"+password+"'")
	mustWrite(tb, filepath.Join(bindir, "lsblk"), []byte(lsblkShim), 0o755)
	mustWrite(tb, filepath.Join(bindir, "dd"), []byte(fill.Replace(ddShim)), 0o755)
	mustWrite(tb, filepath.Join(bindir, "id"), []byte(fill.Replace(idShim)), 0o755)
	mustWrite(tb, filepath.Join(bindir, "sudo"), []byte(fill.Replace(sudoShim)), 0o700)
	for _, tool := range sessionTools {
		if slices.Contains(opts.Missing, tool) {
			continue
		}
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(bindir, tool)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	disk := filepath.Join(dir, "disk.img")
	f, err := os.Create(disk)
	if err != nil {
		tb.Fatal(err)
	}
	if err := f.Truncate(opts.DiskSize); err != nil {
		tb.Fatal(err)
	}
	f.Close()

	// SetEnv (OpenSSH ≥ 7.8) gives every session a PATH of the shims and
	// the session tools only; the login shell keeps it because it is not a
	// login shell for exec sessions. ForceCommand makes LoginShell read
	// the client's command, as sshd would with that login shell.
	// A fresh address of this process's loopback block: no other process can take the port
	// between the choice and sshd's bind, as one could with a port freed for it on 127.0.0.1.
	blk, err := loopback.Shared()
	if err != nil {
		tb.Fatal(err)
	}
	host, port := blk.Next(), 2222
	user := currentUser(tb)
	cfg := fmt.Sprintf(`Port %d
ListenAddress %s
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
SetEnv PATH=%s POC_RESCUE_DISK=%s POC_RESCUE_MOUNT=%s
ForceCommand exec %s -c "$SSH_ORIGINAL_COMMAND"
LogLevel ERROR
`, port, host, filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "sshd.pid"), authKeys, user, bindir, disk, opts.MountPoint, opts.LoginShell)
	cfgPath := filepath.Join(dir, "sshd_config")
	mustWrite(tb, cfgPath, []byte(cfg), 0o600)

	// Not tb.Context(): that ends before the cleanups, and sshd serves until the one below.
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
	addr := net.JoinHostPort(host, strconv.Itoa(port))
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
	return &SSHD{Addr: addr, User: user, Password: password, Signer: clientSigner, HostKey: hostSigner.PublicKey(), DiskPath: disk, DiskSize: opts.DiskSize}
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

func randomBytes(tb testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
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

func currentUser(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		tb.Fatalf("id -un: %v", err)
	}
	return strings.TrimSpace(string(out))
}
