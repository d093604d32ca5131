package rescue

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []pipeline
		err  string
	}{
		{cmd: `lsblk -J -b -o NAME,SIZE`, want: []pipeline{{stages: []stage{{args: []string{"lsblk", "-J", "-b", "-o", "NAME,SIZE"}}}}}},
		{cmd: `curl -- 'http://x/a?b='\''$(reboot)'\''' | zstd -dc`, want: []pipeline{{stages: []stage{
			{args: []string{"curl", "--", "http://x/a?b='$(reboot)'"}}, {args: []string{"zstd", "-dc"}}}}}},
		{cmd: `set -o pipefail; a | tee >(sha256sum >&2) | dd of='/dev/sda'`, want: []pipeline{
			{stages: []stage{{args: []string{"set", "-o", "pipefail"}}}, sep: ";"},
			{stages: []stage{{args: []string{"a"}}, {args: []string{"tee"}, sub: []string{"sha256sum", ">&2"}}, {args: []string{"dd", "of=/dev/sda"}}}}}},
		{cmd: `exec 3>&1; a | tee >(sha256sum >&3)`, want: []pipeline{
			{stages: []stage{{args: []string{"exec", "3>&1"}}}, sep: ";"},
			{stages: []stage{{args: []string{"a"}}, {args: []string{"tee"}, sub: []string{"sha256sum", ">&3"}}}}}},
		{cmd: `sync && "x y"\ z`, want: []pipeline{{stages: []stage{{args: []string{"sync"}}}, sep: "&&"}, {stages: []stage{{args: []string{"x y z"}}}}}},
		{cmd: `a | | b`, err: "syntax error"},
		{cmd: `echo 'open`, err: "unterminated"},
		{cmd: `tee >(x`, err: "unclosed"},
	} {
		got, err := parse(tc.cmd)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parse(%q) err = %v, want %q", tc.cmd, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parse(%q) = %+v, %v; want %+v", tc.cmd, got, err, tc.want)
		}
	}
}

