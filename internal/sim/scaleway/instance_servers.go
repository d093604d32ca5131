package scaleway

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
)

func allowedActions(state string) []string {
	switch state {
	case "running":
		return []string{"poweroff", "terminate", "reboot", "stop_in_place", "backup"}
	case "stopped":
		return []string{"poweron", "backup"}
	case "stopped in place":
		return []string{"poweron", "poweroff", "backup"}
	}
	return []string{}
}

func (e *Emulator) serverJSON(s *server) any {
	vols := map[string]any{}
	for i, id := range s.VolumeIDs {
		vols[fmt.Sprint(i)] = map[string]any{"boot": false, "volume_type": "sbs_volume", "id": id, "state": "available", "zone": s.Zone}
	}
	var pub *instance.ServerIP
	pubs := []*instance.ServerIP{}
	for _, id := range s.IPIDs {
		ip, ok := e.ips[id]
		if !ok {
			continue
		}
		sip := &instance.ServerIP{
			ID: ip.ID, Address: ip.Address, Gateway: net.IPv4(127, 0, 0, 1).To4(), Netmask: "32", Family: "inet",
			ProvisioningMode: "dhcp", Tags: cp(ip.Tags), IpamID: ip.ID, State: instance.ServerIPState(ip.State),
		}
		if pub == nil {
			pub = sip
		}
		pubs = append(pubs, sip)
	}
	sg := &instance.SecurityGroupSummary{ID: defaultSGID, Name: "Default security group"}
	if g, ok := e.sgs[s.SGID]; ok {
		sg = &instance.SecurityGroupSummary{ID: g.ID, Name: g.Name}
	}
	actions := []instance.ServerAction{}
	for _, a := range allowedActions(s.State) {
		actions = append(actions, instance.ServerAction(a))
	}
	t, f := true, false
	dns := s.ID + ".pub.instances.scw.cloud"
	c, m := s.Created, s.Modified
	sv := &instance.Server{
		ID: s.ID, Name: s.Name, Organization: s.Project, Project: s.Project, AllowedActions: actions, Tags: cp(s.Tags),
		CommercialType: s.CommercialType, CreationDate: &c, DynamicIPRequired: s.DynamicIPRequired, RoutedIPEnabled: &t,
		EnableIPv6: &f, Hostname: s.Name, PublicIP: pub, PublicIPs: pubs, MacAddress: macOf(s.ID), ModificationDate: &m,
		State: instance.ServerState(s.State), BootType: "local", SecurityGroup: sg, Maintenances: []*instance.ServerMaintenance{},
		StateDetail: s.StateDetail, Arch: instance.ArchX86_64, PrivateNics: []*instance.PrivateNIC{}, Zone: s.Zone,
		Filesystems: []*instance.ServerFilesystem{}, DNS: &dns,
	}
	return reshape(sv, []string{"admin_password_encryption_ssh_key_id", "admin_password_encrypted_value", "srn"},
		map[string]any{"volumes": vols, "bootscript": nil, "extra_networks": []any{}})
}

func macOf(id string) string {
	h := strings.ReplaceAll(id, "-", "")
	return "de:00:" + h[0:2] + ":" + h[2:4] + ":" + h[4:6] + ":" + h[6:8]
}

