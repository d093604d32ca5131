package talos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// The modeled cluster network: what a control plane's Kubernetes API reports about the nodes,
// the Cilium agents and operator, CoreDNS, and what its API server reaches through the pods
// proxy, all derived from the nodes' configs (the Cilium install's values, the ingress firewall),
// the network in front of each node (NodeOptions.Network) and each node's segment
// (NodeOptions.Subnet, Gateway). Contract rows in doc.go, "Contract: cluster network".

// Ports of the model (Cilium's, CoreDNS's): the stand-in's own reading of Cilium, not the bot's
// network-policy table, so that a wrong port in the table fails here.
const (
	vxlanPort      = 8472
	wireguardPort  = 51871
	healthPort     = 4240
	coreDNSReady   = 8181
	coreDNSReplica = 2
)

// cniValues are the CNI as the manifest controller installed it in the keyspace: its DaemonSet
// "cilium" and its ConfigMap "cilium-config" in kube-system, whose keys are Cilium's agent
// options (routing-mode, auto-direct-node-routes, enable-wireguard).
type cniValues struct {
	installed  bool
	at         time.Time // the DaemonSet created: the agents start from then
	native     bool      // routing-mode: native
	autoDirect bool      // auto-direct-node-routes: "true"
	wireguard  bool      // enable-wireguard: "true"
}

func (n *Node) cniOf(cl *clusterState) cniValues {
	d, err := n.apiStore(cl)
	if err != nil {
		return cniValues{}
	}

	if _, ok := d.get("/registry/daemonsets/kube-system/cilium"); !ok {
		return cniValues{}
	}

	kv, ok := d.get("/registry/configmaps/kube-system/cilium-config")
	if !ok {
		return cniValues{}
	}

	var cm struct {
		Data map[string]string `json:"data"`
	}
	if json.Unmarshal(kv.Value, &cm) != nil {
		return cniValues{}
	}

	cl.mu.Lock()
	at, ok := cl.applied[d]
	if !ok { // restored from a snapshot that held it: the agents start with etcd
		at = time.Time{}
		for _, m := range cl.members {
			if m.data == d && (at.IsZero() || m.since.Before(at)) {
				at = m.since
			}
		}
	}
	cl.mu.Unlock()

	return cniValues{installed: true, at: at, native: cm.Data["routing-mode"] == "native", autoDirect: cm.Data["auto-direct-node-routes"] == "true",
		wireguard: cm.Data["enable-wireguard"] == "true"}
}

// netNode is one node of the cluster as the model sees it.
type netNode struct {
	n       *Node
	cfg     config.Provider
	name    string
	addr    netip.Addr
	subnet  netip.Prefix
	gateway netip.Addr
	cp      bool
	podCIDR netip.Prefix
	since   time.Time // registered (control plane: API up; worker: trusted); zero: not yet
	// pullBlocked: the node cannot pull the agent's image (NodeOptions.ImagePullBlocked).
	pullBlocked bool
}

// netNodes lists the cluster's configured nodes, control planes first, each with its pod CIDR
// (10.244.<i>.0/24, as the controller manager hands out /24s of the cluster's pod CIDR).
func (cl *clusterState) netNodes() []netNode {
	cl.mu.Lock()
	nodes := slices.Clone(cl.nodes)
	cl.mu.Unlock()
	var out []netNode
	for _, n := range nodes {
		n.mu.Lock()
		cfg, since := n.cfg, n.kubeSince
		if cfg != nil && !cfg.Machine().Type().IsControlPlane() {
			since = n.joinedAt
		}
		n.mu.Unlock()
		if cfg == nil {
			continue
		}
		a := n.address()
		nn := netNode{n: n, cfg: cfg, addr: a, subnet: n.opts.Subnet, gateway: n.opts.Gateway, cp: cfg.Machine().Type().IsControlPlane(), since: since,
			pullBlocked: n.opts.ImagePullBlocked != nil && n.opts.ImagePullBlocked()}
		if !nn.subnet.IsValid() {
			nn.subnet = netip.PrefixFrom(a, a.BitLen())
		}
		nn.name = "talos-" + strings.ReplaceAll(a.String(), ".", "-")
		if h := cfg.NetworkHostnameConfig(); h != nil && h.Hostname() != "" {
			nn.name = h.Hostname()
		}
		out = append(out, nn)
	}
	slices.SortStableFunc(out, func(a, b netNode) int {
		if a.cp != b.cp {
			if a.cp {
				return -1
			}
			return 1
		}
		return a.addr.Compare(b.addr)
	})
	for i := range out {
		out[i].podCIDR = netip.MustParsePrefix(fmt.Sprintf("10.244.%d.0/24", i))
	}
	return out
}

