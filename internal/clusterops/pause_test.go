package clusterops_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/lifecycle"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// kube is the Kubernetes API as kubectl reaches it with a kubeconfig.
type kube struct {
	server string
	c      *http.Client
}

func newKube(t *testing.T, kc []byte) *kube {
	t.Helper()
	var doc struct {
		Clusters []struct {
			Cluster struct {
				Server string `yaml:"server"`
				CA     string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}
	if err := yaml.Unmarshal(kc, &doc); err != nil || len(doc.Clusters) == 0 || len(doc.Users) == 0 {
		t.Fatalf("kubeconfig: %v", err)
	}
	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(dec(doc.Clusters[0].Cluster.CA))
	pair, err := tls.X509KeyPair(dec(doc.Users[0].User.Cert), dec(doc.Users[0].User.Key))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, DisableKeepAlives: true}
	return &kube{server: doc.Clusters[0].Cluster.Server, c: &http.Client{Transport: tr, Timeout: 5 * time.Second}}
}

// viaDNS makes the client resolve the names of zone as the emulated Scaleway DNS answers them
// (what a resolver would, once the records propagated), not through the machine's resolver.
func (k *kube) viaDNS(e *env, zone string) *kube {
	if zone == "" {
		return k
	}
	tr := k.c.Transport.(*http.Transport)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		for _, r := range e.w.Scaleway.DNSRecords(zone) {
			if r.Name+"."+zone == host {
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(r.Data, port))
			}
		}
		return nil, fmt.Errorf("%s: no record in the emulated zone %s", host, zone)
	}
	return k
}

func (k *kube) do(ctx context.Context, method, path string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := k.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, nil
}

// billedCompute lists the cluster's machines still in the inventory: instance servers and
// Elastic Metal servers carrying its tag.
func (e *env) billedCompute(clusterID string) []string {
	var out []string
	for _, r := range e.w.Scaleway.Inventory() {
		if (r.Kind == "instance_server" || r.Kind == "baremetal_server" || r.Kind == "block_volume") && slices.Contains(r.Tags, provision.ClusterTag(clusterID)) {
			out = append(out, r.Kind+" "+r.Name)
		}
	}
	return out
}

func (e *env) inventoryOf(kind, clusterID string) []string {
	var out []string
	for _, r := range e.w.Scaleway.Inventory() {
		if r.Kind == kind && slices.Contains(r.Tags, provision.ClusterTag(clusterID)) {
			out = append(out, r.ID+" "+r.Name)
		}
	}
	slices.Sort(out)
	return out
}

