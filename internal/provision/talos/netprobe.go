package talos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The pod-network check: a probe pod on every node (spec.nodeName, tolerating every taint, in the
// pod network) opens an HTTP connection to every other node's Cilium health endpoint (CiliumNode
// spec.health.ipv4, port 4240, GET /hello → 200: cilium pkg/health/probe/responder). Each pair
// of nodes is so tried in both directions, pod to pod: the traffic tunnel mode carries as VXLAN
// inside WireGuard between the node addresses (doc.go, "Routing").
//
// The image is the Cilium agent's, pinned by digest and already on every node (the agent runs
// there): bash's /dev/tcp and coreutils' timeout do the probe, no other image is pulled.

const (
	probeLabel    = "app=poc-netprobe"
	probePrefix   = "poc-netprobe-"
	probeDeadline = 60 * time.Second // the pods' activeDeadlineSeconds
	// probeWait is how long one CheckReady waits for the probe pods it started; a round that
	// does not see them finish reports them running and the next round reads them.
	probeWait = 20 * time.Second
)

// probeScript tries every "address:port" argument at once (5 s each) and prints a line per
// target, "ok TARGET" or "fail TARGET WHY"; it exits 1 when a target failed.
const probeScript = `probe() {
  local out
  if out=$(timeout 5 bash -c 'exec 3<>"/dev/tcp/${0%:*}/${0##*:}" && printf "GET /hello HTTP/1.0\r\n\r\n" >&3 && IFS= read -r l <&3 && printf %s "$l"' "$1" 2>&1) && [[ $out == HTTP/*" 200"* ]]; then
    echo "ok $1"
  else
    out=${out//$'\n'/; }
    echo "fail $1 ${out:-timeout}"
    return 1
  fi
}
pids=()
for t in "$@"; do probe "$t" & pids+=($!); done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc`

type probe struct {
	Metadata struct {
		Name              string     `json:"name"`
		CreationTimestamp time.Time  `json:"creationTimestamp"`
		DeletionTimestamp *time.Time `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		NodeName string `json:"nodeName"`
	} `json:"spec"`
	Status struct {
		Phase   string `json:"phase"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"status"`
}

func (p probe) final() bool { return p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" }

// stale: older than a probe can take (its deadline and one round's wait).
func (p probe) stale() bool {
	return time.Since(p.Metadata.CreationTimestamp) > probeDeadline+probeWait
}

// podNetwork runs the probe when the nodes and the agents are ready (prereq), or reads the probe
// a previous round started.
func (k *kubeClient) podNetwork(ctx context.Context, prereq bool) CheckResult {
	c := CheckResult{Name: CheckPodNetwork, Try: "kubectl -n kube-system get pods -l " + probeLabel + " -o wide"}
	probes, err := k.probes(ctx)
	if err != nil {
		c.Detail = "cannot list the probe pods: " + err.Error()
		return c
	}
	health, herr := k.healthEndpoints(ctx)
	if slices.ContainsFunc(probes, probe.stale) && !slices.ContainsFunc(probes, func(p probe) bool { return !p.final() }) {
		// A result from an earlier check (a status an hour ago) says nothing of the network now.
		k.deleteProbes(ctx, probes)
		probes = nil
	}
	if len(probes) == 0 {
		if !prereq {
			c.Detail, c.Try = "not run: needs every node Ready and the Cilium agents up (see above)", ""
			return c
		}
		if herr != nil {
			c.Detail, c.Try = "cannot read the Cilium health endpoints: "+herr.Error(), "kubectl get ciliumnodes -o wide"
			return c
		}
		if probes, err = k.startProbes(ctx, health); err != nil {
			c.Detail = "cannot start the probe: " + err.Error()
			return c
		}
	}
	probes = k.awaitProbes(ctx, probes)
	if i := slices.IndexFunc(probes, func(p probe) bool { return !p.final() }); i >= 0 {
		p := probes[i]
		age := time.Since(p.Metadata.CreationTimestamp)
		if !p.stale() {
			c.Detail = fmt.Sprintf("probe running (%s on %s: %s)", p.Metadata.Name, p.Spec.NodeName, p.Status.Phase)
			return c
		}
		k.deleteProbes(ctx, probes)
		c.Detail = fmt.Sprintf("probe %s on %s still %s after %s %s", p.Metadata.Name, p.Spec.NodeName, p.Status.Phase, age.Round(time.Second), p.Status.Message)
		c.Try = "kubectl -n kube-system describe pods -l " + probeLabel + " (the pod needs its node's pod network and the Cilium agent image)"
		return c
	}
	failed := k.probeFailures(ctx, probes, health)
	k.deleteProbes(ctx, probes)
	c.OK = len(failed) == 0
	if c.OK {
		c.Detail, c.Try = fmt.Sprintf("pods on %d nodes reach every other node's pods", len(probes)), ""
		return c
	}
	c.Detail = "pod → pod across nodes fails: " + strings.Join(failed, ", ")
	c.Explain = k.ciliumLogs(ctx)
	c.Try = tunnelNeeds
	return c
}

// probes are the probe pods not being deleted.
func (k *kubeClient) probes(ctx context.Context) ([]probe, error) {
	var list struct {
		Items []probe `json:"items"`
	}
	err := k.getJSON(ctx, "/api/v1/namespaces/kube-system/pods?labelSelector="+url.QueryEscape(probeLabel), &list)
	return slices.DeleteFunc(list.Items, func(p probe) bool { return p.Metadata.DeletionTimestamp != nil }), err
}

// healthEndpoints are the nodes' Cilium health endpoints (node name → address).
func (k *kubeClient) healthEndpoints(ctx context.Context) (map[string]string, error) {
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				Health struct {
					IPv4 string `json:"ipv4"`
				} `json:"health"`
			} `json:"spec"`
		} `json:"items"`
	}
	if err := k.getJSON(ctx, "/apis/cilium.io/v2/ciliumnodes", &list); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range list.Items {
		if n.Spec.Health.IPv4 != "" {
			out[n.Metadata.Name] = n.Spec.Health.IPv4
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("%d CiliumNodes with a health endpoint, want every node's", len(out))
	}
	return out, nil
}

// startProbes creates a probe pod on every node with a health endpoint, each aimed at every other
// node's. The names carry the round (a pod of an earlier round may still be terminating); a
// check running at the same time (a status during an up) starts its own and reads both.
func (k *kubeClient) startProbes(ctx context.Context, health map[string]string) ([]probe, error) {
	round := strconv.FormatInt(time.Now().UnixMilli()%(1<<32), 36)
	nodes := make([]string, 0, len(health))
	for n := range health {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, node := range nodes {
		var targets []string
		for _, other := range nodes {
			if other != node {
				targets = append(targets, net.JoinHostPort(health[other], strconv.Itoa(netpolicy.PortCiliumHealth)))
			}
		}
		body, err := json.Marshal(probePod(node, round, targets))
		if err != nil {
			return nil, err
		}
		if _, err := k.send(ctx, http.MethodPost, "/api/v1/namespaces/kube-system/pods", body); err != nil {
			return nil, err
		}
	}
	return k.probes(ctx)
}

// probePod is the probe pod of a round for node, aimed at targets.
func probePod(node, round string, targets []string) doc {
	return doc{"apiVersion": "v1", "kind": "Pod",
		"metadata": doc{"name": probePrefix + node + "-" + round, "namespace": "kube-system", "labels": doc{"app": strings.TrimPrefix(probeLabel, "app=")}},
		"spec": doc{
			"nodeName": node, "restartPolicy": "Never", "activeDeadlineSeconds": int(probeDeadline / time.Second),
			"terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
			"tolerations": []doc{{"operator": "Exists"}},
			"containers": []doc{{"name": "probe", "image": CiliumAgentImage, "imagePullPolicy": "IfNotPresent",
				"command": []string{"/bin/bash", "-c", probeScript, "netprobe"}, "args": targets}},
		}}
}

// awaitProbes polls the probe pods until each is final, probeWait passes or ctx ends; it returns
// the last list read (the given one when no read worked).
func (k *kubeClient) awaitProbes(ctx context.Context, probes []probe) []probe {
	ctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	for slices.ContainsFunc(probes, func(p probe) bool { return !p.final() }) {
		select {
		case <-ctx.Done():
			return probes
		case <-time.After(retryEvery(ctx)):
		}
		if p, err := k.probes(ctx); err == nil && len(p) > 0 {
			probes = p
		}
	}
	return probes
}

// probeFailures are the failed connections of the finished probe pods, "src → dst (target): why".
func (k *kubeClient) probeFailures(ctx context.Context, probes []probe, health map[string]string) []string {
	owner := map[string]string{}
	for n, ip := range health {
		owner[net.JoinHostPort(ip, strconv.Itoa(netpolicy.PortCiliumHealth))] = n
	}
	var out []string
	for _, p := range probes {
		if p.Status.Phase == "Succeeded" {
			continue
		}
		b, err := k.get(ctx, "/api/v1/namespaces/kube-system/pods/"+p.Metadata.Name+"/log")
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %s, log unreadable: %v", p.Spec.NodeName, p.Status.Phase, err))
			continue
		}
		n := len(out)
		for _, l := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(l, "fail ")
			if !ok {
				continue
			}
			target, why, _ := strings.Cut(rest, " ")
			out = append(out, fmt.Sprintf("%s → %s (%s): %s", p.Spec.NodeName, cmp.Or(owner[target], "?"), target, why))
		}
		if len(out) == n {
			out = append(out, fmt.Sprintf("%s: %s %s", p.Spec.NodeName, p.Status.Reason, p.Status.Message))
		}
	}
	return out
}

// deleteProbes removes the probe pods (best effort: the next round deletes what is left).
func (k *kubeClient) deleteProbes(ctx context.Context, probes []probe) {
	for _, p := range probes {
		_, _ = k.send(ctx, http.MethodDelete, "/api/v1/namespaces/kube-system/pods/"+p.Metadata.Name, nil)
	}
}
