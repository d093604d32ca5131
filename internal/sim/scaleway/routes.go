package scaleway

import (
	"net/http"

	"github.com/scaleway/scaleway-sdk-go/scw"
)

// zoned adapts a handler of one zone's collection: the {zone} wildcard must
// be a zone name, else the answer is the gateway's bare 404.
func zoned(h func(http.ResponseWriter, *http.Request, scw.Zone)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		z := zoneOf(r.PathValue("zone"))
		if z == "" {
			baremetalNotFound(w)
			return
		}
		h(w, r, scw.Zone(z))
	}
}

// zonedID adapts a handler of one resource: {zone} and {id}.
func zonedID(h func(http.ResponseWriter, *http.Request, scw.Zone, string)) http.HandlerFunc {
	return zoned(func(w http.ResponseWriter, r *http.Request, z scw.Zone) { h(w, r, z, r.PathValue("id")) })
}

// routes is the API surface the emulator serves, one method-and-pattern per
// operation (the SDK's own paths: api/*/v1*/*_sdk.go of scaleway-sdk-go).
// Anything else is the gateway's bare 404.
func (e *Emulator) routes() *http.ServeMux {
	m := http.NewServeMux()
	each := func(methods []string, pattern string, h http.HandlerFunc) {
		for _, meth := range methods {
			m.HandleFunc(meth+" "+pattern, h)
		}
	}
	one := []string{http.MethodGet, http.MethodPatch, http.MethodDelete}
	// collection registers a zoned collection's POST and GET, and its items' GET, PATCH and DELETE.
	collection := func(path string, create, list func(http.ResponseWriter, *http.Request, scw.Zone),
		item func(http.ResponseWriter, *http.Request, scw.Zone, string)) {
		m.HandleFunc("POST "+path, zoned(create))
		m.HandleFunc("GET "+path, zoned(list))
		each(one, path+"/{id}", zonedID(item))
	}
	// global is collection for an API without zones (IAM).
	global := func(path string, create, list, item http.HandlerFunc) {
		m.HandleFunc("POST "+path, create)
		m.HandleFunc("GET "+path, list)
		each(one, path+"/{id}", item)
	}

	// Instance.
	const in = "/instance/v1/zones/{zone}"
	m.HandleFunc("GET "+in+"/products/servers", zoned(e.listServerTypes))
	m.HandleFunc("GET "+in+"/products/servers/availability", zoned(e.listServerAvailability))
	collection(in+"/ips", e.createIP, e.listIPs, e.oneIP)
	collection(in+"/security_groups", e.createSG, e.listSGs, e.oneSG)
	each([]string{http.MethodGet, http.MethodPut, http.MethodPatch}, in+"/security_groups/{id}/rules", zonedID(e.sgRules))
	collection(in+"/servers", e.createServer, e.listServers, e.oneServer)
	m.HandleFunc("POST "+in+"/servers/{id}/action", zonedID(e.serverAction))
	m.HandleFunc("GET "+in+"/servers/{id}/user_data", zonedID(e.userData))
	each(one, in+"/servers/{id}/user_data/{key}", zonedID(e.userData))
	// pocbot has only Block (sbs) volumes; the Instance API does not know
	// them, exactly like the recordings show.
	m.HandleFunc("GET "+in+"/volumes/{id}", zonedID(func(w http.ResponseWriter, _ *http.Request, _ scw.Zone, id string) {
		instanceNotFound(w, "instance_volume", id)
	}))
	// The provider reads it on every server read; pocbot uses no private
	// network, so the answer is always empty.
	m.HandleFunc("GET /instance/v2alpha1/zones/{zone}/private-network-interfaces", zoned(func(w http.ResponseWriter, _ *http.Request, _ scw.Zone) {
		writeJSON(w, http.StatusOK, map[string]any{"private_network_interfaces": []any{}, "total_count": 0})
	}))

	// Block Storage (v1, and v1alpha1 which older SDKs call).
	for _, bl := range []string{"/block/v1/zones/{zone}", "/block/v1alpha1/zones/{zone}"} {
		m.HandleFunc("GET "+bl+"/volume-types", zoned(e.volumeTypes))
		collection(bl+"/volumes", e.createVolume, e.listVolumes, e.oneVolume)
		collection(bl+"/snapshots", e.createSnapshot, e.listSnapshots, e.oneSnapshot)
		m.HandleFunc("POST "+bl+"/snapshots/import-from-object-storage", zoned(e.importSnapshot))
	}

	// Elastic Metal.
	const bm = "/baremetal/v1/zones/{zone}"
	m.HandleFunc("GET "+bm+"/offers", zoned(e.listOffers))
	m.HandleFunc("GET "+bm+"/offers/{id}", zonedID(e.getOffer))
	collection(bm+"/servers", e.createBM, e.listBM, e.oneBM)
	m.HandleFunc("POST "+bm+"/servers/{id}/{action}", zonedID(e.bmActionRoute))
	m.HandleFunc("GET /baremetal/v3/zones/{zone}/server-private-networks", zoned(func(w http.ResponseWriter, _ *http.Request, _ scw.Zone) {
		writeJSON(w, http.StatusOK, map[string]any{"server_private_networks": []any{}, "total_count": 0})
	}))

	// IAM.
	m.HandleFunc("GET /iam/v1alpha1/quota", e.listQuota)
	m.HandleFunc("GET /iam/v1alpha1/quota/{name}", e.getQuotum)
	global("/iam/v1alpha1/ssh-keys", e.createSSHKey, e.listSSHKeys, e.oneSSHKey)
	global("/iam/v1alpha1/applications", e.createApplication, e.listApplications, e.oneApplication)
	global("/iam/v1alpha1/policies", e.createPolicy, e.listPolicies, e.onePolicy)
	m.HandleFunc("GET /iam/v1alpha1/rules", e.listRules)
	global("/iam/v1alpha1/api-keys", e.createAPIKey, e.listAPIKeys, e.oneAPIKey)

	// Domain.
	m.HandleFunc("GET /domain/v2beta1/dns-zones", e.listDNSZones)
	m.HandleFunc("GET /domain/v2beta1/dns-zones/{dns_zone}/records", e.listRecords)
	m.HandleFunc("PATCH /domain/v2beta1/dns-zones/{dns_zone}/records", e.patchRecords)

	m.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { baremetalNotFound(w) })
	return m
}
