package talos

import (
	"crypto/tls"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// apidOnly is a firewall that blocks by default and admits the Talos API (50000) from ingress
// (the rule's YAML list).
func apidOnly(ingress string) string {
	return `---
apiVersion: v1alpha1
kind: NetworkDefaultActionConfig
ingress: block
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: apid-ingress
portSelector:
  ports: [50000]
  protocol: tcp
ingress:
` + ingress
}

var fwBlock = apidOnly(`  - subnet: 127.0.0.0/8
    except: 127.0.0.77/32
`) + `---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: kubelet-ingress
portSelector:
  ports: [10250, 10255-10256]
  protocol: tcp
ingress:
  - subnet: 127.0.0.1/32
`

const fwAccept = `---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: kubelet-ingress
portSelector:
  ports: [10250]
  protocol: tcp
ingress:
  - subnet: 127.0.0.1/32
`

// TestFirewallAdmits: the stand-in reads the ingress firewall documents of a config the way
// Talos's nftables chain does, in block and in accept mode.
func TestFirewallAdmits(t *testing.T) {
	t.Parallel()

	cp, _, _ := configs(t, forms[0], "https://127.0.0.2:6443", "/dev/sda")

	tests := []struct {
		name  string
		docs  string
		src   string
		proto nethelpers.Protocol
		port  int
		want  bool
	}{
		{"no firewall", "", "127.0.0.77", nethelpers.ProtocolTCP, 50000, true},
		{"block: in subnet", fwBlock, "127.0.0.5", nethelpers.ProtocolTCP, 50000, true},
		{"block: except", fwBlock, "127.0.0.77", nethelpers.ProtocolTCP, 50000, false},
		{"block: port range", fwBlock, "127.0.0.1", nethelpers.ProtocolTCP, 10256, true},
		{"block: other source", fwBlock, "127.0.0.5", nethelpers.ProtocolTCP, 10250, false},
		{"block: unlisted port", fwBlock, "127.0.0.1", nethelpers.ProtocolTCP, 2379, false},
		{"block: other protocol", fwBlock, "127.0.0.1", nethelpers.ProtocolUDP, 10250, false},
		{"block: pod to pod", fwBlock, "10.244.1.7", nethelpers.ProtocolTCP, 2379, true},
		{"block: pod to its node's address", fwBlock, "10.244.1.7>127.0.0.2", nethelpers.ProtocolTCP, 10250, false},
		{"block: service to pod", fwBlock, "10.96.0.10>10.244.0.3", nethelpers.ProtocolUDP, 53, true},
		{"accept: listed source", fwAccept, "127.0.0.1", nethelpers.ProtocolTCP, 10250, true},
		{"accept: other source on a ruled port", fwAccept, "127.0.0.5", nethelpers.ProtocolTCP, 10250, false},
		{"accept: unruled port", fwAccept, "127.0.0.5", nethelpers.ProtocolTCP, 50000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := configloader.NewFromBytes(append(append([]byte{}, cp...), tt.docs...))
			if err != nil {
				t.Fatal(err)
			}

			// src, or src>dst; the destination is the node's address unless the source is a pod,
			// whose peer here is another pod.
			src, dst, ok := strings.Cut(tt.src, ">")
			if !ok {
				dst = "127.0.0.2"
				if strings.HasPrefix(src, "10.244.") {
					dst = "10.244.9.9"
				}
			}
			if got := firewallAdmits(cfg, netip.MustParseAddr(src), netip.MustParseAddr(dst), tt.proto, tt.port); got != tt.want {
				t.Errorf("admits = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNodeEnforcesItsFirewallAndNetwork: a configured node refuses, at its listener, a connection
// its firewall or the network in front of it does not admit, and accepts the others.
func TestNodeEnforcesItsFirewallAndNetwork(t *testing.T) {
	t.Parallel()

	a, cp, _, _ := clusterAt(t, forms[0], "/dev/sda")

	refusedFrom := netip.MustParseAddr("127.0.0.78") // refused by the network (security group)
	n := start(t, NodeOptions{Addr: a, Mode: "cloud", UserData: append(cp, fwBlock...),
		Network: func(src netip.Addr, _ string, _ int) bool { return src != refusedFrom }})

	dial := func(src string, port int) error {
		// A refused connection is reset at accept and fails at once; the bound is for an
		// admitted one's handshake, which a loaded machine may take seconds to finish.
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 20 * time.Second}
		c, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(a, strconv.Itoa(port)), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec
		if err != nil {
			return err
		}

		return c.Close()
	}

	tests := []struct {
		src  string
		port int
		open bool
	}{
		{"127.0.0.5", n.opts.APIPort, true},
		{"127.0.0.77", n.opts.APIPort, false},
		{"127.0.0.78", n.opts.APIPort, false},
		{"127.0.0.1", n.opts.KubeletPort, true},
		{"127.0.0.5", n.opts.KubeletPort, false},
		{"127.0.0.1", n.opts.TrustdPort, false},
	}
	for _, tt := range tests {
		err := dial(tt.src, tt.port)
		if tt.open != (err == nil) {
			t.Errorf("%s → %s:%d: err = %v, want open = %v", tt.src, a, tt.port, err, tt.open)
		}
	}
}
