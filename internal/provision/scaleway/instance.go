package scaleway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"slices"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/provision"
	"github.com/pocbot/pocbot/internal/provision/netpolicy"
	instance "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// ---- reserved IPs ----

func (d *Driver) ipNode(i int) provision.Node {
	name := NodeIP(i)
	return provision.Node{
		Name: name, Kind: KindIP,
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone := zoneOf(r)
			what := fmt.Sprintf("reserved IP %s of cluster %q", name, r.ClusterID())
			_, err := ensure(ctx, r, name, KindIP,
				func(ctx context.Context, id string) (*found, error) {
					return getFound(ctx, d.inst.GetIP, &instance.GetIPRequest{Zone: zone, IP: id}, zone, what,
						func(res *instance.GetIPResponse) *found { return ipFound(res.IP) })
				},
				func(ctx context.Context) ([]*found, error) {
					return listFound(ctx, d.inst.ListIPs, &instance.ListIPsRequest{Zone: zone, Project: &d.project, Tags: nodeTags(r, name)},
						zone, what, func(res *instance.ListIPsResponse) []*instance.IP { return res.IPs },
						func(ip *instance.IP) bool { return exactNode(ip.Tags, r, name) }, ipFound)
				},
				func(ctx context.Context) (*found, error) {
					res, err := d.inst.CreateIP(&instance.CreateIPRequest{Zone: zone, Project: &d.project,
						Tags: r.Tags(name), Type: instance.IPTypeRoutedIPv4}, ctxOpt(ctx))
					return made(err, "create "+what, zone, func() *found { return ipFound(res.IP) })
				})
			return err
		},
		Destroy: destroyRecorded(name, func(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error {
			return d.deleteIP(ctx, r, zone, id, name)
		}),
	}
}

func ipFound(ip *instance.IP) *found {
	f := &found{id: ip.ID, status: string(ip.State), attrs: map[string]string{"address": ip.Address.String()}}
	if ip.Address == nil && ip.Prefix.IP != nil {
		f.attrs["address"] = ip.Prefix.IP.String()
	}
	return f
}

// deleteIP detaches the IP from any server, then deletes it. Not found is done.
func (d *Driver) deleteIP(ctx context.Context, r *provision.Run, zone scw.Zone, id, name string) error {
	what := fmt.Sprintf("delete reserved IP %s (%s)", name, id)
	res, err := d.inst.GetIP(&instance.GetIPRequest{Zone: zone, IP: id}, ctxOpt(ctx))
	if notFound(err) {
		return nil
	}
	if err != nil {
		return classify(what, string(zone), err)
	}
	if res.IP.Server != nil {
		_, err := d.inst.UpdateIP(&instance.UpdateIPRequest{Zone: zone, IP: id,
			Server: &instance.NullableStringValue{Null: true}}, ctxOpt(ctx))
		if err != nil && !notFound(err) {
			return classify("detach "+what, string(zone), err)
		}
	}
	if err := d.inst.DeleteIP(&instance.DeleteIPRequest{Zone: zone, IP: id}, ctxOpt(ctx)); err != nil && !notFound(err) {
		return classify(what, string(zone), err)
	}
	r.Deleted(KindIP, id, name+" "+res.IP.Address.String())
	return nil
}

// ---- security group ----

// Rule is one inbound accept rule of the control planes' group (docs/seed.md, The control planes' security group).
type Rule struct {
	Protocol string // TCP, UDP, ICMP
	Port     uint32 // 0 for ICMP
	From     string // CIDR
}

// Rules renders the control planes' security group from the cluster's network-policy table
// (provision/netpolicy.SecurityGroup): the admin CIDRs (with the run's temporary one, see
// EffectiveSpec), every node's address (cpIPs and otherIPs, the worker's once it is known) and the
// control planes' own for etcd. The Talos firewall of every node is rendered from the same table
// (provision/talos.Firewall), and a test holds the two equal. One Rule per port: a range of the
// table becomes one rule per port, in order.
func Rules(spec provision.Spec, cpIPs, otherIPs []string) ([]Rule, error) {
	rs, err := netpolicy.SecurityGroup(netpolicy.Addresses{
		Admin: spec.AdminCIDRs, Nodes: append(slices.Clone(cpIPs), otherIPs...), ControlPlanes: cpIPs,
		EdgeOnControlPlane: spec.ExposeEdgeOnControlPlane,
	})
	if err != nil {
		return nil, fmt.Errorf("security group rules: %w", err)
	}
	var out []Rule
	for _, r := range rs {
		for _, from := range r.From {
			if r.Proto == netpolicy.ICMP {
				out = append(out, Rule{string(r.Proto), 0, from.String()})
				continue
			}
			for _, pr := range r.Ports {
				for p := uint32(pr[0]); p <= uint32(pr[1]); p++ {
					out = append(out, Rule{string(r.Proto), p, from.String()})
				}
			}
		}
	}
	return out, nil
}

