package talos

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/pocbot/pocbot/internal/provision/images"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	"github.com/pocbot/pocbot/internal/settings"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	"github.com/siderolabs/talos/pkg/machinery/config/types/network"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/nethelpers"
)

// ParkInput describes a worker about to be parked.
type ParkInput struct {
	IP, Disk, TalosVersion, SchematicID string
	// FactoryURL is the Image Factory of the installer (empty: images.DefaultFactoryURL).
	FactoryURL string
	// AdminCIDRs may reach the Talos API of the parked worker; everything else is blocked.
	AdminCIDRs []string
}

// Park is what parking needs: the configuration to apply and the admin access to it.
type Park struct {
	Config      []byte
	Talosconfig []byte
	Secrets     []byte // the park's own bundle: its CA is what adopting authenticates with
}

// ParkConfig generates a parked worker's configuration: a control-plane-type config of a
// one-node cluster that is never bootstrapped, under a fresh secrets bundle (its OS CA, kept in
// the pool entry, is the only one the node trusts; a control-plane type signs its own API
// certificate, where a worker would wait for a trustd that does not exist), with the ingress
// firewall blocking everything but the Talos API from the admin CIDRs.
func ParkConfig(ctx context.Context, in ParkInput) (*Park, error) {
	// The parked node is never bootstrapped: no token is ever signed with its service-account
	// key, so the cheap key type does.
	secrets, err := NewSecrets(in.TalosVersion, settings.ServiceAccountKeyECDSA)
	if err != nil {
		return nil, fmt.Errorf("park %s: %w", in.IP, err)
	}
	cfgs, err := Generate(ctx, Input{
		ClusterName: "pocbot-parked", Endpoint: "https://" + net.JoinHostPort(in.IP, strconv.Itoa(netpolicy.PortKubeAPI)), TalosVersion: in.TalosVersion,
		Secrets: secrets, SchematicID: in.SchematicID, ControlPlaneIPs: []string{in.IP},
		ControlPlaneInstallDisk: in.Disk, WorkerInstallDisk: in.Disk, FactoryURL: in.FactoryURL,
		// The parked node is the Elastic Metal worker: a control-plane-type config, but the metal
		// installer (an upgrade there must keep the metal image, not the Scaleway one).
		ControlPlaneInstaller: images.InstallerImage(cmp.Or(in.FactoryURL, images.DefaultFactoryURL), "metal", in.SchematicID, in.TalosVersion),
		NoCNI:                 true, // never bootstrapped
	})
	if err != nil {
		return nil, fmt.Errorf("park %s: generate the park configuration: %w", in.IP, err)
	}
	fw, err := ParkFirewall(in.AdminCIDRs)
	if err != nil {
		return nil, fmt.Errorf("park %s: %w", in.IP, err)
	}
	return &Park{Config: append(bytes.TrimRight(cfgs.ControlPlane, "\n"), append([]byte("\n---\n"), fw...)...),
		Talosconfig: cfgs.Talosconfig, Secrets: secrets}, nil
}

// ParkFirewall is the parked node's ingress firewall: default block, the Talos API open to the
// admin CIDRs only (Talos's NetworkDefaultActionConfig and NetworkRuleConfig documents).
func ParkFirewall(adminCIDRs []string) ([]byte, error) {
	def := network.NewDefaultActionConfigV1Alpha1()
	def.Ingress = nethelpers.DefaultActionBlock
	rule := network.NewRuleConfigV1Alpha1()
	rule.MetaName = "pocbot-parked-apid"
	rule.PortSelector.Protocol = nethelpers.ProtocolTCP
	rule.PortSelector.Ports = network.PortRanges{{Lo: constants.ApidPort, Hi: constants.ApidPort}}
	for _, c := range adminCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return nil, fmt.Errorf("admin CIDR %q for the park firewall: %w", c, err)
		}
		rule.Ingress = append(rule.Ingress, network.IngressRule{Subnet: p})
	}
	var out []byte
	for i, d := range []any{def, rule} {
		b, err := encoder.NewEncoder(d, encoder.WithComments(encoder.CommentsDisabled)).Encode()
		if err != nil {
			return nil, fmt.Errorf("encode the park firewall: %w", err)
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// Reset wipes STATE (the config) and EPHEMERAL (etcd, pods: everything of the old cluster) on the
// node at addr and reboots it, keeping the written Talos image; the node comes back in
// maintenance mode. The call is authenticated with the cluster's talosconfig.
func Reset(ctx context.Context, addr string, talosconfig []byte) error {
	err := retryTrusted(ctx, Direct(addr), talosconfig, DefaultCallTimeout, "reset "+addr, transient, func(actx context.Context, c *nodeAPI) error {
		return c.ResetGeneric(actx, &machineapi.ResetRequest{
			Graceful: false, Reboot: true, Mode: machineapi.ResetRequest_SYSTEM_DISK,
			SystemPartitionsToWipe: []*machineapi.ResetPartitionSpec{
				{Label: constants.StatePartitionLabel, Wipe: true},
				{Label: constants.EphemeralPartitionLabel, Wipe: true},
			},
		})
	})
	if err != nil {
		return fmt.Errorf("reset %s (wipe STATE and EPHEMERAL, reboot): %w", addr, err)
	}
	logger(ctx).Info("node reset; rebooting into maintenance mode", "node", addr)
	return nil
}

// ApplyTrusted sends cfg to a configured node over mutual TLS (the talosconfig of the CA the
// node runs under), e.g. a parked worker's adoption; the node reboots into it.
func ApplyTrusted(ctx context.Context, addr string, talosconfig, cfg []byte) error {
	ctx, cancel := withDefaultDeadline(ctx, DefaultWaitTimeout)
	defer cancel()
	err := retry(ctx, "apply config on "+addr+" over mutual TLS", transient, func(actx context.Context) error {
		return withTrusted(actx, addr, talosconfig, func(c *nodeAPI) error {
			_, err := c.ApplyConfiguration(actx, &machineapi.ApplyConfigurationRequest{Data: cfg, Mode: machineapi.ApplyConfigurationRequest_REBOOT})
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("apply config to %s over mutual TLS: %w", addr, err)
	}
	return nil
}