func TestShellStatus(t *testing.T) {
	disk := filepath.Join(t.TempDir(), "d")
	if err := os.WriteFile(disk, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	const read3 = "dd if=/dev/sda bs=4M iflag=count_bytes count=3 status=none | sha256sum"
	const sum3 = "709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c  -\n"
	pw := Options{User: "rescue", Password: "s3cret", DiskPath: disk, DiskSize: 1 << 20}
	nopw := pw
	nopw.SudoNoPassword = true
	noZstd := pw
	noZstd.Missing = []string{"zstd"}
	root := pw
	root.User = "root"
	for _, tc := range []struct {
		name       string
		opts       Options
		cmd, stdin string
		status     int
		stdout     string
		stderrPart string
	}{
		{name: "sync", cmd: "sync", status: 0},
		{name: "unknown command in sh", cmd: "reboot", status: 127, stderrPart: "sh: 1: reboot: not found"},
		{name: "unknown command in bash", cmd: "bash -c reboot", status: 127, stderrPart: "bash: line 1: reboot: command not found"},
		{name: "pipe status", cmd: "bash -c 'reboot | sha256sum'", status: 0, stdout: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n"},
		{name: "pipefail in bash", cmd: "bash -c 'set -o pipefail; reboot | sha256sum'", status: 127},
		{name: "pipefail refused by sh", cmd: "set -o pipefail; sync", status: 2, stderrPart: "Illegal option -o pipefail"},
		{name: "process substitution refused by sh", cmd: "sync; echo x | tee >(sha256sum >&2)", status: 2, stderrPart: `Syntax error: "(" unexpected`},
		{name: "and", cmd: "reboot && sync", status: 127},
		{name: "semicolon", cmd: "reboot; sync", status: 0},
		{name: "user is not root", cmd: "id -u; id -un", stdout: "1000\nrescue\n"},
		{name: "root user", opts: root, cmd: "id -u", stdout: "0\n"},
		{name: "disk needs root", cmd: read3, status: 0, stderrPart: "Permission denied"}, // no pipefail in sh
		{name: "disk write needs root", cmd: "echo x | dd of=/dev/sda", status: 1, stderrPart: "failed to open '/dev/sda': Permission denied"},
		{name: "root reads the disk", opts: root, cmd: read3, stdout: sum3},
		{name: "sudo -S with the password", cmd: "sudo -S -p '' -- bash -c '" + read3 + "'", stdin: "s3cret\n", stdout: sum3},
		{name: "sudo -S prompts on stderr", cmd: "sudo -S id -u", stdin: "s3cret\n", stdout: "0\n", stderrPart: "[sudo] password for rescue: "},
		{name: "sudo -S wrong then right", cmd: "sudo -S -p '' id -u", stdin: "nope\ns3cret\n", stdout: "0\n", stderrPart: "Sorry, try again."},
		{name: "sudo -S three wrong", cmd: "sudo -S -p '' id -u", stdin: "a\nb\nc\ns3cret\n", status: 1, stderrPart: "3 incorrect password attempts"},
		{name: "sudo -S no input", cmd: "sudo -S -p '' id -u", status: 1, stderrPart: "no password was provided"},
		{name: "sudo without -S has no terminal", cmd: "sudo id -u", stdin: "s3cret\n", status: 1, stderrPart: "a terminal is required"},
		{name: "sudo -n wants a password", cmd: "sudo -n true", status: 1, stderrPart: "a password is required"},
		{name: "sudo -n passwordless", opts: nopw, cmd: "sudo -n -- bash -c '" + read3 + "'", stdout: sum3},
		{name: "sudo leaves the rest of stdin", opts: pw, cmd: "sudo -S -p '' sha256sum", stdin: "s3cret\n", stdout: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n"},
		{name: "command -v finds", cmd: "command -v zstd; command -v xz", stdout: "/usr/bin/zstd\n/usr/bin/xz\n"},
		{name: "command -v misses", opts: noZstd, cmd: "command -v zstd; command -v xz", stdout: "/usr/bin/xz\n"},
		{name: "missing zstd", opts: noZstd, cmd: "bash -c 'echo | zstd -dc'", status: 127, stderrPart: "zstd: command not found"},
		{name: "other device", opts: root, cmd: "dd if=/dev/sdb count=1", status: 1, stderrPart: "No such file"},
		{name: "lsblk needs no root", cmd: "lsblk -J", status: 0, stdout: `"name":"sda","size":1048576,"type":"disk"`},
		{name: "sum on fd 3 reaches stdout, dd's stats stay on stderr", opts: root,
			cmd:    "bash -c 'set -o pipefail; exec 3>&1; echo x | tee >(sha256sum >&3) | dd of=/dev/sda bs=4M status=progress'",
			stdout: "73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac  -\n", stderrPart: "2 bytes (0 MB, 0 MiB) copied"},
		{name: "fd 3 not opened", opts: root, cmd: "bash -c 'echo x | tee >(sha256sum >&3)'", status: 1, stderrPart: "3: Bad file descriptor"},
		{name: "exec with another redirection", cmd: "bash -c 'exec 4>&1'", status: 2, stderrPart: "knows only exec 3>&1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			if opts.User == "" {
				opts = pw
			}
			var out, errb bytes.Buffer
			sh := newShell(&Server{opts: opts}, strings.NewReader(tc.stdin), &errb)
			st := sh.run(t.Context(), tc.cmd, &out)
			if st != tc.status || (tc.stdout != "" && !strings.Contains(out.String(), tc.stdout)) || !strings.Contains(errb.String(), tc.stderrPart) {
				t.Errorf("%q: status %d stdout %q stderr %q; want %d %q %q", tc.cmd, st, out.String(), errb.String(), tc.status, tc.stdout, tc.stderrPart)
			}
		})
	}
}

func TestDecodeXZSimple(t *testing.T) {
	// Stream header (check None), block header (LZMA2), chunks "ab" (reset)
	// and "cde", end marker; the index and footer are skipped.
	s := []byte("\xfd7zXZ\x00\x00\x00\xff\x12\xd9\x41")
	s = append(s, 2, 0, 0x21, 1, 16, 0, 0, 0, 1, 2, 3, 4)
	s = append(s, 0x01, 0, 1, 'a', 'b', 0x02, 0, 2, 'c', 'd', 'e', 0x00)
	var out bytes.Buffer
	if err := decodeXZSimple(bufioReader(s), &out); err != nil || out.String() != "abcde" {
		t.Fatalf("decodeXZSimple = %q, %v", out.String(), err)
	}
	bad := append([]byte{}, s...)
	bad[24] = 0xE0 // an LZMA chunk
	if err := decodeXZSimple(bufioReader(bad), &out); err == nil || !strings.Contains(err.Error(), "xz CLI") {
		t.Fatalf("compressed chunk: %v", err)
	}
}

func TestDecodeSimple(t *testing.T) {
	// A frame with one raw block "abc" and a last RLE block of 4 × 'z'.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38} // no FCS, window descriptor
	frame = append(frame, byte(3<<3|0), 0, 0, 'a', 'b', 'c')
	frame = append(frame, byte(4<<3|1<<1|1), 0, 0, 'z')
	var out bytes.Buffer
	if err := decodeSimple(bufioReader(frame), &out); err != nil || out.String() != "abczzzz" {
		t.Fatalf("decodeSimple = %q, %v", out.String(), err)
	}
	bad := append([]byte{}, frame...)
	bad[6] = byte(3<<3 | 2<<1) // compressed block
	if err := decodeSimple(bufioReader(bad), &out); err == nil {
		t.Fatal("compressed block accepted")
	}
}