func rulesHash(rules []Rule) string {
	h := sha256.New()
	for _, r := range rules {
		fmt.Fprintf(h, "%s/%d/%s\n", r.Protocol, r.Port, r.From)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func apiRules(rules []Rule) ([]*instance.SetSecurityGroupRulesRequestRule, error) {
	out := make([]*instance.SetSecurityGroupRulesRequestRule, 0, len(rules))
	for i, ru := range rules {
		_, n, err := net.ParseCIDR(ru.From)
		if err != nil {
			return nil, fmt.Errorf("security group rule from %q: %w", ru.From, err)
		}
		rule := &instance.SetSecurityGroupRulesRequestRule{
			Action: instance.SecurityGroupRuleActionAccept, Protocol: instance.SecurityGroupRuleProtocol(ru.Protocol),
			Direction: instance.SecurityGroupRuleDirectionInbound, IPRange: scw.IPNet{IPNet: *n}, Position: uint32(i + 1),
		}
		if ru.Port != 0 {
			p := ru.Port
			rule.DestPortFrom, rule.DestPortTo = &p, &p
		}
		out = append(out, rule)
	}
	return out, nil
}

func ipAddrs(r *provision.Run, nodes []string) ([]string, error) {
	var out []string
	for _, n := range nodes {
		rec, err := need(r, n)
		if err != nil {
			return nil, err
		}
		if a := rec.Attrs["address"]; a != "" {
			out = append(out, a)
		} else if a := rec.Attrs["ipv4"]; a != "" {
			out = append(out, a)
		} else {
			return nil, fmt.Errorf("%s has no IPv4 address in state", n)
		}
	}
	return out, nil
}

func (d *Driver) secGroupNode(ipNodes []string) provision.Node {
	return provision.Node{
		Name: NodeSecGroup, Kind: KindSG, Needs: ipNodes,
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone := zoneOf(r)
			name := r.Name(nameSuffix(r.Spec(), NodeSecGroup))
			what := fmt.Sprintf("security group %q", name)
			f, err := ensure(ctx, r, NodeSecGroup, KindSG,
				func(ctx context.Context, id string) (*found, error) {
					return getFound(ctx, d.inst.GetSecurityGroup, &instance.GetSecurityGroupRequest{Zone: zone, SecurityGroupID: id}, zone, what,
						func(res *instance.GetSecurityGroupResponse) *found { return sgFound(res.SecurityGroup, r) })
				},
				func(ctx context.Context) ([]*found, error) {
					return listFound(ctx, d.inst.ListSecurityGroups, &instance.ListSecurityGroupsRequest{Zone: zone, Project: &d.project,
						Tags: []string{provision.ClusterTag(r.ClusterID())}}, zone, what,
						func(res *instance.ListSecurityGroupsResponse) []*instance.SecurityGroup { return res.SecurityGroups },
						func(sg *instance.SecurityGroup) bool { return exactNode(sg.Tags, r, NodeSecGroup) && sg.Name == name },
						func(sg *instance.SecurityGroup) *found { return sgFound(sg, r) })
				},
				func(ctx context.Context) (*found, error) {
					res, err := d.inst.CreateSecurityGroup(&instance.CreateSecurityGroupRequest{
						Zone: zone, Name: name, Description: "pocbot control planes of cluster " + r.ClusterID(),
						Project: &d.project, Tags: r.Tags(NodeSecGroup), Stateful: true,
						InboundDefaultPolicy: instance.SecurityGroupPolicyDrop, OutboundDefaultPolicy: instance.SecurityGroupPolicyAccept,
						EnableDefaultSecurity: scw.BoolPtr(false),
					}, ctxOpt(ctx))
					return made(err, "create "+what, zone, func() *found { return sgFound(res.SecurityGroup, r) })
				})
			if err != nil {
				return err
			}
			// The control planes' own rules now; the worker's IP joins in NodeSecRules, so that
			// the servers do not wait for the Elastic Metal delivery. On a rerun the worker is
			// known already: the full set is PUT (or nothing, when the state says it is there).
			return d.putNodeRules(ctx, r, NodeSecGroup, f.id, ipNodes, false)
		},
		Destroy: destroyRecorded(NodeSecGroup, func(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error {
			return d.deleteSG(ctx, r, zone, id, r.Name(nameSuffix(r.Spec(), NodeSecGroup)))
		}),
	}
}

func sgFound(sg *instance.SecurityGroup, r *provision.Run) *found {
	f := &found{id: sg.ID, status: string(sg.State), attrs: map[string]string{}}
	if old, ok := r.Resource(NodeSecGroup); ok && old.ID == sg.ID {
		f.attrs["rules"] = old.Attrs["rules"]
		if f.attrs["rules"] == "" {
			delete(f.attrs, "rules")
		}
	}
	return f
}

// putRules PUTs the rule set (a whole replacement) unless the state says it is already there,
// then waits for the group to leave "syncing".
func (d *Driver) putRules(ctx context.Context, r *provision.Run, node, sgID string, rules []Rule) error {
	zone := zoneOf(r)
	hash := rulesHash(rules)
	rec, _ := r.Resource(NodeSecGroup)
	if rec.ID == sgID && rec.Attrs["rules"] == hash && rec.Status == string(instance.SecurityGroupStateAvailable) {
		return nil
	}
	ar, err := apiRules(rules)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("set %d rules of security group %s", len(rules), sgID)
	if _, err := d.inst.SetSecurityGroupRules(&instance.SetSecurityGroupRulesRequest{Zone: zone, SecurityGroupID: sgID, Rules: ar}, ctxOpt(ctx)); err != nil {
		return classify(what, string(zone), err)
	}
	var state string
	err = r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
		res, err := d.inst.GetSecurityGroup(&instance.GetSecurityGroupRequest{Zone: zone, SecurityGroupID: sgID}, ctxOpt(ctx))
		if err != nil {
			return false, classify("get security group "+sgID, string(zone), err)
		}
		state = string(res.SecurityGroup.State)
		if res.SecurityGroup.State == instance.SecurityGroupStateSyncingError {
			return false, fmt.Errorf("%s: the group is in syncing_error: check the rules in the console", what)
		}
		return res.SecurityGroup.State == instance.SecurityGroupStateAvailable, nil
	})
	if err != nil {
		return err
	}
	rec, _ = r.Resource(NodeSecGroup)
	if rec.Attrs == nil {
		rec.Attrs = map[string]string{}
	}
	rec.Attrs["rules"], rec.Status = hash, state
	return r.Record(ctx, NodeSecGroup, rec)
}

