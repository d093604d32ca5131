package rescue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/testenv"
)

// ddProgressFirst stands for GNU dd with status=progress on a slow disk: its progress line
// ("\r<stats>", no newline: coreutils src/dd.c print_xfer_stats) is pending on stderr while the
// stream ends, and only the final stats end it. Whatever else reaches stderr then is glued to it.
const ddProgressFirst = `#!/bin/sh
printf '\r4194304 bytes (4.2 MB, 4.0 MiB) copied, 1 s, 4.2 MB/s' >&2
cat > "$POC_DISK"
printf '\n1+0 records in\n1+0 records out\n%s bytes copied, 1.2 s, 3.5 MB/s\n' "$(stat -c %s "$POC_DISK")" >&2
`

// The sum of the stream leaves on standard output, apart from dd's progress on stderr: a sum on
// stderr lands in dd's unterminated progress line whenever the write took over a second, and the
// bot found no "<sum>  -" line (TestWriteImageRealSSHD failed so under load). Real bash, real tee
// and sha256sum; curl, zstd and dd are stubs.
func TestWriteScriptSumOnStdout(t *testing.T) {
	t.Parallel()
	bash := requireTool(t, "bash")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte("talos "), 100000)
	stubs := map[string]string{
		"curl": "#!/bin/sh\nexec cat \"$POC_IMAGE\"\n",
		"zstd": "#!/bin/sh\nexec cat\n",
		"dd":   ddProgressFirst,
	}
	for name, body := range stubs {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"sh", "cat", "tee", "sha256sum", "stat", "printf"} {
		if err := os.Symlink(requireTool(t, tool), filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	imgPath, disk := filepath.Join(dir, "image"), filepath.Join(dir, "disk")
	if err := os.WriteFile(imgPath, img, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", WriteScript("http://factory/image.raw.zst", "zstd", "sda"))
	cmd.Env = []string{"PATH=" + bin, "POC_IMAGE=" + imgPath, "POC_DISK=" + disk}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("write script: %v; stderr: %s", err, stderr.String())
	}
	sum := sha256.Sum256(img)
	want := hex.EncodeToString(sum[:])
	if got := StreamSum(stdout.Bytes()); got != want {
		t.Errorf("StreamSum(stdout %q) = %q, want %s", stdout.String(), got, want)
	}
	if regexp.MustCompile(`[0-9a-f]{64}`).Match(stderr.Bytes()) {
		t.Errorf("the sum reached stderr, where dd's pending progress line swallows it: %q", stderr.String())
	}
	if b, err := os.ReadFile(disk); err != nil || !bytes.Equal(b, img) {
		t.Errorf("disk holds %d bytes (%v), want the %d-byte image", len(b), err, len(img))
	}
}

func TestStreamSum(t *testing.T) {
	t.Parallel()
	const sum = "73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac"
	for _, tc := range []struct{ name, stdout, want string }{
		{"alone", sum + "  -\n", sum},
		{"none", "", ""},
		{"not a sum line", sum + "  disk.img\n", ""},
		{"truncated", sum[:63] + "  -\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StreamSum([]byte(tc.stdout)); got != tc.want {
				t.Errorf("StreamSum(%q) = %q, want %q", tc.stdout, got, tc.want)
			}
		})
	}
}

// requireTool returns the path of a command the test runs for real. In CI (CI set; .ci/run runs on
// Debian, whose bash and coreutils packages hold them all) a missing one fails the test; elsewhere
// the test is skipped, naming the command and the package to install.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	return testenv.Program(t, name, "apt-get install bash coreutils")
}
