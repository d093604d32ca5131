package talos

import (
	"bytes"
	"context"
	"crypto/tls"
	stdx509 "crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"go.yaml.in/yaml/v4"
	"google.golang.org/grpc/codes"
)

// kubeAPI is an HTTP client made from a kubeconfig, as kubectl makes one: the cluster's CA and
// the user's client certificate.
type kubeAPI struct {
	t      *testing.T
	ctx    context.Context
	server string
	http   *http.Client
}

func newKubeAPI(t *testing.T, ctx context.Context, kc []byte) *kubeAPI {
	t.Helper()

	var f kubeconfigFile
	if err := yaml.Unmarshal(kc, &f); err != nil {
		t.Fatal(err)
	}

	dec := func(s string) []byte {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}

		return b
	}

	pool := stdx509.NewCertPool()
	pool.AppendCertsFromPEM(dec(f.Clusters[0].Cluster.CAData))

	pair, err := tls.X509KeyPair(dec(f.Users[0].User.CertData), dec(f.Users[0].User.KeyData))
	if err != nil {
		t.Fatal(err)
	}

	tr := &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{pair}}, DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)

	return &kubeAPI{t: t, ctx: ctx, server: f.Clusters[0].Cluster.Server, http: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

// do sends a request and returns the status code and the decoded JSON answer.
func (k *kubeAPI) do(method, path string, body any) (int, map[string]any) {
	k.t.Helper()

	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			k.t.Fatal(err)
		}

		rd = bytes.NewReader(b)
	}

	req, err := http.NewRequestWithContext(k.ctx, method, k.server+path, rd)
	if err != nil {
		k.t.Fatal(err)
	}

	req.Header.Set("Content-Type", "application/json")

	resp, err := k.http.Do(req)
	if err != nil {
		k.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close() //nolint:errcheck

	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		k.t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}

	return resp.StatusCode, out
}

func (k *kubeAPI) waitReady() {
	k.t.Helper()

	waitFor(k.t, k.ctx, "the Kubernetes API to answer /readyz", func() error {
		req, _ := http.NewRequestWithContext(k.ctx, http.MethodGet, k.server+"/readyz", nil) //nolint:errcheck
		resp, err := k.http.Do(req)
		if err != nil {
			return err
		}

		_ = resp.Body.Close()

		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}

		return nil
	})
}

func trustedTalos(t *testing.T, ctx context.Context, tcfg []byte, n *Node) *client.Client {
	t.Helper()

	c, err := client.New(ctx, client.WithConfig(mustTalosconfig(t, tcfg)), client.WithEndpoints(n.APIAddr()))
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close() })

	return c
}

func snapshotOf(t *testing.T, ctx context.Context, c *client.Client) []byte {
	t.Helper()

	rd, err := c.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{})
	if err != nil {
		t.Fatalf("EtcdSnapshot: %v", err)
	}
	defer rd.Close() //nolint:errcheck

	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("read snapshot: %v", err)
	}

	return b
}

func etcdService(t *testing.T, ctx context.Context, c *client.Client) *machineapi.ServiceInfo {
	t.Helper()

	resp, err := c.ServiceList(ctx)
	if err != nil {
		t.Fatalf("ServiceList: %v", err)
	}

	for _, m := range resp.GetMessages() {
		for _, s := range m.GetServices() {
			if s.GetId() == "etcd" {
				return s
			}
		}
	}

	t.Fatal("no etcd service listed")

	return nil
}

