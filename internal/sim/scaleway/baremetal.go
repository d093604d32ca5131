package scaleway

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/pocbot/pocbot/internal/assume"
	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

type offerInfo struct {
	id, name, monthlyID, cpu, rng string
	nanosPerHour                  int32
	cores, threads, freq          uint32
	ramBytes, diskBytes, bw       uint64
	diskType                      string
}

// offers are the recorded hourly offers pocbot may pick (ids, prices and
// hardware as recorded in fr-par-2; the same list is served in every zone).
var offers = []offerInfo{
	{"8779d2c1-cd10-4a34-a006-cb5b1fb5cbc7", "EM-A116X-SSD", "7b3dae29-0658-4351-b8a7-7b97aef6efc2", "Intel Xeon E3 1220 or equivalent", "aluminium",
		77000000, 4, 4, 3100, 32000000000, 1024209543168, 500000000, "SSD"},
	{"f7241870-c383-4fa2-bbca-5189600df5c4", "EM-A115X-SSD", "f1322af3-53dd-473b-8749-83661fbb73d8", "Intel Xeon E3 1220 or equivalent", "aluminium",
		91000000, 4, 4, 3100, 32000000000, 1024209543168, 500000000, "SSD"},
	{"a5065ba4-dde2-45f3-adec-1ebbb27b766b", "EM-B112X-SSD", "", "Intel Xeon E5 2600 or equivalent", "beryllium",
		263000000, 6, 12, 2000, 192000000000, 1000204886016, 1000000000, "SSD"},
	{"ddb09834-8680-4339-b5e3-19ca5205fa1f", "EM-I215E-NVME", "44890f67-212b-4610-9170-4c199644525e", "AMD EPYC 7313P", "iridium",
		904000000, 16, 32, 3000, 256000000000, 1920383410176, 1000000000, "NVMe"},
}

type bmServer struct {
	ID, Name, Description, Project, Status, BootType string
	Zone                                             scw.Zone
	Tags                                             []string
	Offer                                            offerInfo
	IPv4                                             net.IP
	IPv4ID, IPv6ID                                   string
	delivered                                        bool
	rescueUser, rescuePassword                       string
	rescueShown                                      bool     // rescue_server answered (Options.RescueServerDelay, HideRescueServer)
	rescueKeys                                       []string // ssh_key_ids of the last rescue reboot
	Created, Updated                                 time.Time
	gen                                              int
}

// stockLeft is how many more servers of offer o may be ordered: Options.Stock's count, else the
// count register row em-stock plays for every offer (available: 10; low: 2, shown low; empty: 0).
func (e *Emulator) stockLeft(o offerInfo) int {
	total, ok := e.opts.Stock[o.name]
	if !ok {
		total = map[string]int{"available": 10, "low": 2, "empty": 0}[e.opts.Readings.Of(assume.EMStock)]
	}
	return total - e.stockUse[o.name]
}

func (e *Emulator) offerJSON(o offerInfo, z scw.Zone) map[string]any {
	stock := baremetal.OfferStockAvailable
	switch left := e.stockLeft(o); {
	case left <= 0:
		stock = baremetal.OfferStockEmpty
	case left <= 2:
		stock = baremetal.OfferStockLow
	}
	var monthly *string
	if o.monthlyID != "" {
		m := o.monthlyID
		monthly = &m
	}
	of := &baremetal.Offer{
		ID: o.id, Name: o.name, Stock: stock, Bandwidth: o.bw, MaxBandwidth: o.bw, CommercialRange: o.rng,
		PricePerHour: &scw.Money{CurrencyCode: "EUR", Nanos: o.nanosPerHour},
		Disks:        []*baremetal.Disk{{Capacity: scw.Size(o.diskBytes), Type: o.diskType}, {Capacity: scw.Size(o.diskBytes), Type: o.diskType}},
		Enable:       true,
		CPUs:         []*baremetal.CPU{{Name: o.cpu, CoreCount: o.cores, ThreadCount: o.threads, Frequency: o.freq}},
		Memories:     []*baremetal.Memory{{Capacity: scw.Size(o.ramBytes), Type: "DDR4", Frequency: 3200, IsEcc: true}},
		QuotaName:    OfferQuota(o.name), PersistentMemories: []*baremetal.PersistentMemory{}, RaidControllers: []*baremetal.RaidController{},
		IncompatibleOsIDs: []string{}, SubscriptionPeriod: baremetal.OfferSubscriptionPeriodHourly,
		Fee: &scw.Money{CurrencyCode: "EUR"}, Options: []*baremetal.OfferOptionOffer{}, PrivateBandwidth: o.bw,
		SharedBandwidth: true, Tags: []string{}, Gpus: []*baremetal.GPU{}, MonthlyOfferID: monthly, Zone: z,
	}
	return reshape(of, []string{"dual_attach"}, nil)
}

