package clusterops

import (
	"net"
	"strconv"
	"strings"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
)

// Endpoints are a cluster's API addresses as its users reach them, from its state: the
// Kubernetes API (host:port of the DNS name when a zone is set, else of every control plane) and
// every node's Talos API. The ports are netpolicy.PortKubeAPI and netpolicy.PortApid.
func Endpoints(st *provision.State) (kube, talosAPI []string) {
	nodes := splitList(st.Outputs[cluster.OutTalosNodes])
	if st.Spec.DNSZone != "" {
		kube = []string{strings.TrimSuffix(strings.TrimPrefix(st.Outputs[cluster.OutAPIEndpoint], "https://"), "/")}
	} else {
		for _, ip := range nodes {
			kube = append(kube, net.JoinHostPort(ip, strconv.Itoa(netpolicy.PortKubeAPI)))
		}
	}
	for _, ip := range nodes {
		talosAPI = append(talosAPI, net.JoinHostPort(ip, strconv.Itoa(netpolicy.PortApid)))
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