// admits: the network in front of to, then to's firewall, let a new flow from's address in.
func (to netNode) admits(from netip.Addr, proto nethelpers.Protocol, port int) bool {
	name := "TCP"
	if proto == nethelpers.ProtocolUDP {
		name = "UDP"
	}
	if to.n.opts.Network != nil && !to.n.opts.Network(from, name, port) {
		return false
	}
	return firewallAdmits(to.cfg, from, to.addr, proto, port)
}

// netState is the Kubernetes view of the network at one moment, from the API server on self.
type netState struct {
	nodes   []netNode
	cni     cniValues
	ready   map[string]bool     // node name → its Cilium agent is ready (and so the node)
	logs    map[string][]string // node name → its Cilium agent's log lines
	coredns []corePod
}

type corePod struct {
	name string
	ip   netip.Addr
	node netNode
}

func (n *Node) netState() netState {
	n.mu.Lock()
	cl, cfg := n.cluster, n.cfg
	n.mu.Unlock()
	st := netState{ready: map[string]bool{}, logs: map[string][]string{}}
	if cl == nil || cfg == nil {
		return st
	}
	st.nodes, st.cni = cl.netNodes(), n.cniOf(cl)
	now := time.Now()
	for _, nn := range st.nodes {
		st.ready[nn.name] = st.cni.installed && !nn.pullBlocked && !nn.since.IsZero() && now.Sub(maxTime(nn.since, st.cni.at)) >= n.opts.Latency.CNIReady
		st.logs[nn.name] = append(st.logs[nn.name], `level=info msg="Cilium agent starting"`)
	}
	// Direct node routes: every agent tries one to every other node (cilium pkg/datapath/linux/
	// node.go, createDirectRouteSpec), refused when the node is reached through a gateway.
	if st.cni.native && st.cni.autoDirect {
		for _, a := range st.nodes {
			for _, b := range st.nodes {
				if a.name != b.name && !sameSegment(a, b) {
					st.logs[a.name] = append(st.logs[a.name], fmt.Sprintf(
						`level=warning msg="Unable to install direct node route" subsys=linux-datapath error="route to destination %s contains gateway %s, must be directly reachable"`,
						b.addr, gatewayOf(a)))
				}
			}
		}
	}
	// CoreDNS: its replicas run on the worker (the control planes are tainted NoSchedule, the
	// stricter reading of where the scheduler puts them), on a control plane without a worker.
	host := st.nodes[len(st.nodes)-1]
	for i := range coreDNSReplica {
		b := host.podCIDR.Addr().As4()
		b[3] = byte(10 + i)
		st.coredns = append(st.coredns, corePod{name: fmt.Sprintf("coredns-%d", i), ip: netip.AddrFrom4(b), node: host})
	}
	return st
}

func gatewayOf(n netNode) netip.Addr {
	if n.gateway.IsValid() {
		return n.gateway
	}
	return n.subnet.Masked().Addr().Next()
}

// sameSegment: each node's address is inside the other's segment (one L2 network, no gateway).
func sameSegment(a, b netNode) bool {
	return a.subnet.Bits() < 32 && a.subnet.Contains(b.addr) && b.subnet.Contains(a.addr)
}

// crossNode is a new flow of Cilium's datapath from a node's host (pod false) or one of its pods
// (pod true) to a pod on another node, or why it is lost:
//   - tunnel mode with WireGuard: every overlay packet, a host's as a pod's, is VXLAN-encapsulated
//     and then encrypted (cilium bpf/lib/wireguard.h, wg_maybe_redirect_to_encrypt: ctx_is_overlay
//     → overlay_encrypt, before the HOST_ID check; cilium PR #29000, the default since v1.15).
//     On the wire it is WireGuard (UDP 51871) between the node addresses, judged by the
//     destination's security group and Talos firewall; decrypted on cilium_wg0 it is VXLAN
//     (UDP 8472) from the source node's address, which Talos's ingress chain judges again
//     (nftables_chain_config.go exempts lo, siderolink and kubespan only);
//   - tunnel mode without encryption: VXLAN (UDP 8472) between the node addresses;
//   - native routing: a pod's packet to a remote pod is redirected to WireGuard (UDP 51871, no
//     route needed); a host's is not encrypted (the HOST_ID check) and needs a route to the
//     pod's node: auto direct node routes on one segment (pkg/datapath/linux/node.go,
//     createDirectRouteSpec refuses a node behind a gateway).
//
// Replies of an admitted flow are established traffic (Talos's chain accepts ct established; the
// security group is stateful), so one direction is judged per flow.
func (st netState) crossNode(from, to netNode, pod bool) error {
	udp := nethelpers.ProtocolUDP
	switch {
	case !st.cni.native && st.cni.wireguard:
		if !to.admits(from.addr, udp, wireguardPort) {
			return fmt.Errorf("WireGuard (UDP %d) from %s dropped by %s's network policy", wireguardPort, from.addr, to.name)
		}
		if !firewallAdmits(to.cfg, from.addr, to.addr, udp, vxlanPort) {
			return fmt.Errorf("the decrypted VXLAN (UDP %d) from %s dropped by %s's Talos firewall", vxlanPort, from.addr, to.name)
		}
	case !st.cni.native:
		if !to.admits(from.addr, udp, vxlanPort) {
			return fmt.Errorf("VXLAN (UDP %d) from %s dropped by %s's network policy", vxlanPort, from.addr, to.name)
		}
	case pod && st.cni.wireguard:
		if !to.admits(from.addr, udp, wireguardPort) {
			return fmt.Errorf("WireGuard (UDP %d) from %s dropped by %s's network policy", wireguardPort, from.addr, to.name)
		}
	case !st.cni.autoDirect || !sameSegment(from, to):
		return fmt.Errorf("no route from %s to %s's pod CIDR %s (native routing across a gateway)", from.name, to.name, to.podCIDR)
	}
	return nil
}