func (e *Emulator) bmJSON(b *bmServer) any {
	ips := []*baremetal.IP{}
	if b.delivered {
		ips = append(ips,
			&baremetal.IP{ID: b.IPv6ID, Address: net.ParseIP("fd00::" + b.IPv4.String()[4:]), Version: "IPv6", ReverseStatus: "unknown"},
			&baremetal.IP{ID: b.IPv4ID, Address: b.IPv4, Version: "IPv4", ReverseStatus: "unknown"})
	}
	var rescue *baremetal.ServerRescueServer
	if b.BootType == "rescue" && b.Status == "ready" && b.rescueShown {
		rescue = &baremetal.ServerRescueServer{User: b.rescueUser, Password: b.rescuePassword}
	}
	c, u := b.Created, b.Updated
	s := &baremetal.Server{
		ID: b.ID, OrganizationID: b.Project, ProjectID: b.Project, Name: b.Name, Description: b.Description, UpdatedAt: &u,
		CreatedAt: &c, Status: baremetal.ServerStatus(b.Status), OfferID: b.Offer.id, OfferName: b.Offer.name, Tags: cp(b.Tags),
		IPs: ips, BootType: baremetal.ServerBootType(b.BootType), Zone: b.Zone, PingStatus: "ping_status_unknown",
		Options: []*baremetal.ServerOption{}, RescueServer: rescue,
	}
	return reshape(s, []string{"protected", "user_data"}, nil)
}

func (e *Emulator) listOffers(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var list []offerInfo
	for _, o := range offers {
		if q.Get("subscription_period") == "monthly" || !nameMatch(o.name, q.Get("name")) {
			continue
		}
		list = append(list, o)
	}
	writePage(w, r, "offers", pagingBody, list, func(o offerInfo) any { return e.offerJSON(o, z) })
}

func (e *Emulator) getOffer(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, o := range offers {
		if o.id == id {
			writeJSON(w, http.StatusOK, e.offerJSON(o, z))
			return
		}
	}
	baremetalNotFound(w)
}

// bmActionRoute serves POST /servers/{id}/{action}.
func (e *Emulator) bmActionRoute(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	e.bmAction(w, r, z, id, r.PathValue("action"))
}