func (e *Emulator) createServer(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	var req instance.CreateServerRequest
	if !decode(w, r, &req) {
		return
	}
	if req.CommercialType == "" {
		invalidArg(w, "commercial_type", "commercial_type is required")
		return
	}
	known := false
	for _, t := range serverTypes {
		known = known || t.name == req.CommercialType
	}
	if !known {
		instanceInvalid(w, fmt.Sprintf("commercial type %q is not available in %s", req.CommercialType, z))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !quotas(e, w, e.srv, "instances", InstanceTypeQuota(req.CommercialType),
		func(s *server) bool { return s.CommercialType == req.CommercialType }) {
		return
	}
	now := e.clock().UTC()
	s := &server{
		ID: e.newID(), Name: req.Name, Project: deref(req.Project, deref(req.Organization, "")), CommercialType: req.CommercialType,
		Zone: z, Tags: cp(req.Tags), State: "stopped", Created: now, Modified: now, userData: map[string][]byte{},
	}
	if s.Name == "" {
		s.Name = "scw-" + s.ID[:8]
	}
	if req.DynamicIPRequired != nil {
		s.DynamicIPRequired = *req.DynamicIPRequired
	}
	// Check every reference before changing anything, so a rejected create
	// leaves no trace.
	keys := make([]string, 0, len(req.Volumes))
	for k := range req.Volumes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var attach []*volume
	for _, k := range keys {
		v := req.Volumes[k]
		if v == nil || v.ID == nil {
			continue
		}
		vol, ok := e.vols[*v.ID]
		if !ok || vol.Zone != z {
			instanceNotFound(w, "instance_volume", *v.ID)
			return
		}
		if vol.Status == "creating" || vol.Status == "updating" {
			transient(w, "volume", vol.ID, vol.Status)
			return
		}
		if vol.ServerID != "" || vol.Status != "available" {
			instanceInvalid(w, fmt.Sprintf("volume %s is %s (attached to %q): a volume can be attached to one server only", vol.ID, vol.Status, vol.ServerID))
			return
		}
		attach = append(attach, vol)
	}
	var ips []*flexIP
	if req.PublicIPs != nil {
		for _, id := range *req.PublicIPs {
			ip, ok := e.ips[id]
			if !ok || ip.Zone != z {
				instanceNotFound(w, "instance_ip", id)
				return
			}
			if ip.ServerID != "" {
				instanceInvalid(w, fmt.Sprintf("ip %s is already attached to server %s", id, ip.ServerID))
				return
			}
			ips = append(ips, ip)
		}
	}
	if req.SecurityGroup != nil && *req.SecurityGroup != "" {
		g, ok := e.sgs[*req.SecurityGroup]
		if !ok || g.Zone != z {
			instanceNotFound(w, "instance_security_group", *req.SecurityGroup)
			return
		}
		s.SGID = g.ID
	}
	if req.Image != nil && *req.Image != "" && len(attach) == 0 {
		// A server from a catalog image gets a fresh sbs root volume (the
		// recordings' first servers); pocbot passes its own volume instead.
		size := scw.Size(10_000_000_000)
		if v := req.Volumes["0"]; v != nil && v.Size != nil {
			size = *v.Size
		}
		if !quotas(e, w, e.vols, "volumes", QuotaVolumes, nil) {
			return
		}
		vol := e.newVolume(z, *req.Image+"_sbs_volume_0", s.Project, size, 5000, nil, nil)
		vol.Status = "available"
		attach = append(attach, vol)
	}
	for _, vol := range attach {
		e.attachVolume(vol, s)
	}
	for _, ip := range ips {
		ip.ServerID = s.ID
		ip.State = "attached"
		s.IPIDs = append(s.IPIDs, ip.ID)
	}
	e.srv[s.ID] = s
	w.Header().Set("Location", r.URL.Path+"/"+s.ID)
	writeJSON(w, http.StatusCreated, map[string]any{"server": e.serverJSON(s)})
}

func (e *Emulator) listServers(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	ids := map[string]bool{}
	for _, v := range r.URL.Query()["servers"] {
		for _, id := range strings.Split(v, ",") {
			ids[id] = true
		}
	}
	serveList(e, w, r, e.srv, z, listing[*server]{key: "servers", projectParam: "project", paging: pagingHeaders,
		match: func(s *server, q url.Values) bool {
			return (q.Get("state") == "" || q.Get("state") == s.State) &&
				(q.Get("commercial_type") == "" || q.Get("commercial_type") == s.CommercialType) &&
				(len(ids) == 0 || ids[s.ID])
		},
		// Newest first, like the real default order.
		less: func(a, b *server) bool {
			if !a.Created.Equal(b.Created) {
				return a.Created.After(b.Created)
			}
			return a.ID < b.ID
		},
		json: e.serverJSON})
}

func (e *Emulator) oneServer(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*server]{find: inZone(e.srv, z), notFound: named(instanceNotFound, "instance_server"),
		json: e.serverJSON, wrap: "server", patch: e.patchServer, badMethod: instanceMethodNotAllowed,
		del: func(w http.ResponseWriter, s *server) {
			if s.State != "stopped" && s.State != "stopped in place" {
				instanceInvalid(w, fmt.Sprintf("server %s is %s: it must be stopped before it is deleted (poweroff, or use the terminate action)", id, s.State))
				return
			}
			e.removeServer(s, false)
			noContent(w)
		}})
}

