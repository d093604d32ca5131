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

	// Instance.
	const in = "/instance/v1/zones/{zone}"
	m.HandleFunc("GET "+in+"/products/servers", zoned(e.listServerTypes))
	m.HandleFunc("GET "+in+"/products/servers/availability", zoned(e.listServerAvailability))
	m.HandleFunc("POST "+in+"/ips", zoned(e.createIP))
	m.HandleFunc("GET "+in+"/ips", zoned(e.listIPs))
	each(one, in+"/ips/{id}", zonedID(e.oneIP))
	m.HandleFunc("POST "+in+"/security_groups", zoned(e.createSG))
	m.HandleFunc("GET "+in+"/security_groups", zoned(e.listSGs))
	each(one, in+"/security_groups/{id}", zonedID(e.oneSG))
	each([]string{http.MethodGet, http.MethodPut, http.MethodPatch}, in+"/security_groups/{id}/rules", zonedID(e.sgRules))
	m.HandleFunc("POST "+in+"/servers", zoned(e.createServer))
	m.HandleFunc("GET "+in+"/servers", zoned(e.listServers))
	each(one, in+"/servers/{id}", zonedID(e.oneServer))
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
		m.HandleFunc("POST "+bl+"/volumes", zoned(e.createVolume))
		m.HandleFunc("GET "+bl+"/volumes", zoned(e.listVolumes))
		each(one, bl+"/volumes/{id}", zonedID(e.oneVolume))
		m.HandleFunc("POST "+bl+"/snapshots", zoned(e.createSnapshot))
		m.HandleFunc("GET "+bl+"/snapshots", zoned(e.listSnapshots))
		m.HandleFunc("POST "+bl+"/snapshots/import-from-object-storage", zoned(e.importSnapshot))
		each(one, bl+"/snapshots/{id}", zonedID(e.oneSnapshot))
	}

	// Elastic Metal.
	const bm = "/baremetal/v1/zones/{zone}"
	m.HandleFunc("GET "+bm+"/offers", zoned(e.listOffers))
	m.HandleFunc("GET "+bm+"/offers/{id}", zonedID(e.getOffer))
	m.HandleFunc("POST "+bm+"/servers", zoned(e.createBM))
	m.HandleFunc("GET "+bm+"/servers", zoned(e.listBM))
	each(one, bm+"/servers/{id}", zonedID(e.oneBM))
	m.HandleFunc("POST "+bm+"/servers/{id}/{action}", zonedID(e.bmActionRoute))
	m.HandleFunc("GET /baremetal/v3/zones/{zone}/server-private-networks", zoned(func(w http.ResponseWriter, _ *http.Request, _ scw.Zone) {
		writeJSON(w, http.StatusOK, map[string]any{"server_private_networks": []any{}, "total_count": 0})
	}))

	// IAM.
	m.HandleFunc("GET /iam/v1alpha1/quota", e.listQuota)
	m.HandleFunc("GET /iam/v1alpha1/quota/{name}", e.getQuotum)
	m.HandleFunc("POST /iam/v1alpha1/ssh-keys", e.createSSHKey)
	m.HandleFunc("GET /iam/v1alpha1/ssh-keys", e.listSSHKeys)
	each(one, "/iam/v1alpha1/ssh-keys/{id}", e.oneSSHKey)
	m.HandleFunc("POST /iam/v1alpha1/applications", e.createApplication)
	m.HandleFunc("GET /iam/v1alpha1/applications", e.listApplications)
	each(one, "/iam/v1alpha1/applications/{id}", e.oneApplication)
	m.HandleFunc("POST /iam/v1alpha1/policies", e.createPolicy)
	m.HandleFunc("GET /iam/v1alpha1/policies", e.listPolicies)
	each(one, "/iam/v1alpha1/policies/{id}", e.onePolicy)
	m.HandleFunc("GET /iam/v1alpha1/rules", e.listRules)
	m.HandleFunc("POST /iam/v1alpha1/api-keys", e.createAPIKey)
	m.HandleFunc("GET /iam/v1alpha1/api-keys", e.listAPIKeys)
	each(one, "/iam/v1alpha1/api-keys/{id}", e.oneAPIKey)

	// Domain.
	m.HandleFunc("GET /domain/v2beta1/dns-zones", e.listDNSZones)
	m.HandleFunc("GET /domain/v2beta1/dns-zones/{dns_zone}/records", e.listRecords)
	m.HandleFunc("PATCH /domain/v2beta1/dns-zones/{dns_zone}/records", e.patchRecords)

	m.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { baremetalNotFound(w) })
	return m
}