func (e *Emulator) createBM(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	var req baremetal.CreateServerRequest
	if !decode(w, r, &req) {
		return
	}
	var off *offerInfo
	for i := range offers {
		if offers[i].id == req.OfferID {
			off = &offers[i]
		}
	}
	if off == nil {
		invalidArg(w, "offer_id", fmt.Sprintf("offer %q does not exist", req.OfferID))
		return
	}
	if req.Install != nil {
		invalidArg(w, "install", "the emulator serves servers without install only (install_config_afterward)")
		return
	}
	if req.UserData != nil {
		// Recorded: an offer without cloud-init answers 503 with this body.
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"message": "cloud-init is not supported on this offer"})
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !quotas(e, w, e.bms, "baremetal_servers", OfferQuota(off.name), func(b *bmServer) bool { return b.Offer.name == off.name }) {
		return
	}
	if e.stockLeft(*off) <= 0 {
		outOfStock(w, "offer")
		return
	}
	e.stockUse[off.name]++
	now := e.clock().UTC()
	b := &bmServer{
		ID: e.newID(), Name: req.Name, Description: req.Description, Project: deref(req.ProjectID, deref(req.OrganizationID, "")),
		Status: "delivering", BootType: "normal", Zone: z, Tags: cp(req.Tags), Offer: *off, IPv4: e.newLoopback(),
		Created: now, Updated: now,
	}
	b.IPv4ID, b.IPv6ID = e.newID(), e.newID()
	e.bms[b.ID] = b
	gen := b.gen
	e.after(e.lat.BMDelivery, func() {
		if b.gen == gen && e.bms[b.ID] == b {
			b.Status, b.delivered, b.Updated = "ready", true, e.clock().UTC()
			e.bootedHook(b)
		}
	})
	writeJSON(w, http.StatusOK, e.bmJSON(b))
}

func (e *Emulator) listBM(w http.ResponseWriter, r *http.Request, z scw.Zone) {
	serveList(e, w, r, e.bms, z, listing[*bmServer]{key: "servers", projectParam: "project_id", paging: pagingBody,
		json: e.bmJSON})
}

func (e *Emulator) oneBM(w http.ResponseWriter, r *http.Request, z scw.Zone, id string) {
	serveOne(e, w, r, id, single[*bmServer]{find: inZone(e.bms, z), notFound: func(w http.ResponseWriter, _ string) { baremetalNotFound(w) },
		json: e.bmJSON, patch: e.patchBM, del: e.deleteBM, badMethod: methodNotAllowed})
}

// patchBM renames, describes or retags b. Caller holds e.mu.
func (e *Emulator) patchBM(w http.ResponseWriter, r *http.Request, b *bmServer) bool {
	var req struct {
		nameTags
		Description *string `json:"description"`
	}
	if !decode(w, r, &req) {
		return false
	}
	if !b.delivered && e.opts.Readings.Is(assume.EMPatchDelivering, "refused") {
		// Register row em-patch-delivering, reading refused: as reboot, start and stop answer.
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Server is not delivered"})
		return false
	}
	req.apply(&b.Name, &b.Tags)
	set(&b.Description, req.Description)
	return e.touched(&b.Updated)
}

// deleteBM starts deleting b: deleting, then gone (and its offer's stock back) after BMDelete.
// Caller holds e.mu.
func (e *Emulator) deleteBM(w http.ResponseWriter, b *bmServer) {
	if b.Status == "deleting" {
		transient(w, "server", b.ID, b.Status)
		return
	}
	b.Status, b.Updated = "deleting", e.clock().UTC()
	b.gen++
	gen := b.gen
	out := e.bmJSON(b)
	e.after(e.lat.BMDelete, func() {
		if b.gen == gen && e.bms[b.ID] == b {
			delete(e.bms, b.ID)
			e.stockUse[b.Offer.name]--
			e.deleted("baremetal_server", b.ID)
		}
	})
	writeJSON(w, http.StatusOK, out)
}

