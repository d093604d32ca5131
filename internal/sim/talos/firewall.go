package talos

import (
	"net"
	"net/netip"
	"slices"

	"github.com/siderolabs/talos/pkg/machinery/config"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// Network decides whether the network in front of a node lets a new inbound connection from src
// reach the node's port (proto "TCP" or "UDP"): the world puts the Scaleway security group there.
// It answers for the path to the node; the node's own ingress firewall is judged after it.
type Network func(src netip.Addr, proto string, port int) bool

// admits tells whether a new inbound TCP connection from src to port gets through the network in
// front of the node and then the node's own ingress firewall (the NetworkDefaultActionConfig and
// NetworkRuleConfig documents of the applied config).
func (n *Node) admits(src netip.Addr, port int) bool {
	if n.opts.Network != nil && !n.opts.Network(src, "TCP", port) {
		return false
	}

	n.mu.Lock()
	cfg := n.cfg
	n.mu.Unlock()

	return firewallAdmits(cfg, src, n.address(), nethelpers.ProtocolTCP, port)
}

// firewallAdmits is Talos's ingress chain for a new connection, as the NfTablesChainConfig
// controller builds it (internal/app/machined/pkg/controllers/network/nftables_chain_config.go,
// v1.13.9): no config or "accept" with no rules → no chain at all; "block" → accept what a rule
// matches (protocol, destination port range, source in a subnet and not in its except) and the
// Kubernetes pod/service subnets, drop the rest; "accept" → drop a connection to a rule's ports
// from a source outside the rule's subnets. The chain's first rule (accept on lo) is not modelled:
// every emulated node listens on loopback, which stands for a public interface here.
func firewallAdmits(cfg config.Provider, src, dst netip.Addr, proto nethelpers.Protocol, port int) bool {
	if cfg == nil {
		return true // maintenance mode: no machine config, no chain
	}

	fw := cfg.NetworkRules()
	rules := fw.Rules()
	block := fw.DefaultAction() == nethelpers.DefaultActionBlock

	if !block && len(rules) == 0 {
		return true
	}

	if block && podOrService(cfg, src) && podOrService(cfg, dst) {
		return true
	}

	for _, r := range rules {
		if r.Protocol() != proto || !inPorts(r.PortRanges(), port) {
			continue
		}

		inSubnets := slices.ContainsFunc(r.Subnets(), func(p netip.Prefix) bool { return p.Contains(src) }) &&
			!slices.ContainsFunc(r.ExceptSubnets(), func(p netip.Prefix) bool { return p.Contains(src) })

		if block && inSubnets {
			return true
		}

		if !block && !inSubnets {
			return false
		}
	}

	return !block
}

func inPorts(ranges [][2]uint16, port int) bool {
	return slices.ContainsFunc(ranges, func(r [2]uint16) bool { return port >= int(r[0]) && port <= int(r[1]) })
}

// podOrService: in block mode Talos accepts traffic from the cluster's pod and service subnets to
// the pod and service subnets (source and destination both matched: nftables_chain_config.go
// @v1.13.9, "allow Kubernetes pod/service traffic"), not a pod's connection to its node's own
// address, which needs a rule (the network-policy table's pod-CIDR peers).
func podOrService(cfg config.Provider, src netip.Addr) bool {
	nw := cfg.K8sNetworkConfig()
	if nw == nil {
		return false
	}

	return slices.ContainsFunc(slices.Concat(nw.PodCIDRs(), nw.ServiceCIDRs()), func(p netip.Prefix) bool { return p.Contains(src) })
}

// guardedListener refuses, at accept, a connection that the node does not admit. A real firewall
// or security group drops the SYN and the client times out; the stand-in answers with a reset
// straight away (linger 0) so that a refused connection fails fast in tests instead of hanging.
type guardedListener struct {
	net.Listener

	n    *Node
	port int
}

func (n *Node) guard(l net.Listener, port int) net.Listener {
	return &guardedListener{Listener: l, n: n, port: port}
}

func (l *guardedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}

		src := remoteAddr(c)
		if src.IsValid() && l.n.admits(src, l.port) {
			return c, nil
		}

		l.n.log.Debug("connection refused by the network policy", "from", src, "port", l.port)

		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}

		_ = c.Close()
	}
}

// address is the node's own address.
func (n *Node) address() netip.Addr {
	a, _ := netip.ParseAddr(n.opts.Addr)
	return a
}

func remoteAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}

	return ap.Addr().Unmap()
}
