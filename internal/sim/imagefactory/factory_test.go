package imagefactory

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/testenv"
)

func startFactory(t *testing.T, opts Options) *Factory {
	t.Helper()
	f, err := Start(t.Context(), "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func TestSchematicIDs(t *testing.T) {
	// Expected ids are the image-factory project's own test vectors and the
	// publicly known id of the qemu-guest-agent schematic.
	f := startFactory(t, Options{})
	for _, tc := range []struct {
		name, body, id string
		status         int
	}{
		{"empty json", `{}`, EmptySchematicID, 201},
		{"empty yaml", "customization: {}\n", EmptySchematicID, 201},
		{"empty lists", `customization: {"extraKernelArgs": [], "systemExtensions": {}}`, EmptySchematicID, 201},
		{"kernel args", `{"customization": {"extraKernelArgs": ["noapic", "nolapic"]}}`, "9cba8e32753f91a16c1837ab8abf356af021706ef284aef07380780177d9a06c", 201},
		{"extension", "customization:\n  systemExtensions:\n    officialExtensions: [siderolabs/qemu-guest-agent]\n", "ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515", 201},
		{"unknown field", `{"customisation": {}}`, "", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(f.URL()+"/schematics", "application/yaml", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if tc.status != 201 {
				return
			}
			var out struct{ ID string }
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if out.ID != tc.id {
				t.Fatalf("id %s, want %s", out.ID, tc.id)
			}
		})
	}
}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	return resp, b
}

func TestImages(t *testing.T) {
	const qsize, rsize = 3<<20 + 17, 5<<20 + 4097 // odd sizes: short last block
	f := startFactory(t, Options{QCOW2Size: qsize, RawSize: rsize})
	base := f.URL() + "/image/" + EmptySchematicID + "/v1.13.11/"

	resp, q := get(t, base+ScalewayQCOW2, nil)
	if resp.StatusCode != 200 || len(q) != qsize || string(q[:4]) != "QFI\xfb" {
		t.Fatalf("qcow2: status %d len %d magic %q", resp.StatusCode, len(q), q[:4])
	}
	if got := f.BytesServed(); got != qsize {
		t.Fatalf("BytesServed %d, want %d", got, qsize)
	}
	_, q2 := get(t, base+ScalewayQCOW2, nil)
	if !bytes.Equal(q, q2) {
		t.Fatal("qcow2 not deterministic")
	}

	_, zst := get(t, base+MetalRawZst, nil)
	if !bytes.HasPrefix(zst, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
		t.Fatalf("zst magic %x", zst[:4])
	}
	if len(zst) >= rsize {
		t.Fatalf("zst frame %d bytes is not smaller than raw %d: RLE blocks missing", len(zst), rsize)
	}
	raw, err := f.Artifact(EmptySchematicID, "v1.13.11", MetalRawZst)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(raw)
	if len(want) != rsize || want[510] != 0x55 || want[511] != 0xAA || string(want[512:520]) != "EFI PART" {
		t.Fatalf("raw image lacks its GPT signature (len %d)", len(want))
	}
	cmd := exec.Command(referenceCLI(t, "zstd", "zstd", "frame"), "-dc")
	cmd.Stdin = bytes.NewReader(zst)
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("zstd -dc refused the frame: %v", err)
	}
	if sha256.Sum256(got) != sha256.Sum256(want) {
		t.Fatalf("decompressed %d bytes differ from the artifact (%d bytes)", len(got), len(want))
	}

	t.Run("range", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			full     []byte
			from, to int
		}{
			{"qcow2 head", q, 0, 99},
			{"qcow2 middle", q, 1<<20 - 3, 2<<20 + 5},
			{"zst header+block", zst, 0, 20},
			{"zst across blocks", zst, 128<<10 - 10, 4*(128<<10) + 100},
			{"zst tail", zst, len(zst) - 50, len(zst) - 1},
		} {
			resp, b := get(t, base+map[bool]string{true: ScalewayQCOW2, false: MetalRawZst}[&tc.full[0] == &q[0]],
				map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", tc.from, tc.to)})
			if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, tc.full[tc.from:tc.to+1]) {
				t.Errorf("%s: status %d, %d bytes, content equal %v", tc.name, resp.StatusCode, len(b), bytes.Equal(b, tc.full[tc.from:tc.to+1]))
			}
		}
	})

	t.Run("head", func(t *testing.T) {
		before := f.BytesServed()
		resp, err := http.Head(base + MetalRawZst)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ContentLength != int64(len(zst)) || f.BytesServed() != before {
			t.Fatalf("HEAD: length %d want %d, served %d more bytes", resp.ContentLength, len(zst), f.BytesServed()-before)
		}
	})

	t.Run("not found", func(t *testing.T) {
		for _, p := range []string{
			"/image/" + strings.Repeat("a", 64) + "/v1.13.11/" + ScalewayQCOW2, // unknown schematic
			"/image/" + EmptySchematicID + "/v1.13.11/unknown.iso",
			"/image/" + EmptySchematicID + "/latest/" + ScalewayQCOW2,
		} {
			resp, _ := get(t, f.URL()+p, nil)
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("%s: status %d, want 404", p, resp.StatusCode)
			}
		}
	})

	t.Run("cut", func(t *testing.T) {
		f.CutAfter(1000)
		defer f.CutAfter(0)
		resp, err := http.Get(base + ScalewayQCOW2)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err == nil {
			t.Fatalf("a cut response read cleanly (%d bytes)", n)
		}
	})
}