// TestEtcdSnapshotRecoverKeepsKubernetesObjects is a pause and resume of a one-node cluster:
// objects written through the Kubernetes API, a snapshot, the node gone (and with it etcd),
// a new node on the same address from the same config, the snapshot uploaded and the cluster
// bootstrapped from it; the kubeconfig issued before answers after, and every object is there.
func TestEtcdSnapshotRecoverKeepsKubernetesObjects(t *testing.T) {
	t.Parallel()

	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()

			a, cp, _, tcfg := clusterAt(t, f, "/dev/nvme0n1")

			ctx := testCtx(t, 30*time.Second)

			n := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: cp})
			c := trustedTalos(t, ctx, tcfg, n)

			// No etcd before the bootstrap: nothing to snapshot.
			if _, err := io.ReadAll(must(c.EtcdSnapshot(ctx, &machineapi.EtcdSnapshotRequest{}))); err == nil || !strings.Contains(err.Error(), "failed reading etcd snapshot") {
				t.Errorf("snapshot before bootstrap = %v, want 'failed reading etcd snapshot'", err)
			}

			if err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
				t.Fatalf("Bootstrap: %v", err)
			}

			kc, err := c.Kubeconfig(ctx)
			if err != nil {
				t.Fatal(err)
			}

			k := newKubeAPI(t, ctx, kc)
			k.waitReady()

			if code, obj := k.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "before-pause"}, "data": map[string]any{"k": "v"},
			}); code != http.StatusCreated {
				t.Fatalf("create ConfigMap = %d %v", code, obj)
			}

			if code, obj := k.do(http.MethodPost, "/api/v1/namespaces/kube-system/secrets", map[string]any{
				"metadata": map[string]any{"name": "token"}, "stringData": map[string]any{"password": "s3cr3t"},
			}); code != http.StatusCreated {
				t.Fatalf("create Secret = %d %v", code, obj)
			}

			snap := snapshotOf(t, ctx, c)
			if len(snap)%512 != 32 {
				t.Fatalf("snapshot of %d bytes does not carry etcd's appended SHA-256 (size mod 512 = %d)", len(snap), len(snap)%512)
			}

			keys, err := SnapshotKeys(snap)
			if err != nil || !strings.Contains(strings.Join(keys, " "), "/registry/configmaps/default/before-pause") {
				t.Fatalf("SnapshotKeys = %v, %v", keys, err)
			}

			// The pause: the node goes, and etcd with it.
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}

			n2 := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: cp})
			c2 := trustedTalos(t, ctx, tcfg, n2)

			if s := etcdService(t, ctx, c2); s.GetState() != "Preparing" {
				t.Errorf("etcd on the new node before its bootstrap = %s, want Preparing (no delays: looking for a cluster to join)", s.GetState())
			}

			if _, err := c2.EtcdRecover(ctx, bytes.NewReader(snap)); err != nil {
				t.Fatalf("EtcdRecover: %v", err)
			}

			if err := c2.Bootstrap(ctx, &machineapi.BootstrapRequest{RecoverEtcd: true}); err != nil {
				t.Fatalf("Bootstrap(recover_etcd): %v", err)
			}

			if s := etcdService(t, ctx, c2); s.GetState() != "Running" {
				t.Fatalf("etcd after recovery = %s (%v)", s.GetState(), s.GetEvents())
			}

			k.waitReady() // the kubeconfig issued before the pause

			code, obj := k.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/before-pause", nil)
			if data, _ := obj["data"].(map[string]any); code != http.StatusOK || data["k"] != "v" {
				t.Errorf("ConfigMap after the resume = %d %v", code, obj)
			}

			code, obj = k.do(http.MethodGet, "/api/v1/namespaces/kube-system/secrets/token", nil)
			if data, _ := obj["data"].(map[string]any); code != http.StatusOK || data["password"] != base64.StdEncoding.EncodeToString([]byte("s3cr3t")) || obj["stringData"] != nil {
				t.Errorf("Secret after the resume = %d %v", code, obj)
			}

			// The recovery consumed the upload: a new Bootstrap is refused anyway.
			if err := c2.Bootstrap(ctx, &machineapi.BootstrapRequest{RecoverEtcd: true}); client.StatusCode(err) != codes.AlreadyExists {
				t.Errorf("second Bootstrap = %v, want AlreadyExists", err)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}

	return v
}

