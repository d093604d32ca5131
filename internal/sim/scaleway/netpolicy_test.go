package scaleway

import (
	"net"
	"net/netip"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// TestInboundAllowed: the security group of the Instance holding an address judges a new
// inbound connection: the first matching inbound rule by position, else the inbound default.
func TestInboundAllowed(t *testing.T) {
	clk := newClock()
	e, c, _ := startEmu(t, Options{Clock: clk.Now, Objects: objs()})
	wd := makeWorld(t, e, c, clk)
	inst := instance.NewAPI(c)
	ip, err := inst.GetIP(&instance.GetIPRequest{Zone: zone, IP: wd.ip})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := netip.AddrFromSlice(ip.IP.Address.To4())
	cidr := func(s string) scw.IPNet { _, n, _ := net.ParseCIDR(s); return scw.IPNet{IPNet: *n} }
	port := func(p uint32) *uint32 { return &p }
	rules := []*instance.SetSecurityGroupRulesRequestRule{
		{Action: "drop", Protocol: "TCP", Direction: "inbound", IPRange: cidr("127.0.0.77/32"), DestPortFrom: port(50000), Position: 1},
		{Action: "accept", Protocol: "TCP", Direction: "inbound", IPRange: cidr("127.0.0.0/8"), DestPortFrom: port(50000), Position: 2},
		{Action: "accept", Protocol: "TCP", Direction: "inbound", IPRange: cidr("127.0.0.1/32"), DestPortFrom: port(2379), DestPortTo: port(2380), Position: 3},
		{Action: "accept", Protocol: "ANY", Direction: "outbound", IPRange: cidr("0.0.0.0/0"), Position: 4},
	}
	if _, err := inst.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: zone, SecurityGroupID: wd.sg, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		src   string
		proto string
		port  int
		want  bool
	}{
		{"first match drops", "127.0.0.77", "TCP", 50000, false},
		{"second rule accepts", "127.0.0.5", "TCP", 50000, true},
		{"port range", "127.0.0.1", "TCP", 2380, true},
		{"outside the range", "127.0.0.1", "TCP", 2381, false},
		{"other protocol", "127.0.0.5", "UDP", 50000, false},
		{"outbound rule does not admit inbound", "10.0.0.1", "TCP", 22, false},
		{"inbound default drop", "127.0.0.5", "TCP", 6443, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.InboundAllowed(dst, tt.proto, tt.port, netip.MustParseAddr(tt.src)); got != tt.want {
				t.Errorf("InboundAllowed(%s → %s %s/%d) = %v, want %v", tt.src, dst, tt.proto, tt.port, got, tt.want)
			}
		})
	}
	// An address no Instance holds has no group in front of it.
	if !e.InboundAllowed(netip.MustParseAddr("127.250.0.9"), "TCP", 6443, netip.MustParseAddr("127.0.0.77")) {
		t.Error("an address without an Instance was filtered")
	}
}
