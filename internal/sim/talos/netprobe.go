package talos

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// The network probe pods: the one kind of pod a client may create (POST …/kube-system/pods).
// A probe pod runs on its spec.nodeName, in the pod network, and opens a TCP connection to each
// "address:port" of its arguments (bash's /dev/tcp with a GET, as the bot's probe does); its
// log has a line per target, "ok ADDR:PORT" or "fail ADDR:PORT WHY", and it ends Succeeded when
// every target answered, Failed otherwise. Contract rows in doc.go, "Contract: cluster network".

// probePod is a probe pod as the stand-in keeps it (not in etcd: see the contract).
type probePod struct {
	name    string
	labels  map[string]string
	node    string
	targets []string
	created time.Time
	// done: its phase is final, with lines its log and failed its outcome.
	done   bool
	failed bool
	lines  []string
}

// phase is the probe pod's phase now, running its probe once it is due: Pending until its node is
// Ready (its container needs the pod network), Running for Latency.NetProbe, then the outcome of
// its connections as the model judges them at that moment.
func (n *Node) phase(p *probePod, st netState) string {
	if p.done {
		if p.failed {
			return "Failed"
		}
		return "Succeeded"
	}
	i := slices.IndexFunc(st.nodes, func(nn netNode) bool { return nn.name == p.node })
	if i < 0 || !st.ready[p.node] {
		return "Pending"
	}
	src := st.nodes[i]
	start := p.created
	if ready := src.since.Add(n.opts.Latency.CNIReady); ready.After(start) {
		start = ready
	}
	if time.Since(start) < n.opts.Latency.NetProbe {
		return "Running"
	}
	p.done = true
	for _, t := range p.targets {
		line := "ok " + t
		if why := st.probeTarget(src, t); why != "" {
			line, p.failed = "fail "+t+" "+why, true
		}
		p.lines = append(p.lines, line)
	}
	return n.phase(p, st)
}

// probeTarget says why a connection from a pod on src to target ("address:port") fails, or "".
func (st netState) probeTarget(src netNode, target string) string {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return "bad target"
	}
	i := slices.IndexFunc(st.nodes, func(nn netNode) bool { return healthIP(nn) == ap.Addr() })
	if i < 0 || ap.Port() != healthPort {
		return "timeout" // nothing of the model listens there
	}
	dst := st.nodes[i]
	if !st.ready[dst.name] {
		return "connection refused"
	}
	if err := st.podToPod(src, dst); err != nil {
		return "timeout"
	}
	return ""
}

// probeJSON is a probe pod as the Kubernetes API shows it.
func (n *Node) probeJSON(p *probePod, st netState) map[string]any {
	phase := n.phase(p, st)
	status := map[string]any{"phase": phase}
	if i := slices.IndexFunc(st.nodes, func(nn netNode) bool { return nn.name == p.node }); i >= 0 {
		status["hostIP"] = st.nodes[i].addr.String()
		if phase != "Pending" {
			b := st.nodes[i].podCIDR.Addr().As4()
			b[3] = 200
			status["podIP"] = netip.AddrFrom4(b).String()
		}
	}
	return map[string]any{"kind": "Pod", "apiVersion": "v1",
		"metadata": map[string]any{"name": p.name, "namespace": "kube-system", "labels": p.labels, "creationTimestamp": p.created.UTC().Format(time.RFC3339)},
		"spec":     map[string]any{"nodeName": p.node}, "status": status}
}

// selects: a labelSelector of k=v terms, all of them matched.
func selects(selector string, labels map[string]string) bool {
	for _, term := range strings.Split(selector, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok || labels[k] != v {
			return false
		}
	}
	return true
}