func (d *Driver) secRulesNode(ipNodes []string) provision.Node {
	return provision.Node{
		Name: NodeSecRules, Kind: KindSG, Needs: []string{NodeSecGroup, NodeWorker},
		Apply: func(ctx context.Context, r *provision.Run) error {
			sg, err := need(r, NodeSecGroup)
			if err != nil {
				return err
			}
			return d.putNodeRules(ctx, r, NodeSecRules, sg.ID, ipNodes, true)
		},
	}
}

func (d *Driver) deleteSG(ctx context.Context, r *provision.Run, zone scw.Zone, id, name string) error {
	err := d.inst.DeleteSecurityGroup(&instance.DeleteSecurityGroupRequest{Zone: zone, SecurityGroupID: id}, ctxOpt(ctx))
	if notFound(err) {
		return nil
	}
	if err != nil {
		// still used by a server being terminated: retry.
		return provision.Transient(classify("delete security group "+name, string(zone), err), 0)
	}
	r.Deleted(KindSG, id, name)
	return nil
}

// ---- servers ----

func (d *Driver) serverNode(i int) provision.Node {
	name := NodeServer(i)
	return provision.Node{
		Name: name, Kind: KindServer, Needs: []string{NodeVolume(i), NodeIP(i), NodeSecGroup},
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone, spec := zoneOf(r), r.Spec()
			sname := r.Name(nameSuffix(spec, name))
			what := fmt.Sprintf("control plane server %q", sname)
			vol, err := need(r, NodeVolume(i))
			if err != nil {
				return err
			}
			ip, err := need(r, NodeIP(i))
			if err != nil {
				return err
			}
			sg, err := need(r, NodeSecGroup)
			if err != nil {
				return err
			}
			_, err = ensure(ctx, r, name, KindServer,
				func(ctx context.Context, id string) (*found, error) { return d.getServer(ctx, zone, id, what) },
				func(ctx context.Context) ([]*found, error) { return d.listServers(ctx, r, zone, name, what) },
				func(ctx context.Context) (*found, error) {
					res, err := d.inst.CreateServer(&instance.CreateServerRequest{
						Zone: zone, Name: sname, CommercialType: spec.CPInstanceType, Project: &d.project,
						Tags: r.Tags(name), DynamicIPRequired: scw.BoolPtr(false),
						Volumes: map[string]*instance.VolumeServerTemplate{
							"0": {ID: &vol.ID, Boot: scw.BoolPtr(true), VolumeType: instance.VolumeVolumeTypeSbsVolume},
						},
						PublicIPs: &[]string{ip.ID}, SecurityGroup: &sg.ID,
					}, ctxOpt(ctx))
					return made(err, "create "+what, zone, func() *found { return serverFound(res.Server) })
				})
			return err
		},
		Destroy: func(ctx context.Context, r *provision.Run) error {
			zone := zoneOf(r)
			var ids []string
			if rec, ok := r.Resource(name); ok {
				zone, ids = scw.Zone(rec.Zone), append(ids, rec.ID)
			}
			// A server whose create took effect but whose id never reached the state (the answer
			// lost to a 500, the run cut while the create was in flight) holds its volume, its IP
			// and the security group: those wait for it, so it is looked for by its tags here,
			// not left to the sweep that runs after them.
			tagged, err := d.listServers(ctx, r, zone, name, fmt.Sprintf("control plane server %s", name))
			if err != nil {
				return err
			}
			for _, f := range tagged {
				if !slices.Contains(ids, f.id) {
					ids = append(ids, f.id)
				}
			}
			for _, id := range ids {
				if err := d.deleteServer(ctx, r, zone, id); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func (d *Driver) getServer(ctx context.Context, zone scw.Zone, id, what string) (*found, error) {
	return getFound(ctx, d.inst.GetServer, &instance.GetServerRequest{Zone: zone, ServerID: id}, zone, what,
		func(res *instance.GetServerResponse) *found { return serverFound(res.Server) })
}

func (d *Driver) listServers(ctx context.Context, r *provision.Run, zone scw.Zone, node, what string) ([]*found, error) {
	return listFound(ctx, d.inst.ListServers, &instance.ListServersRequest{Zone: zone, Project: &d.project, Tags: nodeTags(r, node)},
		zone, what, func(res *instance.ListServersResponse) []*instance.Server { return res.Servers },
		func(s *instance.Server) bool { return exactNode(s.Tags, r, node) }, serverFound)
}

func serverFound(s *instance.Server) *found {
	f := &found{id: s.ID, status: string(s.State), attrs: map[string]string{"name": s.Name}}
	for _, ip := range s.PublicIPs {
		if ip != nil && ip.Address != nil && ip.Address.To4() != nil {
			f.attrs["address"] = ip.Address.String()
			break
		}
	}
	return f
}

func (d *Driver) poweronNode(i int) provision.Node {
	name, srv := NodePoweron(i), NodeServer(i)
	return provision.Node{
		Name: name, Kind: KindServer, Needs: []string{srv},
		Apply: func(ctx context.Context, r *provision.Run) error {
			zone := zoneOf(r)
			rec, err := need(r, srv)
			if err != nil {
				return err
			}
			what := fmt.Sprintf("power on control plane %s (%s)", srv, rec.ID)
			res, err := d.inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: rec.ID}, ctxOpt(ctx))
			if err != nil {
				return classify(what, string(zone), err)
			}
			state := res.Server.State
			if state == instance.ServerStateStopped || state == instance.ServerStateStoppedInPlace {
				// User data is read at boot: it must be in place before the power on.
				if ud, ok := r.Secret(UserDataSecret(i)); ok {
					if err := d.setUserData(ctx, r, name, zone, srv, rec.ID, ud); err != nil {
						return err
					}
				}
				if _, err := d.inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: rec.ID,
					Action: instance.ServerActionPoweron}, ctxOpt(ctx)); err != nil {
					return classify(what, string(zone), err)
				}
			}
			var last *instance.Server
			err = r.Poll(ctx, what, func(ctx context.Context) (bool, error) {
				res, err := d.inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: rec.ID}, ctxOpt(ctx))
				if err != nil {
					return false, classify(what, string(zone), err)
				}
				last = res.Server
				switch res.Server.State {
				case instance.ServerStateRunning:
					return true, nil
				case instance.ServerStateStarting:
					return false, nil
				}
				return false, fmt.Errorf("%s: server is %s (%s), not starting", what, res.Server.State, res.Server.StateDetail)
			})
			if err != nil {
				return err
			}
			return record(ctx, r, srv, KindServer, string(zone), serverFound(last))
		},
	}
}