// patchServer applies a PATCH to s: its security group and public IPs must exist in its zone,
// an IP be free or s's own. Caller holds e.mu.
func (e *Emulator) patchServer(w http.ResponseWriter, r *http.Request, s *server) bool {
	z := s.Zone
	var req struct {
		nameTags
		DynamicIPRequired *bool     `json:"dynamic_ip_required"`
		PublicIPs         *[]string `json:"public_ips"`
		SecurityGroup     *struct {
			ID string `json:"id"`
		} `json:"security_group"`
	}
	if !decode(w, r, &req) {
		return false
	}
	if req.SecurityGroup != nil && req.SecurityGroup.ID != "" {
		g, ok := e.sgs[req.SecurityGroup.ID]
		if !ok || g.Zone != z {
			instanceNotFound(w, "instance_security_group", req.SecurityGroup.ID)
			return false
		}
	}
	if req.PublicIPs != nil {
		for _, ipid := range *req.PublicIPs {
			ip, ok := e.ips[ipid]
			if !ok || ip.Zone != z {
				instanceNotFound(w, "instance_ip", ipid)
				return false
			}
			if ip.ServerID != "" && ip.ServerID != s.ID {
				instanceInvalid(w, fmt.Sprintf("ip %s is already attached to server %s", ipid, ip.ServerID))
				return false
			}
		}
	}
	req.apply(&s.Name, &s.Tags)
	set(&s.DynamicIPRequired, req.DynamicIPRequired)
	if req.SecurityGroup != nil && req.SecurityGroup.ID != "" {
		s.SGID = req.SecurityGroup.ID
	}
	if req.PublicIPs != nil {
		want := map[string]bool{}
		for _, ipid := range *req.PublicIPs {
			want[ipid] = true
		}
		for _, ipid := range append([]string(nil), s.IPIDs...) {
			if !want[ipid] {
				e.detachIP(e.ips[ipid])
			}
		}
		for _, ipid := range *req.PublicIPs {
			if e.ips[ipid].ServerID != s.ID {
				e.attachIP(e.ips[ipid], s)
			}
		}
	}
	return e.touched(&s.Modified)
}

// removeServer deletes s, detaching its IPs (which survive) and its Block
// volumes (which become available). After a terminate the volumes are
// available as soon as the server is gone (fixtures: instance__server-*,
// the volume's next GET); after a DELETE of a stopped server they stay
// in_use a few seconds (detachVolumeLater). Caller holds e.mu.
func (e *Emulator) removeServer(s *server, terminated bool) {
	for _, ipid := range append([]string(nil), s.IPIDs...) {
		if ip, ok := e.ips[ipid]; ok {
			e.detachIP(ip)
		}
	}
	for _, vid := range s.VolumeIDs {
		if v, ok := e.vols[vid]; ok {
			if terminated {
				e.detachVolume(v)
			} else {
				e.detachVolumeLater(v)
			}
		}
	}
	delete(e.srv, s.ID)
	s.gen++
	e.deleted("instance_server", s.ID)
}

