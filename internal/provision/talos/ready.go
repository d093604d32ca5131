package talos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Names of the readiness checks, as replies and `bot status` show them.
const (
	CheckNodes   = "nodes"       // every node registered and Ready
	CheckCilium  = "cilium"      // the Cilium agents (DaemonSet) and operator ready
	CheckDNS     = "cluster-dns" // CoreDNS's replicas ready (each reached the API from its pod)
	CheckRouting = "routing"     // the API server's host reaches every CoreDNS pod on another node
	// CheckPodNetwork: a pod on every node reaches every other node's Cilium health endpoint.
	CheckPodNetwork = "pod-network"
)

// ReadyChecks are the readiness checks in the order CheckReady reports them.
var ReadyChecks = []string{CheckNodes, CheckCilium, CheckDNS, CheckRouting, CheckPodNetwork}

// ReadyInput is what CheckReady needs of a cluster.
type ReadyInput struct {
	// Kubeconfig is the admin kubeconfig (client certificate and CA).
	Kubeconfig []byte
	// DialAddr is host:port to dial instead of the kubeconfig's server (a DNS name not yet
	// resolvable); empty: the server's own address.
	DialAddr string
	// Nodes is how many nodes the cluster has (control planes and worker).
	Nodes int
}

// CheckResult is one readiness check: what it says, the events or log lines that explain a
// failure, and what to try.
type CheckResult struct {
	Name    string
	OK      bool
	Detail  string
	Explain []string
	Try     string
}

func (c CheckResult) String() string {
	s := c.Name + ": " + c.Detail
	if len(c.Explain) > 0 {
		s += " [" + strings.Join(c.Explain, "; ") + "]"
	}
	if c.Try != "" {
		s += "; try: " + c.Try
	}
	return s
}

// CheckReady asks the Kubernetes API, once, whether the cluster's network works: the checks
// Talos's own end-to-end tests wait on (`cilium status --wait`, talos hack/test/e2e.sh @v1.13.9)
// plus DNS, a host-to-remote-pod path and a pod-to-pod probe across every pair of nodes, in the
// order of ReadyChecks. Every check is always reported; a check that cannot run says why. ctx
// bounds the whole.
func CheckReady(ctx context.Context, in ReadyInput) []CheckResult {
	k, err := newKubeClient(ctx, in.Kubeconfig, in.DialAddr)
	if err != nil {
		out := []CheckResult{}
		for _, n := range ReadyChecks {
			out = append(out, CheckResult{Name: n, Detail: err.Error(), Try: "run up again to fetch a new kubeconfig"})
		}
		return out
	}
	defer k.close()
	nodes, cilium := k.nodes(ctx, in.Nodes), k.cilium(ctx, in.Nodes)
	dns, routing := k.dns(ctx), k.routing(ctx)
	return []CheckResult{nodes, cilium, dns, routing, k.podNetwork(ctx, nodes.OK && cilium.OK)}
}

// WaitReady polls CheckReady until every check passes or ctx ends; the error names the checks
// that still fail, with what explains them and what to try.
func WaitReady(ctx context.Context, in ReadyInput) ([]CheckResult, error) {
	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()
	var last []CheckResult // the last round that ran whole: one cut by the deadline says nothing
	for {
		res := CheckReady(ctx, in)
		if ctx.Err() == nil || last == nil {
			last = res
		}
		if !slices.ContainsFunc(res, func(c CheckResult) bool { return !c.OK }) {
			return res, nil
		}
		select {
		case <-ctx.Done():
			var parts []string
			for _, c := range last {
				if !c.OK {
					parts = append(parts, c.String())
				}
			}
			return last, fmt.Errorf("cluster not ready (%w): %s", ctx.Err(), strings.Join(parts, " | "))
		case <-time.After(retryEvery(ctx)):
		}
	}
}

type kubeClient struct {
	server string
	httpc  *http.Client
	tr     *http.Transport
}

func newKubeClient(ctx context.Context, kubeconfig []byte, dialAddr string) (*kubeClient, error) {
	kc, err := parseKubeconfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	d := dialer(ctx)
	tr := &http.Transport{
		TLSClientConfig: kc.tls, TLSHandshakeTimeout: attemptTimeout,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dialAddr != "" {
				addr = dialAddr
			}
			return d.DialContext(ctx, network, addr)
		},
	}
	return &kubeClient{server: strings.TrimRight(kc.server, "/"), httpc: &http.Client{Transport: tr, Timeout: attemptTimeout}, tr: tr}, nil
}

func (k *kubeClient) close() { k.tr.CloseIdleConnections() }