// serveProbes adds the probe pods' create, list, log and delete to a control plane's API mux.
func (n *Node) serveProbes(mux *http.ServeMux) {
	cluster := func() *clusterState {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.cluster
	}
	mux.HandleFunc("POST /api/v1/namespaces/kube-system/pods", func(w http.ResponseWriter, r *http.Request) {
		var pod struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				NodeName   string `json:"nodeName"`
				Containers []struct {
					Image   string   `json:"image"`
					Command []string `json:"command"`
					Args    []string `json:"args"`
				} `json:"containers"`
			} `json:"spec"`
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil || json.Unmarshal(body, &pod) != nil {
			kubeStatus(w, http.StatusBadRequest, "BadRequest", "the body is not a Pod", nil)
			return
		}
		name := pod.Metadata.Name
		if !dns1123Subdomain.MatchString(name) || len(name) > 253 {
			kubeStatus(w, http.StatusUnprocessableEntity, "Invalid", fmt.Sprintf("Pod %q is invalid: metadata.name", name), nil)
			return
		}
		c := pod.Spec.Containers
		if len(c) != 1 || len(c[0].Command) == 0 || c[0].Command[0] != "/bin/bash" || pod.Spec.NodeName == "" {
			kubeStatus(w, http.StatusUnprocessableEntity, "Invalid", "not modeled: the stand-in runs only network probe pods (one /bin/bash container, spec.nodeName set)", nil)
			return
		}
		cl := cluster()
		if cl == nil {
			kubeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", "no cluster", nil)
			return
		}
		p := &probePod{name: name, labels: pod.Metadata.Labels, node: pod.Spec.NodeName, targets: c[0].Args, created: time.Now()}
		st := n.netState()
		cl.mu.Lock()
		if _, ok := cl.probes[name]; ok {
			cl.mu.Unlock()
			kubeStatus(w, http.StatusConflict, "AlreadyExists", fmt.Sprintf("pods %q already exists", name), nil)
			return
		}
		if cl.probes == nil {
			cl.probes = map[string]*probePod{}
		}
		cl.probes[name] = p
		obj := n.probeJSON(p, st)
		cl.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(obj)
	})
	mux.HandleFunc("DELETE /api/v1/namespaces/kube-system/pods/{pod}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("pod")
		if cl := cluster(); cl != nil {
			cl.mu.Lock()
			_, ok := cl.probes[name]
			delete(cl.probes, name)
			cl.mu.Unlock()
			if ok {
				netJSON(w, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
				return
			}
		}
		netNotFound(w, "pods", name)
	})
}

// probePods are the probe pods a selector picks, with their state now, by name.
func (n *Node) probePods(selector string, st netState) []any {
	n.mu.Lock()
	cl := n.cluster
	n.mu.Unlock()
	if cl == nil {
		return nil
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	var names []string
	for name, p := range cl.probes {
		if selects(selector, p.labels) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	out := make([]any, 0, len(names))
	for _, name := range names {
		out = append(out, n.probeJSON(cl.probes[name], st))
	}
	return out
}

// probeLog is a probe pod's log (its lines once done), and whether the pod exists.
func (n *Node) probeLog(name string, st netState) (string, bool) {
	n.mu.Lock()
	cl := n.cluster
	n.mu.Unlock()
	if cl == nil {
		return "", false
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	p, ok := cl.probes[name]
	if !ok {
		return "", false
	}
	n.phase(p, st)
	if len(p.lines) == 0 {
		return "", true
	}
	return strings.Join(p.lines, "\n") + "\n", true
}

// ciliumNodes is the CiliumNode list: each registered node's health endpoint address.
func (st netState) ciliumNodes() []any {
	var items []any
	if !st.cni.installed {
		return items
	}
	for _, nn := range st.nodes {
		if nn.since.IsZero() {
			continue
		}
		items = append(items, map[string]any{"apiVersion": "cilium.io/v2", "kind": "CiliumNode",
			"metadata": map[string]any{"name": nn.name},
			"spec": map[string]any{"health": map[string]any{"ipv4": healthIP(nn).String()},
				"addresses": []any{map[string]string{"type": "InternalIP", "ip": nn.addr.String()}}}})
	}
	return items
}