func (e *Emulator) serverAction(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	decodeLocked(e, w, r, func(req *instance.ServerActionRequest) {
		s, ok := instanceItem(w, e.srv, z, "instance_server", id)
		if !ok {
			return
		}
		allowed := false
		for _, a := range allowedActions(s.State) {
			allowed = allowed || a == string(req.Action)
		}
		if !allowed {
			instanceInvalid(w, fmt.Sprintf("action %q is not allowed while server %s is %q (allowed: %s)",
				req.Action, id, s.State, strings.Join(allowedActions(s.State), ", ")))
			return
		}
		s.gen++
		gen := s.gen
		set := func(state, detail string) {
			s.State, s.StateDetail, s.Modified = state, detail, e.clock().UTC()
		}
		// later runs done after lat unless another action or the server's removal came first.
		later := func(lat time.Duration, done func()) {
			e.after(lat, func() {
				if s.gen == gen && e.srv[s.ID] == s {
					done()
				}
			})
		}
		running := func() {
			set("running", "booting kernel")
			e.runningHook(s)
		}
		stopped := func(state, detail string) func() {
			return func() {
				set(state, detail)
				e.stoppedHook(s)
			}
		}
		switch req.Action {
		case "poweron":
			detail := "allocating node"
			if s.State == "stopped in place" {
				detail = "stopped in place"
			}
			set("starting", detail)
			later(e.lat.Poweron, running)
		case "poweroff":
			set("stopping", "stopping")
			later(e.lat.Poweroff, stopped("stopped", ""))
		case "stop_in_place":
			set("stopping", "stopping in place")
			later(e.lat.StopInPlace, stopped("stopped in place", "stopped in place"))
		case "reboot":
			set("running", "rebooting")
			later(e.lat.Reboot, running)
		case "terminate":
			set("stopping", "terminating")
			later(e.lat.Terminate, func() {
				e.stoppedHook(s)
				e.removeServer(s, true)
			})
		default:
			instanceInvalid(w, fmt.Sprintf("action %q is not emulated", req.Action))
			return
		}
		started := e.clock().UTC()
		writeJSON(w, http.StatusAccepted, map[string]any{"task": &instance.Task{
			ID: "00000000-0000-0000-0000-000000000000", Description: "fake task", StartedAt: &started, Status: "pending",
			HrefFrom: "/servers/" + id + "/action", HrefResult: "/servers/" + id, Zone: z,
		}})
	})
}

// runningHook queues InstanceRunning. Caller holds e.mu.
func (e *Emulator) runningHook(s *server) {
	h := e.opts.Hooks.InstanceRunning
	if h == nil {
		return
	}
	ev := InstanceEvent{Zone: string(s.Zone), ID: s.ID, Name: s.Name, Tags: cp(s.Tags), UserData: copyUD(s.userData),
		VolumeIDs: append([]string(nil), s.VolumeIDs...)}
	for _, id := range s.IPIDs {
		if ip, ok := e.ips[id]; ok {
			ev.PublicIPs = append(ev.PublicIPs, ip.Address.String())
		}
	}
	e.pending = append(e.pending, func() { h(ev) })
}

func (e *Emulator) stoppedHook(s *server) {
	if h := e.opts.Hooks.InstanceStopped; h != nil {
		id := s.ID
		e.pending = append(e.pending, func() { h(id) })
	}
}

// userData serves /servers/{id}/user_data[/{key}]: the list is JSON, a
// value is raw text (text/plain both ways, like the SDK sends it).
func (e *Emulator) userData(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	var body []byte
	if r.Method == http.MethodPatch {
		// Register row user-data-cap: 1 MiB per key (no source gives it), or, under too-small,
		// a cap below a control plane's config of about 80 kB.
		limit, says := 1<<20, "1 MiB"
		if e.opts.Readings.Is(assume.UserDataCap, "too-small") {
			limit, says = 64<<10, "64 KiB"
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
		if err != nil {
			invalidArg(w, "body", "could not read user data: "+err.Error())
			return
		}
		if len(b) > limit {
			invalidArg(w, "body", "user data is limited to "+says+" per key")
			return
		}
		body = b
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := instanceItem(w, e.srv, z, "instance_server", id)
	if !ok {
		return
	}
	key := r.PathValue("key")
	if key == "" {
		if r.Method != http.MethodGet {
			instanceInvalid(w, "method not allowed")
			return
		}
		keys := []string{}
		for k := range s.userData {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		writeJSON(w, http.StatusOK, map[string]any{"user_data": keys})
		return
	}
	switch r.Method {
	case http.MethodGet:
		v, ok := s.userData[key]
		if !ok {
			// Recorded: a bare 404, text/plain, empty body (scaleway-cli,
			// test-user-data-get-get-an-nonexistent-key cassette).
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(v)
	case http.MethodPatch:
		s.userData[key] = body
		noContent(w)
	case http.MethodDelete:
		delete(s.userData, key)
		noContent(w)
	default:
		instanceInvalid(w, "method not allowed")
	}
}

var _ = time.Second