// TestEtcdRecoverRefusesABadSnapshot: etcd's restore checks the snapshot before it starts. A
// snapshot whose appended SHA-256 does not match fails the etcd service (Bootstrap has already
// answered) and leaves a data directory that refuses the next Bootstrap; one missing its hash
// fails likewise unless recover_skip_hash_check; one that is not a database fails its status
// check before anything is written, so a good upload and a new Bootstrap then recover.
func TestEtcdRecoverRefusesABadSnapshot(t *testing.T) {
	t.Parallel()

	f := forms[0]
	a, cp, _, tcfg := clusterAt(t, f, "/dev/nvme0n1")

	ctx := testCtx(t, 30*time.Second)

	n := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: cp})
	c := trustedTalos(t, ctx, tcfg, n)

	if err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	good := snapshotOf(t, ctx, c)

	if err := n.Close(); err != nil {
		t.Fatal(err)
	}

	// A byte of the keyspace changed: the body still parses, the hash does not match.
	tampered := bytes.Clone(good)
	i := bytes.Index(tampered, []byte("kube-public"))
	tampered[i] = 'K'

	for _, tc := range []struct {
		name       string
		snap       []byte
		skip       bool
		wantState  string
		wantMsg    string
		retryLater bool // the data directory stayed empty: a later Bootstrap is accepted
	}{
		{"hash mismatch", tampered, false, "Failed", "expected sha256", false},
		{"hash missing", good[:len(good)-32], false, "Failed", "snapshot missing hash but --skip-hash-check=false", false},
		{"not a database", bytes.Repeat([]byte{0xAB}, 4096+32), false, "Failed", "error verifying snapshot", true},
		{"nothing uploaded", nil, false, "Failed", "error verifying snapshot", true},
		{"hash mismatch skipped", tampered, true, "Running", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: cp})
			c := trustedTalos(t, ctx, tcfg, n)

			if tc.snap != nil {
				if _, err := c.EtcdRecover(ctx, bytes.NewReader(tc.snap)); err != nil {
					t.Fatalf("EtcdRecover: %v", err)
				}
			}

			if err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{RecoverEtcd: true, RecoverSkipHashCheck: tc.skip}); err != nil {
				t.Fatalf("Bootstrap answers before etcd restores: %v", err)
			}

			s := etcdService(t, ctx, c)
			if s.GetState() != tc.wantState || !strings.Contains(s.GetHealth().GetLastMessage(), tc.wantMsg) {
				t.Errorf("etcd = %s %q, want %s %q", s.GetState(), s.GetHealth().GetLastMessage(), tc.wantState, tc.wantMsg)
			}

			if tc.wantState == "Running" {
				return
			}

			if _, err := c.EtcdRecover(ctx, bytes.NewReader(good)); err != nil {
				t.Fatal(err)
			}

			err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{RecoverEtcd: true})

			switch {
			case tc.retryLater && err != nil:
				t.Errorf("Bootstrap after a restore that wrote nothing = %v, want accepted", err)
			case tc.retryLater && etcdService(t, ctx, c).GetState() != "Running":
				t.Errorf("etcd after the good upload = %v", etcdService(t, ctx, c))
			case !tc.retryLater && client.StatusCode(err) != codes.AlreadyExists:
				t.Errorf("Bootstrap after a restore that wrote the data directory = %v, want AlreadyExists", err)
			}

			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestKubernetesAPIObjects: the REST paths answer as the apiserver does — created, conflicts,