// get reads path; a non-2xx answer is an error carrying the API's message.
func (k *kubeClient) get(ctx context.Context, path string) ([]byte, error) {
	return k.send(ctx, http.MethodGet, path, nil)
}

// send makes one request (body: JSON, or nil); a non-2xx answer is an error carrying the API's
// message.
func (k *kubeClient) send(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.server+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := k.httpc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close() //nolint:errcheck
	body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Message string `json:"message"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return nil, &apiError{code: resp.StatusCode, msg: msg}
	}
	return body, nil
}

type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.code, e.msg) }

func isNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == http.StatusNotFound
}

func (k *kubeClient) getJSON(ctx context.Context, path string, v any) error {
	b, err := k.get(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

type condition struct {
	Type, Status, Reason, Message string
}

func (k *kubeClient) nodes(ctx context.Context, want int) CheckResult {
	c := CheckResult{Name: CheckNodes}
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Status   struct {
				Conditions []condition `json:"conditions"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, "/api/v1/nodes", &list); err != nil {
		c.Detail, c.Try = "cannot list nodes: "+err.Error(), "check the Kubernetes API check above"
		return c
	}
	ready := 0
	for _, n := range list.Items {
		i := slices.IndexFunc(n.Status.Conditions, func(c condition) bool { return c.Type == "Ready" })
		if i >= 0 && n.Status.Conditions[i].Status == "True" {
			ready++
			continue
		}
		why := "no Ready condition yet"
		if i >= 0 {
			why = n.Status.Conditions[i].Reason + ": " + n.Status.Conditions[i].Message
		}
		c.Explain = append(c.Explain, n.Metadata.Name+" NotReady: "+why)
	}
	c.OK = ready == len(list.Items) && len(list.Items) >= want
	c.Detail = fmt.Sprintf("%d of %d nodes Ready (%d registered)", ready, want, len(list.Items))
	switch {
	case c.OK:
	case len(list.Items) < want:
		c.Try = "a node has not registered: its kubelet cannot reach the API (6443 from the node IPs); `bot status` shows which Talos API is down"
	default:
		c.Try = "a node without a network plugin stays NotReady: see the cilium check; `kubectl describe node NAME`"
	}
	return c
}

func (k *kubeClient) cilium(ctx context.Context, nodes int) CheckResult {
	c := CheckResult{Name: CheckCilium}
	var ds struct {
		Status struct {
			Desired int `json:"desiredNumberScheduled"`
			Ready   int `json:"numberReady"`
		} `json:"status"`
	}
	if err := k.getJSON(ctx, "/apis/apps/v1/namespaces/kube-system/daemonsets/cilium", &ds); err != nil {
		c.Detail = "Cilium agents: " + err.Error()
		if isNotFound(err) {
			c.Detail = "no Cilium DaemonSet: Talos has not applied the \"cilium\" inline manifest yet (it does once etcd is healthy)"
		}
		c.Try = "talosctl -n <control plane> get manifeststatus; talosctl -n <control plane> logs controller-runtime | grep ManifestApply"
		return c
	}
	op, opErr := k.deployment(ctx, "cilium-operator")
	agents := ds.Status.Ready == ds.Status.Desired && ds.Status.Desired >= nodes
	c.OK = agents && opErr == nil && op.ok()
	c.Detail = fmt.Sprintf("agents %d/%d ready", ds.Status.Ready, max(ds.Status.Desired, nodes))
	if opErr != nil {
		c.Detail += "; operator: " + opErr.Error()
	} else {
		c.Detail += fmt.Sprintf("; operator %d/%d ready", op.Status.Ready, op.Spec.Replicas)
	}
	if !c.OK {
		c.Try = "kubectl -n kube-system get pods -l k8s-app=cilium -o wide; kubectl -n kube-system logs ds/cilium"
		if agents, err := k.pods(ctx, "k8s-app=cilium"); err == nil {
			if pulls := pullFailures(agents); len(pulls) > 0 {
				// No agent log to read: the container never started.
				c.Explain = pulls
				c.Try = NodeEgressTry
				return c
			}
		}
		c.Explain = k.ciliumLogs(ctx)
	}
	return c
}

// NodeEgressTry is what to do when the nodes cannot pull an image: register row node-egress
// (docs/assumptions.md), which `bot doctor --live` probes from the runner.
const NodeEgressTry = "the nodes cannot pull an image (register row node-egress): let them reach its registry " +
	"(quay.io for Cilium; ghcr.io, registry.k8s.io and the Image Factory for Talos) through a firewall or proxy; " +
	"`bot doctor --live` probes the registries from the runner; then run down and up"

