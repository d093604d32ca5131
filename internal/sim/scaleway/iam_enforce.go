package scaleway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
)

// IAM permission sets, enforced on every call made with an API key created through IAM (or
// recorded by AddAPIKey): the call needs a permission set of its product, read or write, granted
// by one of the key's application's policies in the right scope. The emulator's own secret key
// (Options.SecretKey), when it is no IAM key, and a user's key (AddUserKey) are the organization
// owner's: they may do everything.
// Sources: docs-content pages/iam/reference-content/permission-sets.mdx (validated 2026-03-20):
// the sets "Scoped by Organization" (OrganizationReadOnly: "Read access to the Organization's
// general information (e.g. Organization ID and quotas)"; IAMReadOnly, IAMManager, …) and the
// sets "Scoped by Project" (InstancesFullAccess, …, AllProductsFullAccess); which call needs
// which set beyond those names: source silent, the reading below (contract table).

// product is what a call acts on, for permissions.
type product struct {
	name  string // for the 403's details: "instance", "quota", …
	write bool   // anything but GET
	// sets that grant it, read-only first: any of rw grants a write, any of ro or rw a read.
	ro, rw []string
	// org: the sets are scoped by organization (a rule with organization_id grants them);
	// otherwise by project (a rule naming the call's project, or one scoped to the organization).
	org bool
}

var (
	allRO = "AllProductsReadOnly"
	allRW = "AllProductsFullAccess"
)

// productOf is the product a request acts on; false for the paths no permission guards (the
// gateway's 404s, the metadata).
func productOf(r *http.Request) (product, bool) {
	p := r.URL.Path
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	proj := func(name, set string) product {
		return product{name: name, write: write, ro: []string{set + "ReadOnly", allRO}, rw: []string{set + "FullAccess", allRW}}
	}
	switch {
	case strings.HasPrefix(p, "/instance/"):
		return proj("instance", "Instances"), true
	case strings.HasPrefix(p, "/block/"):
		return proj("block", "BlockStorage"), true
	case strings.HasPrefix(p, "/baremetal/"):
		return proj("baremetal", "ElasticMetal"), true
	case strings.HasPrefix(p, "/domain/"):
		return proj("dns_zone", "DomainsDNS"), true
	case strings.HasPrefix(p, "/iam/v1alpha1/ssh-keys"):
		return proj("ssh_key", "SSHKeys"), true
	case strings.HasPrefix(p, "/iam/v1alpha1/quota"):
		return product{name: "quota", write: write, org: true, ro: []string{"OrganizationReadOnly"}, rw: []string{"OrganizationManager"}}, true
	case strings.HasPrefix(p, "/iam/v1alpha1/applications"), strings.HasPrefix(p, "/iam/v1alpha1/api-keys"):
		return product{name: "application", write: write, org: true, ro: []string{"IAMReadOnly", "IAMApplicationReadOnly"},
			rw: []string{"IAMManager", "IAMApplicationManager", "OrganizationManager"}}, true
	case strings.HasPrefix(p, "/iam/v1alpha1/policies"), strings.HasPrefix(p, "/iam/v1alpha1/rules"):
		return product{name: "policy", write: write, org: true, ro: []string{"IAMReadOnly", "IAMPolicyReadOnly"},
			rw: []string{"IAMManager", "IAMPolicyManager", "OrganizationManager"}}, true
	}
	return product{}, false
}

// orgScopedSets are the permission sets scoped by organization (permission-sets.mdx); a rule
// scoping one of them to projects is refused.
var orgScopedSets = []string{"ProjectManager", "ProjectReadOnly", "IAMReadOnly", "IAMManager", "IAMApplicationManager",
	"IAMApplicationReadOnly", "IAMPolicyManager", "IAMPolicyReadOnly", "OrganizationManager", "OrganizationReadOnly",
	"BillingReadOnly", "BillingManager"}

// allowed tells whether the request made with token may proceed; it answers 403
// permissions_denied (the body scaleway-sdk-go decodes into scw.PermissionsDeniedError) when not.
// The emulator's owner key and the paths no permission guards always proceed.
func (e *Emulator) allowed(w http.ResponseWriter, r *http.Request, token string) bool {
	p, guarded := productOf(r)
	if !guarded {
		return true
	}
	e.mu.Lock()
	s := e.iamLocked()
	access, isKey := s.secrets[token]
	if !isKey {
		e.mu.Unlock()
		return true // the owner's key
	}
	k := s.apiKeys[access]
	if k.ApplicationID == nil && k.UserID != nil {
		e.mu.Unlock()
		return true // a user's key: the owner's rights (users and groups are not modelled)
	}
	project := requestProject(r, k.DefaultProjectID)
	org := r.URL.Query().Get("organization_id")
	ok := k.ApplicationID != nil && s.grants(*k.ApplicationID, p, project, org)
	e.mu.Unlock()
	if ok {
		return true
	}
	action := "read"
	if p.write {
		action = "write"
	}
	writeJSON(w, http.StatusForbidden, map[string]any{
		"type": "permissions_denied", "message": "insufficient permissions",
		"details": []map[string]any{{"resource": p.name, "action": action}},
	})
	return false
}

// grants tells whether application app's policies grant p: a set of p's in a rule whose scope
// covers the call. Caller holds e.mu.
func (s *iamState) grants(app string, p product, project, org string) bool {
	sets := p.rw
	if !p.write {
		sets = append(slices.Clone(p.ro), p.rw...)
	}
	for id, pol := range s.policies {
		if pol.ApplicationID == nil || *pol.ApplicationID != app {
			continue
		}
		for _, rule := range s.rules[id] {
			if rule.PermissionSetNames == nil || !slices.ContainsFunc(*rule.PermissionSetNames, func(n string) bool { return slices.Contains(sets, n) }) {
				continue
			}
			if covers(rule, p.org, project, org) {
				return true
			}
		}
	}
	return false
}

// covers tells whether rule's scope reaches the call: an organization-scoped set needs a rule
// scoped to the organization (the one the call names, when it names one); a project-scoped set
// needs a rule naming the call's project, or one scoped to the organization (every project of
// it: the emulator has one organization).
func covers(rule *iam.Rule, orgSet bool, project, org string) bool {
	if rule.OrganizationID != nil {
		return !orgSet || org == "" || *rule.OrganizationID == org
	}
	return !orgSet && rule.ProjectIDs != nil && slices.Contains(*rule.ProjectIDs, project)
}

// requestProject is the project a call acts in: the query's project or project_id, else the
// body's, else the key's preferred project. A call on one resource by id is judged in the key's
// project: the emulator's resources of one world all live in one project (a shortcut of the
// stand-in, contract table).
func requestProject(r *http.Request, fallback string) string {
	q := r.URL.Query()
	for _, k := range []string{"project", "project_id"} {
		if v := q.Get(k); v != "" {
			return v
		}
	}
	if r.Body != nil && r.Method != http.MethodGet {
		b, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		r.Body = io.NopCloser(bytes.NewReader(b))
		var body struct {
			Project   string `json:"project"`
			ProjectID string `json:"project_id"`
		}
		if err == nil && json.Unmarshal(b, &body) == nil {
			if body.Project != "" {
				return body.Project
			}
			if body.ProjectID != "" {
				return body.ProjectID
			}
		}
	}
	return fallback
}
