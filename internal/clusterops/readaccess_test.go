package clusterops

import (
	"testing"

	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/scaleway"
)

// How a read of a cluster's nodes reaches them from this runner: directly when the admin CIDRs
// (with a run's temporary one) cover it or there is no control plane to reach; otherwise through
// the security group opened for the read, or not at all when the operator said so. Before issue
// 31 every read dialled directly, and from outside admin_cidrs failed.
func TestDecideReadAccess(t *testing.T) {
	running := func(admin ...string) *provision.State {
		st := &provision.State{Spec: provision.Spec{CPCount: 1, AdminCIDRs: admin}, Outputs: map[string]string{},
			Resources: map[string]*provision.Record{scaleway.NodeSecGroup: {ID: "sg"}, scaleway.NodeServer(0): {ID: "cp"}}}
		return st
	}
	paused := running("203.0.113.0/24")
	delete(paused.Resources, scaleway.NodeServer(0))
	temporary := running("203.0.113.0/24")
	temporary.Outputs[scaleway.OutAdminTemporary] = "198.51.100.7/32"
	for _, tt := range []struct {
		name   string
		st     *provision.State
		runner string
		noOpen bool
		want   readAccess
	}{
		{"covered by admin_cidrs", running("198.51.100.0/24"), "198.51.100.7/32", false, readDirect},
		{"everyone admitted", running("0.0.0.0/0"), "198.51.100.7/32", true, readDirect},
		{"runner unknown", running("203.0.113.0/24"), "", false, readDirect},
		{"outside", running("203.0.113.0/24"), "198.51.100.7/32", false, readOpen},
		{"outside, the operator said not to open", running("203.0.113.0/24"), "198.51.100.7/32", true, readRefused},
		{"outside, a run's rule admits it already", temporary, "198.51.100.7/32", false, readDirect},
		{"outside, no control plane (paused)", paused, "198.51.100.7/32", true, readDirect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideReadAccess(tt.st, tt.runner, tt.noOpen); got != tt.want {
				t.Fatalf("decideReadAccess = %d, want %d", got, tt.want)
			}
		})
	}
}
