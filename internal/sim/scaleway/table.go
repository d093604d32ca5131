package scaleway

import (
	"net/http"
	"net/url"
	"sort"

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

// serveList answers a list request: zone, tags (all present), name
// (substring), project and the endpoint's filters, then one page. Caller
// holds e.mu.
func serveList[T resource](w http.ResponseWriter, r *http.Request, t table[T], z scw.Zone, l listing[T]) {
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
