package world

import (
	"net/netip"

	talossim "github.com/pocbot/pocbot/internal/sim/talos"
)

// RunnerCIDR is the bot's address in the world, as POC_RUNNER_CIDR says it (Env): the bot dials
// the nodes' 127.x.y.z addresses without binding, and Linux takes the loopback route's source,
// 127.0.0.1. Admin CIDRs that leave it out make the run open a temporary rule for it, as on
// Scaleway with a runner outside admin_cidrs.
const RunnerCIDR = "127.0.0.1/32"

// RunnerEchoPath is where the world answers a runner's GET with the runner's own address (an
// HTTPS echo endpoint such as https://checkip.amazonaws.com on the real network; plain http on
// loopback here), exported as POC_RUNNER_ECHO_URL.
const RunnerEchoPath = "/runner-ip"

// securityGroup is the network in front of the host at ip: the Scaleway security group of the
// Instance holding that address, as the emulator holds it at the moment of each connection (an
// Elastic Metal server has none). Every connection to a Talos node of the world (runner → node,
// node → node) passes through it; the node's own ingress firewall comes after.
//
// Sources are real: the bot dials from its own address (127.0.0.1 on loopback, unless it binds
// another), and the Talos stand-ins dial from their node's address, so a missing rule refuses
// the connection the same way the real group would drop it.
func (w *World) securityGroup(ip string) talossim.Network {
	dst, err := netip.ParseAddr(ip)
	if err != nil {
		return func(netip.Addr, string, int) bool { return false }
	}
	return func(src netip.Addr, proto string, port int) bool {
		return w.Scaleway.InboundAllowed(dst, proto, port, src)
	}
}

// instanceSegment is an Instance's L3 segment: its public address alone (a routed /32).
func instanceSegment(ip string) netip.Prefix {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Prefix{}
	}
	return netip.PrefixFrom(a, a.BitLen())
}

// metalSegment is an Elastic Metal server's segment: the /24 of its public address.
func metalSegment(ip string) netip.Prefix {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return netip.Prefix{}
	}
	p, _ := a.Prefix(24)
	return p
}

// gatewayOf is the modeled gateway of a node: the .254 of its /24 (no node of the world holds it).
func gatewayOf(ip string) netip.Addr {
	p := metalSegment(ip)
	if !p.IsValid() || !p.Addr().Is4() {
		return netip.Addr{}
	}
	b := p.Addr().As4()
	b[3] = 254
	return netip.AddrFrom4(b)
}
