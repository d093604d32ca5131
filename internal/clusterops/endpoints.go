package clusterops

import (
	"net"
	"strconv"
	"strings"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
)

// Endpoints are a cluster's API addresses as its users reach them, from its state: the
// Kubernetes API (host:port of the DNS name when a zone is set, else of every control plane) and
// every node's Talos API. The ports are talos.PortKubeAPI and talos.PortApid.
func Endpoints(st *provision.State) (kube, talosAPI []string) {
	nodes := splitList(st.Outputs[cluster.OutTalosNodes])
	if st.Spec.DNSZone != "" {
		kube = []string{strings.TrimSuffix(strings.TrimPrefix(st.Outputs[cluster.OutAPIEndpoint], "https://"), "/")}
	} else {
		for _, ip := range nodes {
			kube = append(kube, net.JoinHostPort(ip, strconv.Itoa(talos.PortKubeAPI)))
		}
	}
	for _, ip := range nodes {
		talosAPI = append(talosAPI, net.JoinHostPort(ip, strconv.Itoa(talos.PortApid)))
	}
	return kube, talosAPI
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
