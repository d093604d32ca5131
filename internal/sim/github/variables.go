package github

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// Repository variables (GET/POST …/actions/variables, GET/PATCH/DELETE …/actions/variables/{name}):
// where `bot init` keeps its record of what it wrote. Who may write them is read permissively
// (any writer; doc.go's row says why), so that a test can play a write user planting one.

type storedVariable struct {
	name, value      string
	created, updated string
}

// RepoVariable returns a repository variable's value as a workflow would see it (vars.NAME).
func (s *Server) RepoVariable(fullName, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.adminOf(s.mustRepo(fullName)).variables[strings.ToUpper(name)]
	if !ok {
		return "", false
	}
	return v.value, true
}

// variablesRoute serves …/actions/variables[/{name}]; rest is what follows "variables".
func (s *Server) variablesRoute(c *call, r *repo, rest []string) {
	a := s.adminOf(r)
	now := s.now().UTC().Format("2006-01-02T15:04:05Z")
	m := c.r.Method
	switch {
	case len(rest) == 0 && m == http.MethodGet:
		perPage, _ := strconv.Atoi(c.r.URL.Query().Get("per_page"))
		if perPage <= 0 {
			perPage = 10
		}
		perPage = min(perPage, 30)
		page, _ := strconv.Atoi(c.r.URL.Query().Get("page"))
		page = max(page, 1)
		names := make([]string, 0, len(a.variables))
		for k := range a.variables {
			names = append(names, k)
		}
		sort.Strings(names)
		list := []map[string]string{}
		for i := (page - 1) * perPage; i < len(names) && i < page*perPage; i++ {
			list = append(list, a.variables[names[i]].json())
		}
		c.json(http.StatusOK, map[string]any{"total_count": len(names), "variables": list})
	case len(rest) == 0 && m == http.MethodPost:
		var body struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		}
		if !c.decode(1<<20, &body) || !validVariable(c, body.Name, body.Value) {
			return
		}
		k := strings.ToUpper(body.Name)
		if _, ok := a.variables[k]; ok {
			c.fail(http.StatusConflict, "Already exists - Variable already exists")
			return
		}
		a.variables[k] = &storedVariable{name: k, value: body.Value, created: now, updated: now}
		c.json(http.StatusCreated, map[string]any{})
	case len(rest) == 1:
		k := strings.ToUpper(rest[0])
		v, ok := a.variables[k]
		if !ok {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		switch m {
		case http.MethodGet:
			c.json(http.StatusOK, v.json())
		case http.MethodPatch:
			var body struct {
				Name  *string `json:"name"`
				Value *string `json:"value"`
			}
			if !c.decode(1<<20, &body) {
				return
			}
			name, value := v.name, v.value
			if body.Name != nil {
				name = strings.ToUpper(*body.Name)
			}
			if body.Value != nil {
				value = *body.Value
			}
			if !validVariable(c, name, value) {
				return
			}
			if _, taken := a.variables[name]; taken && name != k {
				c.fail(http.StatusConflict, "Already exists - Variable already exists")
				return
			}
			delete(a.variables, k)
			v.name, v.value, v.updated = name, value, now
			a.variables[name] = v
			c.noContent()
		case http.MethodDelete:
			delete(a.variables, k)
			c.noContent()
		default:
			c.fail(http.StatusNotFound, "Not Found")
		}
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (v *storedVariable) json() map[string]string {
	return map[string]string{"name": v.name, "value": v.value, "created_at": v.created, "updated_at": v.updated}
}

// validVariable answers 422 for a name or value GitHub refuses: the secrets' naming rules, 48 KB.
func validVariable(c *call, name, value string) bool {
	switch {
	case !validSecretName(name):
		c.fail(http.StatusUnprocessableEntity, "Variable names can only contain alphanumeric characters ([a-z], [A-Z], [0-9]) or underscores (_), must not start with a number or GITHUB_")
	case len(value) > 48*1024:
		c.fail(http.StatusUnprocessableEntity, "Validation Failed: variables are limited to 48 KB")
	default:
		return true
	}
	return false
}

func (c *call) noContent() {
	c.status = http.StatusNoContent
	c.w.WriteHeader(http.StatusNoContent)
}
