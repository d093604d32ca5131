package scaleway

import (
	"net/http"
	"slices"

	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
)

// zoneReachable answers for a zone the API key cannot use and reports whether the call may go on:
//   - a zone of another project: 403 permissions_denied. Source silent on the exact body for DNS;
//     the shape is the one scaleway-sdk-go v1.39.0 decodes into scw.PermissionsDeniedError
//     (scw/errors.go, type "permissions_denied" with details[{resource, action}]), the stricter
//     reading (refused, not hidden);
//   - a zone that does not exist: the Block-style 404 (resource dns_zone).
func (e *Emulator) zoneReachable(w http.ResponseWriter, zone string) bool {
	if slices.Contains(e.opts.ForeignDNSZones, zone) {
		writeJSON(w, http.StatusForbidden, map[string]any{
			"type": "permissions_denied", "message": "insufficient permissions",
			"details": []map[string]any{{"resource": "dns_zone", "action": "read"}},
		})
		return false
	}
	if !e.zoneExists(zone) {
		blockNotFound(w, "dns_zone", zone)
		return false
	}
	return true
}

// SeedDNSRecord puts a record into zone as its owner would have made it outside pocbot (a zone
// usually serves more than the clusters: `edge`, the apex, mail), and returns its id.
func (e *Emulator) SeedDNSRecord(zone string, rec domain.Record) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ttl := rec.TTL
	if ttl == 0 {
		ttl = 3600
	}
	r := &record{ID: e.newID(), Name: rec.Name, Type: string(rec.Type), Data: rec.Data, TTL: ttl, Priority: rec.Priority,
		Updated: e.clock().UTC(), Comment: rec.Comment}
	e.records[zone] = append(e.records[zone], r)
	return r.ID
}

// DNSRecords returns a copy of zone's records.
func (e *Emulator) DNSRecords(zone string) []domain.Record {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []domain.Record
	for _, r := range e.records[zone] {
		out = append(out, domain.Record{ID: r.ID, Name: r.Name, Type: domain.RecordType(r.Type), Data: r.Data, TTL: r.TTL, Comment: r.Comment})
	}
	return out
}
