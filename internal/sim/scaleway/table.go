package scaleway

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"time"

	"github.com/scaleway/scaleway-sdk-go/scw"
)

// meta is what every zoned resource has in common: what the generic table
// filters on and what Inventory reports.
type meta struct {
	ID, Name, Project string
	Zone              scw.Zone
	Tags              []string
}

// resource is a zoned resource kept in a table.
type resource interface{ meta() meta }

func (s *server) meta() meta   { return meta{s.ID, s.Name, s.Project, s.Zone, s.Tags} }
func (i *flexIP) meta() meta   { return meta{i.ID, i.Address.String(), i.Project, i.Zone, i.Tags} }
func (g *secGroup) meta() meta { return meta{g.ID, g.Name, g.Project, g.Zone, g.Tags} }
func (v *volume) meta() meta   { return meta{v.ID, v.Name, v.Project, v.Zone, v.Tags} }
func (s *snapshot) meta() meta { return meta{s.ID, s.Name, s.Project, s.Zone, s.Tags} }
func (b *bmServer) meta() meta { return meta{b.ID, b.Name, b.Project, b.Zone, b.Tags} }

// table holds the live resources of one kind, by id.
type table[T resource] map[string]T

// paging is how an API tells the size of a list.
type paging int

const (
	// pagingHeaders is the Instance API: per_page, X-Total-Count and Link
	// headers, no total in the body.
	pagingHeaders paging = iota
	// pagingBody is Block, Elastic Metal, IAM and Domain: page_size and
	// total_count in the body.
	pagingBody
)

// listing describes one list endpoint over a table.
type listing[T resource] struct {
	key          string // the body's key for the list ("servers", "volumes", …)
	projectParam string // "project" (Instance) or "project_id"
	paging       paging
	// match applies the endpoint's own filters, beyond zone, tags, name
	// and project; nil matches everything.
	match func(T, url.Values) bool
	// less orders the list; nil orders by id.
	less func(a, b T) bool
	json func(T) any
}

// serveList answers a list request under e.mu: zone, tags (all present), name
// (substring), project and the endpoint's filters, then one page.
func serveList[T resource](e *Emulator, w http.ResponseWriter, r *http.Request, t table[T], z scw.Zone, l listing[T]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	tags := tagFilter(r)
	var list []T
	for _, v := range t {
		m := v.meta()
		if m.Zone != z || !hasAllTags(m.Tags, tags) || !nameMatch(m.Name, q.Get("name")) ||
			(q.Get(l.projectParam) != "" && q.Get(l.projectParam) != m.Project) ||
			(l.match != nil && !l.match(v, q)) {
			continue
		}
		list = append(list, v)
	}
	less := l.less
	if less == nil {
		less = func(a, b T) bool { return a.meta().ID < b.meta().ID }
	}
	sort.Slice(list, func(a, b int) bool { return less(list[a], list[b]) })
	writePage(w, r, l.key, l.paging, list, l.json)
}

// serveMap answers, under e.mu, one page (paged in the body) of the values of the map that
// m returns which match the query, ordered by their keys.
func serveMap[T any](e *Emulator, w http.ResponseWriter, r *http.Request, key string, m func() map[string]T,
	match func(T, url.Values) bool, toJSON func(T) any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	all := m()
	var list []T
	for _, id := range slices.Sorted(maps.Keys(all)) {
		if match(all[id], q) {
			list = append(list, all[id])
		}
	}
	writePage(w, r, key, pagingBody, list, toJSON)
}

// asJSON is writePage's toJSON for values whose SDK type is already the answer's shape.
func asJSON[T any](v T) any { return v }

// writePage answers one page of list, paged as the API pages.
func writePage[T any](w http.ResponseWriter, r *http.Request, key string, pg paging, list []T, toJSON func(T) any) {
	var page []T
	var ok bool
	if pg == pagingHeaders {
		page, ok = instancePageOf(w, r, list)
	} else {
		page, ok = pageOf(w, r, list)
	}
	if !ok {
		return
	}
	out := make([]any, 0, len(page))
	for _, v := range page {
		out = append(out, toJSON(v))
	}
	body := map[string]any{key: out}
	if pg == pagingBody {
		body["total_count"] = len(list)
	}
	writeJSON(w, http.StatusOK, body)
}

