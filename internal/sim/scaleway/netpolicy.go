package scaleway

import (
	"net"
	"net/netip"
	"slices"
	"strings"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
)

// InboundAllowed tells whether a new inbound connection from src to dst (an address the emulator
// handed out) on proto ("TCP", "UDP") and port passes the security group of the Instance that
// holds dst. It is the world's view of the network (internal/sim/world), read here rather than in
// the handlers so that routing changes do not touch it.
//
// An address attached to no Instance (an Elastic Metal server, a detached IP) has no security
// group: Scaleway has none for Elastic Metal, so everything passes. A server in the project's
// default group passes too (the emulator's default group accepts inbound). Otherwise the group's
// inbound rules are read in position order and the first that matches decides; none matching,
// the group's inbound default policy decides. Outbound rules and the fixed SMTP drops never
// concern inbound traffic. The group is stateful (the SDK's default and the bot's), so only new
// connections are judged.
func (e *Emulator) InboundAllowed(dst netip.Addr, proto string, port int, src netip.Addr) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	var srv *server
	for _, ip := range e.ips {
		if a, ok := netip.AddrFromSlice(ip.Address.To4()); ok && a == dst && ip.ServerID != "" {
			srv = e.srv[ip.ServerID]
			break
		}
	}
	if srv == nil || srv.SGID == "" || srv.SGID == defaultSGID {
		return true
	}
	g, ok := e.sgs[srv.SGID]
	if !ok {
		return true
	}
	rules := slices.Clone(g.Rules)
	slices.SortStableFunc(rules, func(a, b *instance.SecurityGroupRule) int { return int(a.Position) - int(b.Position) })
	for _, r := range rules {
		if r.Direction != instance.SecurityGroupRuleDirectionInbound || !ruleMatches(r, proto, port, src) {
			continue
		}
		return r.Action == instance.SecurityGroupRuleActionAccept
	}
	return g.Inbound == string(instance.SecurityGroupPolicyAccept)
}

func ruleMatches(r *instance.SecurityGroupRule, proto string, port int, src netip.Addr) bool {
	if r.Protocol != instance.SecurityGroupRuleProtocolANY && !strings.EqualFold(string(r.Protocol), proto) {
		return false
	}
	if r.DestPortFrom != nil {
		to := *r.DestPortFrom
		if r.DestPortTo != nil {
			to = *r.DestPortTo
		}
		if port < int(*r.DestPortFrom) || port > int(to) {
			return false
		}
	}
	n := net.IPNet(r.IPRange.IPNet)
	return n.IP != nil && n.Contains(net.IP(src.AsSlice()))
}
