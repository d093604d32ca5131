package scaleway

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// server is an Instance server. State fields mirror instance.Server.
type server struct {
	ID, Name, Project, CommercialType string
	Zone                              scw.Zone
	Tags                              []string
	State, StateDetail                string
	Created, Modified                 time.Time
	VolumeIDs                         []string // index 0 is the boot volume
	IPIDs                             []string
	SGID                              string
	DynamicIPRequired                 bool
	userData                          map[string][]byte
	gen                               int // bumps on every action; stale events check it
}

type flexIP struct {
	ID, Project, State string
	Zone               scw.Zone
	Address            net.IP
	Tags               []string
	ServerID           string
	gen                int
}

type secGroup struct {
	ID, Name, Description, Project, State string
	Zone                                  scw.Zone
	Tags                                  []string
	Inbound, Outbound                     string
	Stateful, EnableDefaultSecurity       bool
	ProjectDefault                        bool
	Created, Modified                     time.Time
	Rules                                 []*instance.SecurityGroupRule // editable rules only
	gen                                   int
}

// defaultSGID is the id of the "Default security group" a server without
// security_group gets; it is not a live resource of anyone's.
const defaultSGID = "5881315f-2400-43a0-ac75-08adf6cb8c12"

// ---- server types ---------------------------------------------------------

type serverTypeInfo struct {
	name          string
	ncpus         uint32
	ram           uint64
	hourly, month float32
	bw, blockBW   uint64
	arch          string
	gpu           uint64
	endOfService  bool
}

func (e *Emulator) listServerTypes(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveServerTypes(w, r, func(t serverTypeInfo) any {
		month := t.month
		gpu := t.gpu
		bbw := t.blockBW
		yes := true
		st := &instance.ServerType{
			MonthlyPrice: &month, HourlyPrice: t.hourly, AltNames: []string{}, Ncpus: t.ncpus, RAM: t.ram,
			Gpu: &gpu, Arch: instance.Arch(t.arch), BlockBandwidth: &bbw, EndOfService: t.endOfService,
			VolumesConstraint:   &instance.ServerTypeVolumeConstraintSizes{},
			PerVolumeConstraint: &instance.ServerTypeVolumeConstraintsByType{LSSD: &instance.ServerTypeVolumeConstraintSizes{}},
			Capabilities:        &instance.ServerTypeCapabilities{BootTypes: []instance.BootType{"local", "rescue"}, BlockStorage: &yes},
			Network: &instance.ServerTypeNetwork{
				Interfaces:           []*instance.ServerTypeNetworkInterface{{InternalBandwidth: &t.bw, InternetBandwidth: &t.bw}},
				SumInternalBandwidth: &t.bw, SumInternetBandwidth: &t.bw, IPv6Support: true,
			},
		}
		return reshape(st, []string{"sku"}, map[string]any{"mig_profile": nil})
	})
}

func (e *Emulator) listServerAvailability(w http.ResponseWriter, r *http.Request, _ scw.Zone) {
	serveServerTypes(w, r, func(serverTypeInfo) any { return map[string]any{"availability": "available"} })
}

