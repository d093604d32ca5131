package rescue

import (
	"bytes"
	"context"
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
	s := &Server{opts: Options{DiskPath: disk, DiskSize: 1 << 20}}
	if err := os.WriteFile(disk, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd        string
		status     int
		stdout     string
		stderrPart string
	}{
		{cmd: "sync", status: 0},
		{cmd: "reboot", status: 127, stderrPart: "command not found"},
		{cmd: "reboot | sha256sum", status: 0, stdout: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  -\n"},
		{cmd: "set -o pipefail; reboot | sha256sum", status: 127},
		{cmd: "reboot && sync", status: 127},
		{cmd: "reboot; sync", status: 0},
		{cmd: "dd if=/dev/sda bs=4M iflag=count_bytes count=3 status=none | sha256sum", status: 0, stdout: "709e80c88487a2411e1ee4dfb9f22a861492d20c4765150c0c794abd70f8147c  -\n"},
		{cmd: "dd if=/dev/sdb count=1", status: 1, stderrPart: "No such file"},
		{cmd: "lsblk -J", status: 0, stdout: `"name":"sda","size":1048576,"type":"disk"`},
	} {
		var out, errb bytes.Buffer
		sh := &shell{srv: s, stderr: &errb}
		st := sh.run(context.Background(), tc.cmd, &out)
		if st != tc.status || (tc.stdout != "" && !strings.Contains(out.String(), tc.stdout)) || !strings.Contains(errb.String(), tc.stderrPart) {
			t.Errorf("%q: status %d stdout %q stderr %q; want %d %q %q", tc.cmd, st, out.String(), errb.String(), tc.status, tc.stdout, tc.stderrPart)
		}
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
