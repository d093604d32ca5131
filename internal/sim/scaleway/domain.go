package scaleway

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	domain "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"

	"github.com/pocbot/pocbot/internal/assume"
)

type record struct {
	ID, Name, Type, Data string
	TTL, Priority        uint32
	Updated              time.Time
	Comment              *string // kept, as the real API keeps it (domain-record cassettes)
}

// recordJSON is a record as the API answers it. Whether the comment written comes back is
// register row dns-comment: echoed, or dropped (comment: null, as in every public recording).
func (e *Emulator) recordJSON(r *record) any {
	u := r.Updated
	comment := r.Comment
	if e.opts.Readings.Is(assume.DNSComment, "dropped") {
		comment = nil
	}
	return reshape(&domain.Record{ID: r.ID, Name: r.Name, Type: domain.RecordType(r.Type), Data: r.Data, TTL: r.TTL,
		Priority: r.Priority, UpdatedAt: &u, Comment: comment}, nil, nil)
}

func (e *Emulator) zoneExists(z string) bool {
	if len(e.opts.DNSZones) == 0 {
		return true
	}
	for _, x := range e.opts.DNSZones {
		if x == z {
			return true
		}
	}
	return false
}

func (e *Emulator) listDNSZones(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	names := e.opts.DNSZones
	if z := q.Get("dns_zones"); z != "" && e.zoneExists(z) {
		names = []string{z}
	} else if z := q.Get("dns_zone"); z != "" && e.zoneExists(z) {
		names = []string{z}
	}
	out := []any{}
	for _, n := range names {
		sub, dom := "", n
		if parts := strings.SplitN(n, ".", 2); len(parts) == 2 && strings.Count(n, ".") > 1 {
			sub, dom = parts[0], parts[1]
		}
		u := e.clock().UTC()
		out = append(out, reshape(&domain.DNSZone{Domain: dom, Subdomain: sub, Ns: []string{"ns0.dom.scw.cloud", "ns1.dom.scw.cloud"},
			NsDefault: []string{"ns0.dom.scw.cloud", "ns1.dom.scw.cloud"}, NsMaster: []string{}, Status: "active",
			UpdatedAt: &u, LinkedProducts: []domain.LinkedProduct{}}, nil, nil))
	}
	writeJSON(w, http.StatusOK, map[string]any{"dns_zones": out, "total_count": len(out)})
}

func (e *Emulator) listRecords(w http.ResponseWriter, r *http.Request) {
	zone := r.PathValue("dns_zone")
	if !e.zoneReachable(w, zone) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var list []*record
	for _, rec := range e.records[zone] {
		// The record name filter is exact here: an empty name is the apex.
		if _, has := q["name"]; has && q.Get("name") != "" && rec.Name != q.Get("name") {
			continue
		}
		if t := q.Get("type"); t != "" && t != "unknown" && rec.Type != t {
			continue
		}
		if id := q.Get("id"); id != "" && rec.ID != id {
			continue
		}
		list = append(list, rec)
	}
	sort.SliceStable(list, func(a, b int) bool { return list[a].Name < list[b].Name })
	writePage(w, r, "records", pagingBody, list, e.recordJSON)
}

func (e *Emulator) patchRecords(w http.ResponseWriter, r *http.Request) {
	zone := r.PathValue("dns_zone")
	var req domain.UpdateDNSZoneRecordsRequest
	if !decode(w, r, &req) {
		return
	}
	if !e.zoneReachable(w, zone) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	recs := append([]*record(nil), e.records[zone]...)
	var changed []*record
	newRec := func(x *domain.Record) (*record, error) {
		if x == nil || x.Type == "" || x.Type == "unknown" {
			return nil, fmt.Errorf("record type is required")
		}
		data := x.Data
		if x.Type == "TXT" && !strings.HasPrefix(data, `"`) {
			data = `"` + data + `"` // recorded: TXT data comes back quoted
		}
		ttl := x.TTL
		if ttl == 0 {
			ttl = 3600
		}
		return &record{ID: e.newID(), Name: x.Name, Type: string(x.Type), Data: data, TTL: ttl, Priority: x.Priority, Updated: e.clock().UTC(),
			Comment: x.Comment}, nil
	}
	match := func(rec *record, id *string, f *domain.RecordIdentifier) bool {
		if id != nil {
			return rec.ID == *id
		}
		if f == nil {
			return false
		}
		return rec.Name == f.Name && rec.Type == string(f.Type) && (f.Data == nil || rec.Data == *f.Data)
	}
	// drop leaves out of recs the records a change names; an id that names none is a 404.
	drop := func(recs []*record, id *string, f *domain.RecordIdentifier) ([]*record, bool) {
		var keep []*record
		for _, rec := range recs {
			if !match(rec, id, f) {
				keep = append(keep, rec)
			}
		}
		if id != nil && len(keep) == len(recs) {
			blockNotFound(w, "dns_record", *id)
			return nil, false
		}
		return keep, true
	}
	var ok bool
	for i, c := range req.Changes {
		switch {
		case c == nil:
		case c.Add != nil:
			for _, x := range c.Add.Records {
				rec, err := newRec(x)
				if err != nil {
					invalidArg(w, fmt.Sprintf("changes.%d.add", i), err.Error())
					return
				}
				recs = append(recs, rec)
				changed = append(changed, rec)
			}
		case c.Set != nil:
			if recs, ok = drop(recs, c.Set.ID, c.Set.IDFields); !ok {
				return
			}
			for j, x := range c.Set.Records {
				rec, err := newRec(x)
				if err != nil {
					invalidArg(w, fmt.Sprintf("changes.%d.set", i), err.Error())
					return
				}
				if j == 0 && c.Set.ID != nil {
					rec.ID = *c.Set.ID // a set by id updates that record in place
				}
				recs = append(recs, rec)
				changed = append(changed, rec)
			}
		case c.Delete != nil:
			if recs, ok = drop(recs, c.Delete.ID, c.Delete.IDFields); !ok {
				return
			}
		}
	}
	// Deleted hooks for records that disappeared.
	left := map[string]bool{}
	for _, rec := range recs {
		left[rec.ID] = true
	}
	for _, rec := range e.records[zone] {
		if !left[rec.ID] {
			e.deleted("domain_record", rec.ID)
		}
	}
	e.records[zone] = recs
	out := []any{}
	// return_all_records is a nullable bool: only an explicit false answers with the changed
	// records alone; absent (null) answers with every record of the zone, the stricter reading
	// (contract table).
	src := changed
	if req.ReturnAllRecords == nil || *req.ReturnAllRecords {
		src = recs
	}
	for _, rec := range src {
		out = append(out, e.recordJSON(rec))
	}
	writeJSON(w, http.StatusOK, map[string]any{"records": out})
}