// deleteServer terminates a running server (its Block volume is detached, not deleted), deletes
// a stopped one, and waits until it is gone.
func (d *Driver) deleteServer(ctx context.Context, r *provision.Run, zone scw.Zone, id string) error {
	what := "delete server " + id
	acted := false
	get := func(ctx context.Context) (*instance.GetServerResponse, error) {
		return d.inst.GetServer(&instance.GetServerRequest{Zone: zone, ServerID: id}, ctxOpt(ctx))
	}
	name := func(res *instance.GetServerResponse) string { return res.Server.Name }
	return deleteWait(ctx, r, zone, KindServer, id, what, get, name, func(ctx context.Context, res *instance.GetServerResponse) (bool, error) {
		switch res.Server.State {
		case instance.ServerStateRunning:
			if !acted || slices.Contains(res.Server.AllowedActions, instance.ServerActionTerminate) {
				_, err := d.inst.ServerAction(&instance.ServerActionRequest{Zone: zone, ServerID: id, Action: instance.ServerActionTerminate}, ctxOpt(ctx))
				if err != nil && !notFound(err) {
					return false, classify("terminate server "+id, string(zone), err)
				}
				acted = true
			}
		case instance.ServerStateStopped, instance.ServerStateStoppedInPlace:
			// detach the volumes first so that the Block volumes survive for their own delete.
			if err := d.inst.DeleteServer(&instance.DeleteServerRequest{Zone: zone, ServerID: id}, ctxOpt(ctx)); err != nil && !notFound(err) {
				return false, classify(what, string(zone), err)
			}
		}
		return false, nil // starting / stopping / locked: wait
	})
}