// serveServerTypes answers one page of the Instance catalogue: {"servers": {name: one(type)}}.
func serveServerTypes(w http.ResponseWriter, r *http.Request, one func(serverTypeInfo) any) {
	pg, ok := instancePageOf(w, r, serverTypes)
	if !ok {
		return
	}
	out := map[string]any{}
	for _, t := range pg {
		out[t.name] = one(t)
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": out})
}

// ---- IPs --------------------------------------------------------------------

func (e *Emulator) ipJSON(i *flexIP) any {
	ip := &instance.IP{
		ID: i.ID, Address: i.Address, Organization: i.Project, Project: i.Project, Tags: cp(i.Tags),
		Type: "routed_ipv4", State: instance.IPState(i.State), IpamID: i.ID, Zone: i.Zone,
	}
	if s, ok := e.srv[i.ServerID]; ok {
		ip.Server = &instance.ServerSummary{ID: s.ID, Name: s.Name}
	}
	return reshape(ip, nil, map[string]any{"prefix": nil})
}

func (e *Emulator) createIP(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	var req instance.CreateIPRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Type != "" && req.Type != "routed_ipv4" && req.Type != "unknown_iptype" {
		instanceInvalid(w, fmt.Sprintf("ip type %q is not supported by the emulator: use routed_ipv4", req.Type))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !quotas(e, w, e.ips, "ips", QuotaIPs, nil) {
		return
	}
	proj := deref(req.Project, deref(req.Organization, ""))
	ip := &flexIP{ID: e.newID(), Project: proj, State: "detached", Zone: z, Address: e.newLoopback(), Tags: cp(req.Tags)}
	e.ips[ip.ID] = ip
	if req.Server != nil {
		if s, ok := e.srv[*req.Server]; ok && s.Zone == z {
			e.attachIP(ip, s)
		}
	}
	writeJSON(w, http.StatusCreated, map[string]any{"ip": e.ipJSON(ip)})
}

func deref(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func (e *Emulator) listIPs(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveList(e, w, r, e.ips, z, listing[*flexIP]{key: "ips", projectParam: "project", paging: pagingHeaders,
		json: e.ipJSON})
}

// attachIP starts attaching ip to s: pending, then attached. Caller holds e.mu.
func (e *Emulator) attachIP(ip *flexIP, s *server) {
	ip.ServerID = s.ID
	ip.State = "pending"
	ip.gen++
	gen := ip.gen
	s.IPIDs = appendUnique(s.IPIDs, ip.ID)
	e.after(e.lat.IPAttach, func() {
		if ip.gen == gen && e.ips[ip.ID] == ip {
			ip.State = "attached"
		}
	})
}

// detachIP detaches at once, like the recording of PATCH {"server": null}.
func (e *Emulator) detachIP(ip *flexIP) {
	if s, ok := e.srv[ip.ServerID]; ok {
		s.IPIDs = remove(s.IPIDs, ip.ID)
	}
	ip.ServerID = ""
	ip.State = "detached"
	ip.gen++
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func remove(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

func (e *Emulator) oneIP(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*flexIP]{find: inZone(e.ips, z), notFound: named(instanceNotFound, "instance_ip"),
		json: e.ipJSON, wrap: "ip", patch: e.patchIP, del: e.deleteIP, badMethod: instanceMethodNotAllowed})
}

// patchIP retags ip, or moves it: {"server": null} detaches it, a server of its zone attaches
// it. Caller holds e.mu.
func (e *Emulator) patchIP(w http.ResponseWriter, r *http.Request, ip *flexIP) bool {
	var req struct {
		Server  *string   `json:"server"`
		Tags    *[]string `json:"tags"`
		Reverse *string   `json:"reverse"`
	}
	raw := map[string]any{}
	if !decodeBoth(w, r, &req, &raw) {
		return false
	}
	setTags(&ip.Tags, req.Tags)
	if _, has := raw["server"]; !has {
		return true
	}
	if req.Server == nil || *req.Server == "" {
		e.detachIP(ip)
		return true
	}
	s, ok := e.srv[*req.Server]
	if !ok || s.Zone != ip.Zone {
		instanceNotFound(w, "instance_server", *req.Server)
		return false
	}
	if ip.ServerID != "" && ip.ServerID != s.ID {
		e.detachIP(ip)
	}
	if ip.ServerID != s.ID {
		e.attachIP(ip, s)
	}
	return true
}

// deleteIP deletes ip, refused while it is attached. Caller holds e.mu.
func (e *Emulator) deleteIP(w http.ResponseWriter, ip *flexIP) {
	if ip.ServerID != "" {
		instanceInvalid(w, fmt.Sprintf("ip %s is attached to server %s: detach it (PATCH server=null) or terminate the server first", ip.ID, ip.ServerID))
		return
	}
	delete(e.ips, ip.ID)
	e.deleted("instance_ip", ip.ID)
	noContent(w)
}

// deleted queues the Deleted hook. Caller holds e.mu.
func (e *Emulator) deleted(kind, id string) {
	if h := e.opts.Hooks.Deleted; h != nil {
		e.pending = append(e.pending, func() { h(kind, id) })
	}
}

// decodeBoth decodes the body into a struct and a raw map (to tell a null
// from an absent key).
func decodeBoth(w http.ResponseWriter, r *http.Request, v any, raw *map[string]any) bool {
	b, ok := decodeBody(w, r, v)
	if ok {
		_ = json.Unmarshal(b, raw)
	}
	return ok
}

// ---- security groups -------------------------------------------------------

func (e *Emulator) sgJSON(g *secGroup) any {
	servers := []*instance.ServerSummary{}
	ids := make([]string, 0)
	for _, s := range e.srv {
		if s.SGID == g.ID {
			ids = append(ids, s.ID)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		servers = append(servers, &instance.ServerSummary{ID: id, Name: e.srv[id].Name})
	}
	f := false
	c, m := g.Created, g.Modified
	sg := &instance.SecurityGroup{
		ID: g.ID, Name: g.Name, Description: g.Description, EnableDefaultSecurity: g.EnableDefaultSecurity,
		InboundDefaultPolicy: instance.SecurityGroupPolicy(g.Inbound), OutboundDefaultPolicy: instance.SecurityGroupPolicy(g.Outbound),
		Organization: g.Project, Project: g.Project, Tags: cp(g.Tags), OrganizationDefault: &f, ProjectDefault: g.ProjectDefault,
		CreationDate: &c, ModificationDate: &m, Servers: servers, Stateful: g.Stateful,
		State: instance.SecurityGroupState(g.State), Zone: g.Zone,
	}
	return reshape(sg, []string{"srn"}, nil)
}

func (e *Emulator) createSG(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	decodeLocked(e, w, r, func(req *instance.CreateSecurityGroupRequest) {
		if !quotas(e, w, e.sgs, "security_groups", QuotaSecurityGroups, nil) {
			return
		}
		if req.Name == "" {
			invalidArg(w, "name", "name is required")
			return
		}
		pol := func(p instance.SecurityGroupPolicy, def string) string {
			if p == "" || p == "unknown_policy" {
				return def
			}
			return string(p)
		}
		now := e.clock().UTC()
		g := &secGroup{
			ID: e.newID(), Name: req.Name, Description: req.Description, Project: deref(req.Project, deref(req.Organization, "")),
			State: "available", Zone: z, Tags: cp(req.Tags), Inbound: pol(req.InboundDefaultPolicy, "accept"),
			Outbound: pol(req.OutboundDefaultPolicy, "accept"), Stateful: req.Stateful,
			EnableDefaultSecurity: req.EnableDefaultSecurity == nil || *req.EnableDefaultSecurity,
			Created:               now, Modified: now,
		}
		e.sgs[g.ID] = g
		writeJSON(w, http.StatusCreated, map[string]any{"security_group": e.sgJSON(g)})
	})
}

func (e *Emulator) listSGs(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveList(e, w, r, e.sgs, z, listing[*secGroup]{key: "security_groups", projectParam: "project", paging: pagingHeaders,
		json: e.sgJSON})
}

func (e *Emulator) oneSG(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*secGroup]{find: inZone(e.sgs, z), notFound: named(instanceNotFound, "instance_security_group"),
		json: e.sgJSON, wrap: "security_group", patch: e.patchSG, del: e.deleteSG, badMethod: instanceMethodNotAllowed})
}

// patchSG changes g's name, description, tags, policies or flags. Caller holds e.mu.
func (e *Emulator) patchSG(w http.ResponseWriter, r *http.Request, g *secGroup) bool {
	var req struct {
		nameTags
		Description           *string `json:"description"`
		InboundDefaultPolicy  *string `json:"inbound_default_policy"`
		OutboundDefaultPolicy *string `json:"outbound_default_policy"`
		Stateful              *bool   `json:"stateful"`
		EnableDefaultSecurity *bool   `json:"enable_default_security"`
	}
	if !decode(w, r, &req) {
		return false
	}
	req.apply(&g.Name, &g.Tags)
	set(&g.Description, req.Description)
	set(&g.Inbound, req.InboundDefaultPolicy)
	set(&g.Outbound, req.OutboundDefaultPolicy)
	set(&g.Stateful, req.Stateful)
	set(&g.EnableDefaultSecurity, req.EnableDefaultSecurity)
	return e.touched(&g.Modified)
}

// deleteSG deletes g, refused while a server uses it. Caller holds e.mu.
func (e *Emulator) deleteSG(w http.ResponseWriter, g *secGroup) {
	for _, s := range e.srv {
		if s.SGID == g.ID {
			instanceInvalid(w, fmt.Sprintf("group is in use: security group %s is used by server %s; delete or move the server first", g.ID, s.ID))
			return
		}
	}
	delete(e.sgs, g.ID)
	e.deleted("instance_security_group", g.ID)
	noContent(w)
}

// smtpDropRules are the non-editable outbound rules the API adds to every
// group (recorded in instance__security-group-basic).
func smtpDropRules(z scw.Zone) []*instance.SecurityGroupRule {
	var out []*instance.SecurityGroupRule
	n := uint32(0)
	for _, rng := range []string{"0.0.0.0/0", "::/0"} {
		for _, port := range []uint32{25, 465, 587} {
			n++
			_, ipn, _ := net.ParseCIDR(rng)
			p := port
			out = append(out, &instance.SecurityGroupRule{
				ID: fmt.Sprintf("11111111-2222-4333-8444-%012d", n), Protocol: "TCP", Direction: "outbound", Action: "drop",
				IPRange: scw.IPNet{IPNet: *ipn}, DestPortFrom: &p, Position: n, Editable: false, Zone: z,
			})
		}
	}
	return out
}

// fixedRules are the rules the API adds to g: the SMTP drops with
// enable_default_security, none without (recorded in terraform-provider-
// scaleway's security-group-enable-default-security cassette).
func fixedRules(g *secGroup) []*instance.SecurityGroupRule {
	if !g.EnableDefaultSecurity {
		return nil
	}
	return smtpDropRules(g.Zone)
}

func ruleJSON(r *instance.SecurityGroupRule) map[string]any {
	return reshape(r, nil, map[string]any{"dest_ip_range": nil})
}

func (e *Emulator) sgRules(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g, ok := instanceItem(w, e.sgs, z, "instance_security_group", id)
	if !ok {
		return
	}
	switch r.Method {
	case http.MethodGet:
		all := append(fixedRules(g), g.Rules...)
		pg, ok := instancePageOf(w, r, all)
		if !ok {
			return
		}
		out := []any{}
		for _, x := range pg {
			out = append(out, ruleJSON(x))
		}
		writeJSON(w, http.StatusOK, map[string]any{"rules": out})
	case http.MethodPut:
		var req instance.SetSecurityGroupRulesRequest
		if !decode(w, r, &req) {
			return
		}
		var rules []*instance.SecurityGroupRule
		for i, x := range req.Rules {
			if x == nil {
				continue
			}
			if x.Action != "accept" && x.Action != "drop" {
				invalidArg(w, fmt.Sprintf("rules.%d.action", i), "action must be accept or drop")
				return
			}
			if x.Direction != "inbound" && x.Direction != "outbound" {
				invalidArg(w, fmt.Sprintf("rules.%d.direction", i), "direction must be inbound or outbound")
				return
			}
			switch x.Protocol {
			case "TCP", "UDP", "ICMP", "ANY":
			default:
				invalidArg(w, fmt.Sprintf("rules.%d.protocol", i), "protocol must be TCP, UDP, ICMP or ANY")
				return
			}
			if x.IPRange.IP == nil {
				invalidArg(w, fmt.Sprintf("rules.%d.ip_range", i), "ip_range is required")
				return
			}
			if x.Protocol == "ICMP" && (x.DestPortFrom != nil || x.DestPortTo != nil) {
				invalidArg(w, fmt.Sprintf("rules.%d.dest_port_from", i), "ICMP rules take no port")
				return
			}
			if x.DestPortTo != nil && x.DestPortFrom != nil && *x.DestPortTo == *x.DestPortFrom {
				// The API stores a one-port range as from=N, to=null.
				x.DestPortTo = nil
			}
			rules = append(rules, &instance.SecurityGroupRule{
				ID: e.newID(), Protocol: x.Protocol, Direction: x.Direction, Action: x.Action, IPRange: x.IPRange,
				DestPortFrom: x.DestPortFrom, DestPortTo: x.DestPortTo, Editable: true, Zone: z,
			})
		}
		// Positions are renumbered from 1, after the fixed rules.
		fixed := fixedRules(g)
		for i, x := range rules {
			x.Position = uint32(len(fixed) + 1 + i)
		}
		g.Rules = rules
		g.State = "syncing"
		g.gen++
		gen := g.gen
		e.after(e.lat.SGRules, func() {
			if g.gen == gen {
				g.State = "available"
			}
		})
		out := []any{}
		for _, x := range append(fixed, rules...) {
			out = append(out, ruleJSON(x))
		}
		writeJSON(w, http.StatusOK, map[string]any{"rules": out})
	default:
		instanceInvalid(w, "method not allowed")
	}
}