// bmAction serves reboot / start / stop. A reboot with boot_type rescue
// gives the server rescue credentials once it is up again.
func (e *Emulator) bmAction(w http.ResponseWriter, r *http.Request, z scw.Zone, id, action string) {
	decodeLocked(e, w, r, func(req *baremetal.RebootServerRequest) {
		b, ok := e.bms[id]
		if !ok || b.Zone != z {
			baremetalNotFound(w)
			return
		}
		if !b.delivered {
			// Recorded for reboot, start and stop alike (scaleway-cli,
			// test-{reboot,start,stop}-server-errors-*-while-not-delivered).
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Server is not delivered"})
			return
		}
		bt := string(req.BootType)
		if bt == "" || bt == "unknown_boot_type" {
			bt = "normal"
		}
		if bt != "normal" && bt != "rescue" {
			invalidArg(w, "boot_type", fmt.Sprintf("boot_type %q is not emulated: use normal or rescue", bt))
			return
		}
		var keys []string
		if bt == "rescue" {
			// The rescue image gets the keys of ssh_key_ids ("additional SSH public key IDs to
			// configure on rescue image") besides those of the server's install, which a server
			// delivered without install has none of: no id, no key.
			for _, id := range req.SSHKeyIDs {
				if k, ok := e.keys[id]; !ok || k.Project != b.Project {
					invalidArg(w, "ssh_key_ids", fmt.Sprintf("SSH key %q does not exist in the server's project", id))
					return
				}
			}
			keys = append(keys, req.SSHKeyIDs...)
		}
		var lat time.Duration
		switch action {
		case "reboot":
			if b.Status != "ready" {
				transient(w, "server", id, b.Status)
				return
			}
			lat = e.lat.BMNormalReboot
			if bt == "rescue" {
				lat = e.lat.BMRescueReboot
			}
		case "start":
			if b.Status != "stopped" {
				invalidArg(w, "status", fmt.Sprintf("server %s is %s: only a stopped server starts", id, b.Status))
				return
			}
			lat = e.lat.BMStart
			b.Status = "starting"
		case "stop":
			if b.Status != "ready" {
				transient(w, "server", id, b.Status)
				return
			}
			b.Status = "stopping"
			b.gen++
			gen := b.gen
			e.after(e.lat.BMStop, func() {
				if b.gen == gen && e.bms[b.ID] == b {
					b.Status = "stopped"
				}
			})
			writeJSON(w, http.StatusOK, e.bmJSON(b))
			return
		default:
			baremetalNotFound(w)
			return
		}
		if action == "reboot" {
			b.Status = "stopping"
		}
		b.gen++
		gen := b.gen
		b.rescueShown, b.rescueKeys = false, keys
		e.after(lat, func() {
			if b.gen != gen || e.bms[b.ID] != b {
				return
			}
			b.Status, b.BootType, b.Updated = "ready", bt, e.clock().UTC()
			if bt == "rescue" {
				b.rescueUser = "rescue"
				b.rescuePassword = e.newID()[:18]
				switch {
				case e.opts.HideRescueServer:
				case e.opts.RescueServerDelay > 0:
					e.after(e.opts.RescueServerDelay, func() {
						if b.gen == gen && e.bms[b.ID] == b {
							b.rescueShown = true
						}
					})
				default:
					b.rescueShown = true
				}
			}
			e.bootedHook(b)
		})
		b.Updated = e.clock().UTC()
		writeJSON(w, http.StatusOK, e.bmJSON(b))
	})
}

// bootedHook queues BaremetalBooted; a rescue boot carries the keys of its ssh_key_ids, resolved
// to public keys. Caller holds e.mu.
func (e *Emulator) bootedHook(b *bmServer) {
	h := e.opts.Hooks.BaremetalBooted
	if h == nil {
		return
	}
	ev := BaremetalEvent{Zone: string(b.Zone), ID: b.ID, Name: b.Name, Tags: cp(b.Tags), BootType: b.BootType, IP: b.IPv4.String()}
	if b.BootType == "rescue" {
		ev.RescueUser, ev.RescuePassword = b.rescueUser, b.rescuePassword
		for _, id := range b.rescueKeys {
			if k, ok := e.keys[id]; ok {
				ev.SSHKeyIDs = append(ev.SSHKeyIDs, id)
				ev.SSHPublicKeys = append(ev.SSHPublicKeys, k.PublicKey)
			}
		}
	}
	e.pending = append(e.pending, func() { h(ev) })
}