// setUserData writes a control plane's config as its user data, and notes what register row
// user-data-cap met: the size Scaleway took, or its refusal (the row's unhandled reading: the
// up stops here, naming it, before any node boots).
func (d *Driver) setUserData(ctx context.Context, r *provision.Run, step string, zone scw.Zone, srv, id string, ud []byte) error {
	err := d.inst.SetServerUserData(&instance.SetServerUserDataRequest{Zone: zone, ServerID: id,
		Key: userDataKey, Content: bytes.NewReader(ud)}, ctxOpt(ctx))
	switch {
	case err == nil:
		r.Observe(step, assume.UserDataCap, "fits", fmt.Sprintf("user data of %d bytes taken (server %s)", len(ud), id))
		return nil
	case refusedRequest(err): // a 4xx for what it asks: its size
		r.Observe(step, assume.UserDataCap, "too-small", fmt.Sprintf("user data of %d bytes refused (server %s): %v", len(ud), id, err))
		return fmt.Errorf("set user data of %s: Scaleway refused the control plane's config of %d bytes (register row %s, docs/assumptions.md): "+
			"remove what the up made (/poc down, bot down) and report it with this message: %w", srv, len(ud), assume.UserDataCap, classify("set user data of "+srv, string(zone), err))
	}
	return classify("set user data of "+srv, string(zone), err)
}