// TestRawXZ checks the .raw.xz artifact the real factory serves beside
// .raw.zst (image-factory docs/api.md, "metal-<arch>.raw.xz"): the same raw
// image, a stream the reference xz decoder accepts, Range served, and the
// factory's content types.
func TestRawXZ(t *testing.T) {
	for _, rsize := range []int64{5<<20 + 4097, 64 << 10, 3} {
		t.Run(fmt.Sprint(rsize), func(t *testing.T) {
			f := startFactory(t, Options{RawSize: rsize, QCOW2Size: 1 << 20})
			base := f.URL() + "/image/" + EmptySchematicID + "/v1.13.11/"
			resp, xz := get(t, base+MetalRawXZ, nil)
			if resp.StatusCode != 200 || !bytes.HasPrefix(xz, []byte{0xFD, '7', 'z', 'X', 'Z', 0}) || string(xz[len(xz)-2:]) != "YZ" {
				t.Fatalf("xz: status %d, %d bytes, head %x", resp.StatusCode, len(xz), xz[:min(6, len(xz))])
			}
			raw, err := f.Artifact(EmptySchematicID, "v1.13.11", MetalRawXZ)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(raw)
			zr, _ := f.Artifact(EmptySchematicID, "v1.13.11", MetalRawZst)
			same, _ := io.ReadAll(zr)
			if !bytes.Equal(want, same) || int64(len(want)) != rsize {
				t.Fatalf("the .raw.xz and .raw.zst artifacts differ (%d and %d bytes, want %d)", len(want), len(same), rsize)
			}
			for _, tc := range []struct{ name, ctype string }{
				{MetalRawXZ, "application/x-xz"}, {MetalRawZst, "application/zstd"}, {ScalewayQCOW2, "application/x-qemu-disk"},
			} {
				resp, err := http.Head(base + tc.name)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if got := resp.Header.Get("Content-Type"); got != tc.ctype {
					t.Errorf("%s: Content-Type %q, want %q", tc.name, got, tc.ctype)
				}
			}
			if len(xz) > 40 {
				from, to := len(xz)/3, len(xz)-20
				resp, b := get(t, base+MetalRawXZ, map[string]string{"Range": fmt.Sprintf("bytes=%d-%d", from, to)})
				if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(b, xz[from:to+1]) {
					t.Errorf("range: status %d, %d bytes", resp.StatusCode, len(b))
				}
			}
			cmd := exec.Command(referenceCLI(t, "xz", "xz-utils", "stream"), "-dc")
			cmd.Stdin = bytes.NewReader(xz)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			got, err := cmd.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("xz -dc refused the stream: %v: %s", err, stderr.String())
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("xz -dc gave %d bytes that differ from the artifact (%d bytes)", len(got), len(want))
			}
		})
	}
}

// referenceCLI is the path of the decompressor name (of the Debian package pkg) that checks the
// stand-in's what: without it a test skips, unless CI is set (then it fails).
func referenceCLI(t *testing.T, name, pkg, what string) string {
	t.Helper()
	return testenv.Program(t, name, "apt-get install "+pkg+": the reference decoder of the "+what)
}