// pullFailures says, per pod, which container waits on an image it cannot pull (the kubelet's
// ErrImagePull and ImagePullBackOff reasons).
func pullFailures(pods []pod) []string {
	var out []string
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") {
				out = append(out, fmt.Sprintf("%s on %s: %s: %s", p.Metadata.Name, p.Spec.NodeName, w.Reason, cmp.Or(w.Message, cs.Image)))
			}
		}
	}
	return out
}

type deployment struct {
	Spec struct {
		Replicas int `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Ready int `json:"readyReplicas"`
	} `json:"status"`
}

func (d deployment) ok() bool { return d.Spec.Replicas > 0 && d.Status.Ready >= d.Spec.Replicas }

func (k *kubeClient) deployment(ctx context.Context, name string) (deployment, error) {
	var d deployment
	err := k.getJSON(ctx, "/apis/apps/v1/namespaces/kube-system/deployments/"+name, &d)
	return d, err
}

func (k *kubeClient) dns(ctx context.Context) CheckResult {
	c := CheckResult{Name: CheckDNS}
	d, err := k.deployment(ctx, "coredns")
	if err != nil {
		c.Detail, c.Try = "CoreDNS: "+err.Error(), "kubectl -n kube-system get deploy coredns"
		return c
	}
	c.OK = d.ok()
	c.Detail = fmt.Sprintf("CoreDNS %d/%d ready", d.Status.Ready, d.Spec.Replicas)
	if !c.OK {
		c.Try = "CoreDNS needs the pod network of its node (see the nodes and cilium checks); kubectl -n kube-system logs deploy/coredns"
	}
	return c
}

type pod struct {
	Metadata struct{ Name string } `json:"metadata"`
	Spec     struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		PodIP             string            `json:"podIP"`
		HostIP            string            `json:"hostIP"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

// containerStatus is what the checks read of core/v1 ContainerStatus.
type containerStatus struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	State struct {
		Waiting *struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"waiting"`
	} `json:"state"`
}

func (k *kubeClient) pods(ctx context.Context, selector string) ([]pod, error) {
	var list struct {
		Items []pod `json:"items"`
	}
	err := k.getJSON(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+url.QueryEscape(selector), &list)
	return list.Items, err
}

// routing: the API server (on the control plane the kubeconfig reaches) proxies a request to each
// CoreDNS pod's readiness endpoint: from its host to a pod on another node, the path that native
// routing across Scaleway's gateways breaks (cilium pkg/datapath/linux/node.go) and that tunnel
// mode carries as VXLAN inside WireGuard (doc.go, "Routing").
func (k *kubeClient) routing(ctx context.Context) CheckResult {
	c := CheckResult{Name: CheckRouting}
	pods, err := k.pods(ctx, "k8s-app=kube-dns")
	if err != nil || len(pods) == 0 {
		c.Detail = "no CoreDNS pod to probe"
		if err != nil {
			c.Detail += ": " + err.Error()
		}
		c.Try = "kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide"
		return c
	}
	var failed []string
	for _, p := range pods {
		if _, err := k.get(ctx, "/api/v1/namespaces/kube-system/pods/"+p.Metadata.Name+":8181/proxy/ready"); err != nil {
			failed = append(failed, fmt.Sprintf("%s (%s on %s): %v", p.Metadata.Name, p.Status.PodIP, p.Spec.NodeName, err))
		}
	}
	c.OK = len(failed) == 0
	if c.OK {
		c.Detail = fmt.Sprintf("API server reaches %d CoreDNS pods", len(pods))
		return c
	}
	c.Detail = "API server cannot reach " + strings.Join(failed, ", ")
	c.Explain = k.ciliumLogs(ctx)
	c.Try = tunnelNeeds + "; native routing needs every node on one L2 segment, which Scaleway's public addresses are not"
	return c
}

// tunnelNeeds is what the default routing mode needs of the network policy (doc.go, "Routing").
const tunnelNeeds = "tunnel mode with WireGuard needs UDP 51871 admitted between node addresses (security group and every node's Talos firewall) and UDP 8472 in every node's Talos firewall (the decrypted VXLAN): bot machineconfig shows the rules"

// ciliumLogs are the warning and error lines of the Cilium agents' recent logs.
func (k *kubeClient) ciliumLogs(ctx context.Context) []string {
	agents, err := k.pods(ctx, "k8s-app=cilium")
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range agents {
		b, err := k.get(ctx, "/api/v1/namespaces/kube-system/pods/"+a.Metadata.Name+"/log?tailLines=50")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "level=warning") || strings.Contains(l, "level=error") {
				if l = a.Metadata.Name + ": " + l; !slices.Contains(out, l) && len(out) < 6 {
					out = append(out, l)
				}
			}
		}
	}
	return out
}