// not found, bad names, namespaces that do not exist, stale resource versions, bad Secret data
// — and refuse a client without the kubeconfig's certificate.
func TestKubernetesAPIObjects(t *testing.T) {
	t.Parallel()

	a, cp, _, tcfg := clusterAt(t, forms[0], "/dev/nvme0n1")

	ctx := testCtx(t, 30*time.Second)

	n := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: cp})
	c := trustedTalos(t, ctx, tcfg, n)

	if err := c.Bootstrap(ctx, &machineapi.BootstrapRequest{}); err != nil {
		t.Fatal(err)
	}

	kc, err := c.Kubeconfig(ctx)
	if err != nil {
		t.Fatal(err)
	}

	k := newKubeAPI(t, ctx, kc)
	k.waitReady()

	cm := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"metadata": map[string]any{"name": name}, "data": map[string]any{"a": "1"}}
		for key, v := range extra {
			m[key] = v
		}

		return m
	}

	base := "/api/v1/namespaces/default/configmaps"

	_, created := k.do(http.MethodPost, base, cm("x", nil))
	rv, _ := created["metadata"].(map[string]any)["resourceVersion"].(string)

	for _, tc := range []struct {
		name, method, path string
		body               any
		wantCode           int
		wantReason         string
	}{
		{"create again", http.MethodPost, base, cm("x", nil), http.StatusConflict, "AlreadyExists"},
		{"get missing", http.MethodGet, base + "/nope", nil, http.StatusNotFound, "NotFound"},
		{"bad name", http.MethodPost, base, cm("Not_A_Name", nil), http.StatusUnprocessableEntity, "Invalid"},
		{"missing namespace", http.MethodPost, "/api/v1/namespaces/ghost/configmaps", cm("y", nil), http.StatusNotFound, "NotFound"},
		{"namespace mismatch", http.MethodPost, base, map[string]any{"metadata": map[string]any{"name": "z", "namespace": "kube-system"}}, http.StatusBadRequest, "BadRequest"},
		{"wrong kind", http.MethodPost, base, cm("w", map[string]any{"kind": "Secret"}), http.StatusBadRequest, "BadRequest"},
		{"update missing", http.MethodPut, base + "/nope", cm("nope", nil), http.StatusNotFound, "NotFound"},
		{"name differs from URL", http.MethodPut, base + "/x", cm("other", nil), http.StatusBadRequest, "BadRequest"},
		{"update", http.MethodPut, base + "/x", map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": rv}, "data": map[string]any{"a": "2"}}, http.StatusOK, ""},
		{"update stale", http.MethodPut, base + "/x", map[string]any{"metadata": map[string]any{"name": "x", "resourceVersion": rv}}, http.StatusConflict, "Conflict"},
		{"secret bad base64", http.MethodPost, "/api/v1/namespaces/default/secrets", map[string]any{"metadata": map[string]any{"name": "s"}, "data": map[string]any{"k": "%%%"}}, http.StatusBadRequest, "BadRequest"},
		{"create namespace", http.MethodPost, "/api/v1/namespaces", map[string]any{"metadata": map[string]any{"name": "ghost"}}, http.StatusCreated, ""},
		{"now in it", http.MethodPost, "/api/v1/namespaces/ghost/configmaps", cm("y", nil), http.StatusCreated, ""},
		{"delete", http.MethodDelete, base + "/x", nil, http.StatusOK, ""},
		{"delete again", http.MethodDelete, base + "/x", nil, http.StatusNotFound, "NotFound"},
	} {
		code, obj := k.do(tc.method, tc.path, tc.body)
		if code != tc.wantCode || (tc.wantReason != "" && obj["reason"] != tc.wantReason) {
			t.Errorf("%s: %s %s = %d %v, want %d %s", tc.name, tc.method, tc.path, code, obj, tc.wantCode, tc.wantReason)
		}
	}

	code, list := k.do(http.MethodGet, "/api/v1/namespaces/ghost/configmaps", nil)
	if items, _ := list["items"].([]any); code != http.StatusOK || list["kind"] != "ConfigMapList" || len(items) != 1 {
		t.Errorf("list = %d %v", code, list)
	}

	// Without the kubeconfig's client certificate the handshake fails.
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second} //nolint:gosec
	if resp, err := anon.Get(k.server + base); err == nil {
		_ = resp.Body.Close()
		t.Errorf("a client without certificate got %s", resp.Status)
	}
}