// single describes the endpoint of one resource: GET, PATCH and DELETE on …/{id}.
type single[T any] struct {
	find     func(id string) (T, bool) // caller holds e.mu
	notFound func(w http.ResponseWriter, id string)
	json     func(T) any // the answer to a GET and to a PATCH…
	wrap     string      // …under this key (the Instance API's "server", "ip" …), or bare
	// patch applies a PATCH body to v, answering a refusal itself (false); nil refuses
	// the method.
	patch func(w http.ResponseWriter, r *http.Request, v T) bool
	// del deletes v and answers; nil refuses the method.
	del       func(w http.ResponseWriter, v T)
	badMethod func(w http.ResponseWriter) // the API's answer to a method it does not serve
}

// serveOne answers one resource's request under e.mu: its 404, GET, PATCH or DELETE.
func serveOne[T any](e *Emulator, w http.ResponseWriter, r *http.Request, id string, s single[T]) {
	e.mu.Lock()
	defer e.mu.Unlock()
	v, ok := s.find(id)
	if !ok {
		s.notFound(w, id)
		return
	}
	answer := func() {
		if s.wrap == "" {
			writeJSON(w, http.StatusOK, s.json(v))
		} else {
			writeJSON(w, http.StatusOK, map[string]any{s.wrap: s.json(v)})
		}
	}
	switch {
	case r.Method == http.MethodGet:
		answer()
	case r.Method == http.MethodPatch && s.patch != nil:
		if s.patch(w, r, v) {
			answer()
		}
	case r.Method == http.MethodDelete && s.del != nil:
		s.del(w, v)
	default:
		s.badMethod(w)
	}
}

// inZone finds an id of t that is in zone z.
func inZone[T resource](t table[T], z scw.Zone) func(string) (T, bool) {
	return func(id string) (T, bool) {
		v, ok := t[id]
		return v, ok && v.meta().Zone == z
	}
}

// instanceItem finds id of t in zone z; else it answers the Instance API's 404 for resource.
// Caller holds e.mu.
func instanceItem[T resource](w http.ResponseWriter, t table[T], z scw.Zone, resource, id string) (T, bool) {
	v, ok := inZone(t, z)(id)
	if !ok {
		instanceNotFound(w, resource, id)
	}
	return v, ok
}

// inMap finds an id of m.
func inMap[T any](m map[string]T) func(string) (T, bool) {
	return func(id string) (T, bool) {
		v, ok := m[id]
		return v, ok
	}
}

// set copies a PATCH field into dst when the body has it.
func set[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// touched stamps a PATCHed resource's update time (at): a PATCH's last word, true.
func (e *Emulator) touched(at *time.Time) bool {
	*at = e.clock().UTC()
	return true
}

// nameTags is the part of a PATCH body most resources share.
type nameTags struct {
	Name *string   `json:"name"`
	Tags *[]string `json:"tags"`
}

// apply copies the body's name and tags, where it has them, into name and tags.
func (p nameTags) apply(name *string, tags *[]string) {
	set(name, p.Name)
	setTags(tags, p.Tags)
}

// setTags copies a PATCH's tags into dst when the body has them.
func setTags(dst *[]string, p *[]string) {
	if p != nil {
		*dst = cp(*p)
	}
}

// methodNotAllowed is the Block, Elastic Metal and IAM answer to a method an endpoint does
// not serve; instanceMethodNotAllowed is the Instance API's.
func methodNotAllowed(w http.ResponseWriter)         { invalidArg(w, "method", "method not allowed") }
func instanceMethodNotAllowed(w http.ResponseWriter) { instanceInvalid(w, "method not allowed") }

// named wraps a 404 answer of one resource type into a single's notFound.
func named(notFound func(w http.ResponseWriter, resource, id string), resource string) func(http.ResponseWriter, string) {
	return func(w http.ResponseWriter, id string) { notFound(w, resource, id) }
}