// hostToPod is the path from a node's host (the API server there) to a pod on another node.
func (st netState) hostToPod(from, to netNode) error {
	if from.name == to.name {
		return nil
	}
	return st.crossNode(from, to, false)
}

// podToPod is the path from a pod on one node to a pod on another.
func (st netState) podToPod(from, to netNode) error {
	if from.name == to.name {
		return nil
	}
	return st.crossNode(from, to, true)
}

// healthIP is a node's Cilium health endpoint: an address of its pod CIDR (CiliumNode
// spec.health.ipv4), serving HTTP on 4240.
func healthIP(nn netNode) netip.Addr {
	return nn.podCIDR.Addr().Next().Next()
}

// serveNetwork adds the Kubernetes API reads of the model to a control plane's API mux.
func (n *Node) serveNetwork(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/nodes", func(w http.ResponseWriter, _ *http.Request) {
		st := n.netState()
		var items []any
		for _, nn := range st.nodes {
			cond := map[string]string{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
			if !st.ready[nn.name] {
				cond = map[string]string{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
					"message": "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}
			}
			items = append(items, map[string]any{
				"metadata": map[string]any{"name": nn.name},
				"spec":     map[string]any{"podCIDR": nn.podCIDR.String()},
				"status": map[string]any{"conditions": []any{cond},
					"addresses": []any{map[string]string{"type": "InternalIP", "address": nn.addr.String()}}},
			})
		}
		netJSON(w, map[string]any{"kind": "NodeList", "apiVersion": "v1", "items": items})
	})
	mux.HandleFunc("GET /apis/cilium.io/v2/ciliumnodes", func(w http.ResponseWriter, _ *http.Request) {
		netJSON(w, map[string]any{"kind": "CiliumNodeList", "apiVersion": "cilium.io/v2", "items": n.netState().ciliumNodes()})
	})
	n.serveProbes(mux)
	mux.HandleFunc("GET /apis/apps/v1/namespaces/kube-system/daemonsets/cilium", func(w http.ResponseWriter, _ *http.Request) {
		st := n.netState()
		if !st.cni.installed {
			netNotFound(w, "daemonsets.apps", "cilium")
			return
		}
		ready := 0
		for _, nn := range st.nodes {
			if st.ready[nn.name] {
				ready++
			}
		}
		netJSON(w, map[string]any{"kind": "DaemonSet", "metadata": map[string]any{"name": "cilium", "namespace": "kube-system"},
			"status": map[string]any{"desiredNumberScheduled": len(st.nodes), "numberReady": ready, "numberAvailable": ready}})
	})
	mux.HandleFunc("GET /apis/apps/v1/namespaces/kube-system/deployments/{name}", func(w http.ResponseWriter, r *http.Request) {
		st := n.netState()
		name := r.PathValue("name")
		replicas, ready := 0, 0
		switch name {
		case "cilium-operator":
			if !st.cni.installed {
				netNotFound(w, "deployments.apps", name)
				return
			}
			replicas = 1
			if slices.ContainsFunc(st.nodes, func(nn netNode) bool { return nn.cp && st.ready[nn.name] }) {
				ready = 1
			}
		case "coredns":
			replicas = len(st.coredns)
			for _, p := range st.coredns {
				if st.ready[p.node.name] {
					ready++
				}
			}
		default:
			netNotFound(w, "deployments.apps", name)
			return
		}
		netJSON(w, map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": "kube-system"},
			"spec": map[string]any{"replicas": replicas}, "status": map[string]any{"replicas": replicas, "readyReplicas": ready}})
	})
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/pods", func(w http.ResponseWriter, r *http.Request) {
		st := n.netState()
		var items []any
		pod := func(name, node, ip, hostIP string, ready bool, containers ...any) {
			s := "False"
			if ready {
				s = "True"
			}
			status := map[string]any{"podIP": ip, "hostIP": hostIP, "conditions": []any{map[string]string{"type": "Ready", "status": s}}}
			if containers != nil {
				status["containerStatuses"] = containers
			}
			items = append(items, map[string]any{"metadata": map[string]any{"name": name, "namespace": "kube-system"},
				"spec": map[string]any{"nodeName": node}, "status": status})
		}
		switch r.URL.Query().Get("labelSelector") {
		case "k8s-app=kube-dns":
			for _, p := range st.coredns {
				pod(p.name, p.node.name, p.ip.String(), p.node.addr.String(), st.ready[p.node.name])
			}
		case "k8s-app=cilium":
			if st.cni.installed {
				for _, nn := range st.nodes {
					pod("cilium-"+nn.name, nn.name, nn.addr.String(), nn.addr.String(), st.ready[nn.name], agentStatus(st.ready[nn.name], nn.pullBlocked))
				}
			}
		default:
			items = append(items, n.probePods(r.URL.Query().Get("labelSelector"), st)...)
		}
		netJSON(w, map[string]any{"kind": "PodList", "items": items})
	})
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/pods/{pod}/log", func(w http.ResponseWriter, r *http.Request) {
		st := n.netState()
		if log, ok := n.probeLog(r.PathValue("pod"), st); ok {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte(log))
			return
		}
		name := strings.TrimPrefix(r.PathValue("pod"), "cilium-")
		lines, ok := st.logs[name]
		if !ok || !st.cni.installed {
			netNotFound(w, "pods", r.PathValue("pod"))
			return
		}
		if tail, err := strconv.Atoi(r.URL.Query().Get("tailLines")); err == nil && tail < len(lines) {
			lines = lines[len(lines)-tail:]
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte(strings.Join(lines, "\n") + "\n"))
	})
	// The API server's proxy to a pod: it dials the pod from its own host.
	mux.HandleFunc("GET /api/v1/namespaces/kube-system/pods/{pod}/proxy/{path...}", func(w http.ResponseWriter, r *http.Request) {
		st := n.netState()
		name, port, _ := strings.Cut(r.PathValue("pod"), ":")
		i := slices.IndexFunc(st.coredns, func(p corePod) bool { return p.name == name })
		if i < 0 {
			netNotFound(w, "pods", name)
			return
		}
		p := st.coredns[i]
		self := slices.IndexFunc(st.nodes, func(nn netNode) bool { return nn.addr == n.address() })
		if port != strconv.Itoa(coreDNSReady) || r.PathValue("path") != "ready" || self < 0 {
			http.Error(w, "not modeled", http.StatusNotFound)
			return
		}
		if !st.ready[p.node.name] {
			http.Error(w, fmt.Sprintf("error trying to reach service: dial tcp %s:%s: connect: connection refused", p.ip, port), http.StatusServiceUnavailable)
			return
		}
		if err := st.hostToPod(st.nodes[self], p.node); err != nil {
			n.log.Debug("modeled host-to-pod path fails", "err", err)
			http.Error(w, fmt.Sprintf("error trying to reach service: dial tcp %s:%s: i/o timeout", p.ip, port), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("OK"))
	})
}