// TestPauseThenResumeKeepsTheCluster: the life of a paused cluster with a DNS zone. A pause
// snapshots etcd into the bucket and deletes every machine, keeping the reserved IPs, the
// security group and the state, at a paused price the header records; a second pause does
// nothing; the resume (an up of the paused cluster) brings the machines back on the same IPs,
// recovers etcd, and the kubeconfig issued before the pause reads every object written before
// it. Then a pause with --release-ips (and park_for) deletes the reserved IPs too and parks the
// worker; the resume adopts the worker back, gets new IPs and new certificates from the same CA,
// the DNS records follow the new IPs, and the name in the kubeconfig reaches every object.
func TestPauseThenResumeKeepsTheCluster(t *testing.T) {
	e, ctx := start(t, 4*time.Minute, world.Options{})
	const name = "acme-freeze-1"
	e.spec.DNSZone = "poc.example.com"
	first := e.up(ctx, t, name)
	kc, err := e.ops.Kubeconfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	k := newKube(t, kc).viaDNS(e, e.spec.DNSZone)
	for i := range 3 {
		code, obj, err := k.do(ctx, http.MethodPost, "/api/v1/namespaces/default/configmaps",
			map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("app-%d", i)}, "data": map[string]any{"v": fmt.Sprint(i)}})
		if err != nil || code != http.StatusCreated {
			t.Fatalf("create ConfigMap %d: %d %v %v", i, code, obj, err)
		}
	}
	ipsBefore := e.inventoryOf("instance_ip", name)
	sgBefore := e.inventoryOf("instance_security_group", name)

	res, err := e.ops.Pause(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "pause"})
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	if res.Header.Phase != string(lifecycle.PhasePaused) {
		t.Fatalf("phase after pause = %q", res.Header.Phase)
	}
	if left := e.billedCompute(name); len(left) > 0 {
		t.Fatalf("a paused cluster still has billed machines: %v", left)
	}
	if got := e.inventoryOf("instance_ip", name); !slices.Equal(got, ipsBefore) || len(got) != 3 {
		t.Fatalf("reserved IPs after the pause = %v, before %v", got, ipsBefore)
	}
	if got := e.inventoryOf("instance_security_group", name); !slices.Equal(got, sgBefore) {
		t.Fatalf("security group after the pause = %v, before %v", got, sgBefore)
	}
	if _, _, err := k.do(ctx, http.MethodGet, "/api/v1/namespaces/default/configmaps/app-0", nil); err == nil {
		t.Fatal("the paused cluster's Kubernetes API still answers")
	}
	// The paused cost is clusterops' to price (its quoter, the snapshot's size), not the caller's.
	if m, _ := clusterops.MetaOf(res.Header); m.DailyCostNanos == 0 || m.DailyCostNanos != res.Quote.Daily.Nanos || m.DailyCostNanos > 1_000_000_000 {
		t.Fatalf("paused daily cost in the header = %d, outcome's quote %d", m.DailyCostNanos, res.Quote.Daily.Nanos)
	}
	if res.State.Outputs[cluster.OutEtcdSnapshot] == "" {
		t.Fatal("no snapshot recorded in the paused state")
	}
	// Pausing a paused cluster does nothing.
	if again, err := e.ops.Pause(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "pause"}); err != nil ||
		again.Header.Phase != string(lifecycle.PhasePaused) || again.Header.Serial != res.Header.Serial {
		t.Fatalf("pause of a paused cluster: %+v %v", again, err)
	}

	resumed, err := e.ops.Run(ctx, clusterops.VerbResume, clusterops.Intent{Cluster: name, Spec: e.spec, RequestedBy: "alice", Command: "resume"}, nil)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if resumed.Header.Phase != string(lifecycle.PhaseReady) || resumed.State.Outputs[cluster.OutEtcdSnapshot] != "" {
		t.Fatalf("after the resume: phase %q, snapshot output %q", resumed.Header.Phase, resumed.State.Outputs[cluster.OutEtcdSnapshot])
	}
	if got := e.inventoryOf("instance_ip", name); !slices.Equal(got, ipsBefore) {
		t.Fatalf("IPs after the resume = %v, before %v", got, ipsBefore)
	}
	for i := range 3 {
		if first.State.Resources[scaleway.NodeServer(i)].ID == resumed.State.Resources[scaleway.NodeServer(i)].ID {
			t.Fatalf("control plane %d is the same server: the pause did not delete it", i)
		}
	}
	// The kubeconfig issued before the pause, and every object written before it.
	for i := range 3 {
		code, obj, err := k.do(ctx, http.MethodGet, fmt.Sprintf("/api/v1/namespaces/default/configmaps/app-%d", i), nil)
		if data, _ := obj["data"].(map[string]any); err != nil || code != http.StatusOK || data["v"] != fmt.Sprint(i) {
			t.Fatalf("ConfigMap app-%d after the resume: %d %v %v", i, code, obj, err)
		}
	}
	if _, err := e.store.OpenArtifactStream(ctx, name, clusterops.ArtifactEtcdSnapshot); err == nil {
		t.Fatal("the snapshot stays in the bucket after the resume")
	}
	t.Run("releasing the IPs", func(t *testing.T) { pauseReleasingIPs(ctx, t, e, name, k) })
}

