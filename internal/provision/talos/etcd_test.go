package talos

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	simtalos "github.com/pocbot/pocbot/internal/sim/talos"
	"github.com/pocbot/pocbot/internal/statestore"
)

func openTestStore(t *testing.T) (*statestore.Store, string) {
	t.Helper()

	k := make([]byte, 32)
	_, _ = rand.Read(k)
	dir := t.TempDir()

	s, err := statestore.Open(t.Context(), statestore.Config{
		StateURL: (&url.URL{Scheme: "file", Path: dir}).String(),
		KeyURL:   "base64key://" + base64.URLEncoding.EncodeToString(k),
	})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = s.Close() })

	return s, dir
}

// kubeDo sends one request to the Kubernetes API with the kubeconfig's credentials.
func kubeDo(t *testing.T, ctx context.Context, kubeconfig []byte, method, path string, body any) (int, map[string]any) {
	t.Helper()

	kc, err := parseKubeconfig(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body) //nolint:errchkjson
		rd = bytes.NewReader(b)
	}

	req, _ := http.NewRequestWithContext(ctx, method, strings.TrimRight(kc.server, "/")+path, rd) //nolint:errcheck
	req.Header.Set("Content-Type", "application/json")

	tr := &http.Transport{TLSClientConfig: kc.tls, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()

	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close() //nolint:errcheck

	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)

	return resp.StatusCode, out
}

// TestEtcdSnapshotToTheBucketAndBack is the client's half of a pause and a resume: the
// snapshot streamed from a control plane into an encrypted artifact, verified there, every node
// gone, new nodes on the same addresses from the same configs, etcd recovered from the bucket;
// the kubeconfig issued before works after, and the objects written before are there.
func TestEtcdSnapshotToTheBucketAndBack(t *testing.T) {
	t.Parallel()

	tc := newTestCluster(t, "")
	store, dir := openTestStore(t)

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	cp := tc.cpAddrs[0]
	if err := Bootstrap(ctx, cp, tc.cfg.Talosconfig); err != nil {
		t.Fatal(err)
	}

	kc, err := Kubeconfig(ctx, cp, tc.cfg.Talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatal(err)
	}

	if code, obj := kubeDo(t, ctx, kc, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		map[string]any{"metadata": map[string]any{"name": "app"}, "data": map[string]any{"deployed": "before the pause"}}); code != http.StatusCreated {
		t.Fatalf("create ConfigMap = %d %v", code, obj)
	}

	var stored statestore.ArtifactSum

	info, err := SnapshotEtcd(ctx, cp, tc.cfg.Talosconfig, func(ctx context.Context, r io.Reader) error {
		var err error
		stored, err = store.PutArtifactStream(ctx, "c1", "etcd.snapshot", r)

		return err
	})
	if err != nil {
		t.Fatalf("SnapshotEtcd: %v", err)
	}

	if info.Size != stored.Size || info.SHA256 != stored.SHA256 {
		t.Fatalf("the node streamed %s, the bucket stored %s", info, stored)
	}

	if err := store.VerifyArtifactStream(ctx, "c1", "etcd.snapshot", statestore.ArtifactSum(info)); err != nil {
		t.Fatalf("verify in the bucket: %v", err)
	}

	// Nothing of the snapshot in plaintext on the disk: the bucket is a directory here.
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("before the pause")) { //nolint:gosec
				t.Errorf("%s holds the snapshot in plaintext", p)
			}
		}

		return nil
	})

	// The pause: every node goes, and etcd with them.
	for _, n := range append(tc.cps, tc.worker) {
		_ = n.Close()
	}

	var fresh []string
	for _, a := range tc.cpAddrs {
		startNode(t, simtalosOptions(a, tc.cfg.ControlPlane))
		fresh = append(fresh, a)
	}

	open := func(ctx context.Context) (io.ReadCloser, error) {
		return store.OpenArtifactStream(ctx, "c1", "etcd.snapshot")
	}

	// A snapshot other than the one taken is refused before any bootstrap.
	other := info
	other.Size++

	if err := RecoverEtcd(ctx, fresh, tc.cfg.Talosconfig, other, open); !errors.Is(err, ErrSnapshotInvalid) {
		t.Fatalf("recover with another sum = %v, want ErrSnapshotInvalid", err)
	}

	if st, err := EtcdService(ctx, fresh[0], tc.cfg.Talosconfig); err != nil || st.State != "Preparing" {
		t.Fatalf("etcd after a refused recovery = %+v, %v: it must not have been bootstrapped", st, err)
	}

	if err := RecoverEtcd(ctx, fresh, tc.cfg.Talosconfig, info, open); err != nil {
		t.Fatalf("RecoverEtcd: %v", err)
	}

	// A rerun finds etcd running and leaves it.
	if err := RecoverEtcd(ctx, fresh, tc.cfg.Talosconfig, info, open); err != nil {
		t.Fatalf("RecoverEtcd again: %v", err)
	}

	if err := Readyz(ctx, kc); err != nil {
		t.Fatalf("the kubeconfig issued before the pause: %v", err)
	}

	code, obj := kubeDo(t, ctx, kc, http.MethodGet, "/api/v1/namespaces/default/configmaps/app", nil)
	if data, _ := obj["data"].(map[string]any); code != http.StatusOK || data["deployed"] != "before the pause" {
		t.Fatalf("ConfigMap after the resume = %d %v", code, obj)
	}
}

// TestSnapshotCheck: the stream check accepts what etcd's restore accepts and nothing else.
func TestSnapshotCheck(t *testing.T) {
	t.Parallel()

	db := bytes.Repeat([]byte{7}, 4096)
	sum := sha256Of(db)

	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"database and its hash", append(bytes.Clone(db), sum...), true},
		{"no hash", db, false},
		{"wrong hash", append(bytes.Clone(db), make([]byte, 32)...), false},
		{"a byte changed", func() []byte { b := append(bytes.Clone(db), sum...); b[10] ^= 1; return b }(), false},
		{"empty", nil, false},
	} {
		c := newSnapshotCheck()
		for chunk := range slicesChunk(tc.data, 1000) {
			_, _ = c.Write(chunk)
		}

		if _, err := c.result(); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)

	return s[:]
}

func slicesChunk(b []byte, n int) func(func([]byte) bool) { return slices.Chunk(b, n) }

func simtalosOptions(addr string, userData []byte) simtalos.NodeOptions {
	return simtalos.NodeOptions{Addr: addr, Mode: "cloud", UserData: userData}
}