// agentImage is the image the agent's container status names (the chart pins it by digest; the
// stand-in does not read it back from the DaemonSet).
const agentImage = "quay.io/cilium/cilium"

// agentStatus is the cilium-agent container's status (core/v1 ContainerStatus): running once
// ready; waiting ImagePullBackOff when its node cannot pull the image (the kubelet's reason and
// message after failed pulls); waiting ContainerCreating before.
func agentStatus(ready, pullBlocked bool) map[string]any {
	state := map[string]any{"running": map[string]any{"startedAt": time.Now().UTC().Format(time.RFC3339)}}
	switch {
	case pullBlocked:
		state = map[string]any{"waiting": map[string]any{"reason": "ImagePullBackOff", "message": fmt.Sprintf("Back-off pulling image %q", agentImage)}}
	case !ready:
		state = map[string]any{"waiting": map[string]any{"reason": "ContainerCreating"}}
	}
	return map[string]any{"name": "cilium-agent", "image": agentImage, "ready": ready, "started": ready, "restartCount": 0, "state": state}
}

func netJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func netNotFound(w http.ResponseWriter, kind, name string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404,
		"message": fmt.Sprintf("%s %q not found", kind, name)})
}

// kubeletVersion is the Kubernetes version of a config, from its kubelet image's tag.
func kubeletVersion(cfg config.Provider) string {
	if k := cfg.K8sKubeletConfig(); k != nil {
		if i := strings.LastIndex(k.Image(), ":"); i >= 0 {
			return strings.TrimSuffix(k.Image()[i+1:], "-fat")
		}
	}
	return ""
}