// pauseReleasingIPs pauses name with --release-ips and park_for, then resumes it.
func pauseReleasingIPs(ctx context.Context, t *testing.T, e *env, name string, k *kube) {
	if code, obj, err := k.do(ctx, http.MethodPost, "/api/v1/namespaces/default/secrets",
		map[string]any{"metadata": map[string]any{"name": "db"}, "stringData": map[string]any{"password": "hunter2"}}); err != nil || code != http.StatusCreated {
		t.Fatalf("create Secret: %d %v %v", code, obj, err)
	}
	ipsBefore := e.inventoryOf("instance_ip", name)
	ordersBefore, _ := e.bmCalls()
	if _, err := e.ops.Pause(ctx, clusterops.Intent{Cluster: name, RequestedBy: "alice", Command: "pause", ReleaseIPs: true, ParkFor: time.Hour}); err != nil {
		t.Fatalf("pause --release-ips: %v", err)
	}
	if left := e.inventoryOf("instance_ip", name); len(left) != 0 {
		t.Fatalf("reserved IPs left after --release-ips: %v", left)
	}
	if got := e.inventoryOf("instance_security_group", name); len(got) != 1 {
		t.Fatalf("security group after the pause: %v", got)
	}
	// Failed before the pause removed them: they named the IPs given back.
	names, zone := e.spec.DNSNames(name), e.spec.DNSZone
	for _, r := range e.w.Scaleway.DNSRecords(zone) {
		if r.Name == names.API || r.Name == names.Edge {
			t.Errorf("after the pause, %s.%s points at %s, an address the cluster gave back", r.Name, zone, r.Data)
		}
	}
	resumed, err := e.ops.Up(ctx, clusterops.Intent{Cluster: name, Spec: e.spec, RequestedBy: "alice", Command: "resume"})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if orders, _ := e.bmCalls(); orders != ordersBefore {
		t.Errorf("the resume ordered %d Elastic Metal server(s): the parked worker was not adopted", orders-ordersBefore)
	}
	ipsAfter := e.inventoryOf("instance_ip", name)
	if len(ipsAfter) != 3 || slices.Equal(ipsAfter, ipsBefore) {
		t.Fatalf("IPs after the resume %v, before %v: want three new ones", ipsAfter, ipsBefore)
	}
	e.dnsFollows(t, resumed.State, name)
	kc2, err := e.ops.Kubeconfig(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	code, obj, err := newKube(t, kc2).viaDNS(e, e.spec.DNSZone).do(ctx, http.MethodGet, "/api/v1/namespaces/default/secrets/db", nil)
	if d, _ := obj["data"].(map[string]any); err != nil || code != http.StatusOK || d["password"] == nil {
		t.Fatalf("Secret after the resume on new IPs: %d %v %v", code, obj, err)
	}
}

// dnsFollows checks the cluster's records: the API name resolves to the control planes' IPs, the
// edge name to the worker's, as st records them.
func (e *env) dnsFollows(t *testing.T, st *provision.State, name string) {
	t.Helper()
	names := e.spec.DNSNames(name)
	want := map[string][]string{names.Edge: {st.Resources[scaleway.NodeWorker].Attrs["ipv4"]}}
	for i := range e.spec.CPCount {
		want[names.API] = append(want[names.API], st.Resources[scaleway.NodeIP(i)].Attrs["address"])
	}
	got := map[string][]string{}
	for _, r := range e.w.Scaleway.DNSRecords(e.spec.DNSZone) {
		got[r.Name] = append(got[r.Name], r.Data)
	}
	for n := range want {
		slices.Sort(want[n])
		slices.Sort(got[n])
		if !slices.Equal(got[n], want[n]) || slices.Contains(want[n], "") {
			t.Errorf("DNS %s after the resume on new IPs = %v, want %v", n, got[n], want[n])
		}
	}
}

// notesObserver keeps the details of the engine's step events.
type notesObserver struct {
	mu    sync.Mutex
	notes []string
}

func (*notesObserver) Admitted(clusterops.Outcome) {}

func (n *notesObserver) Step(ev provision.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, ev.Detail)
}
