package scaleway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"time"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
)

// IAM applications, policies (their rules) and API keys: what `bot init` creates for the bot and the
// presigning identity, and what `bot doctor` reads to tell whether a key holds every permission
// set the bot needs. The contract rows are in doc.go ("IAM applications, policies, API keys").

type iamState struct {
	apps     map[string]*iam.Application
	policies map[string]*iam.Policy
	rules    map[string][]*iam.Rule // policy id → rules
	apiKeys  map[string]*iam.APIKey // access key → key (SecretKey nil once created)
	secrets  map[string]string      // secret key → access key: accepted in X-Auth-Token
}

// knownPermissionSets are the permission set names the stand-in accepts (Scaleway's reference
// page lists them; the ones pocbot and its docs use, plus the read-only siblings).
var knownPermissionSets = map[string]bool{
	"InstancesFullAccess": true, "InstancesReadOnly": true, "BlockStorageFullAccess": true, "BlockStorageReadOnly": true,
	"ElasticMetalFullAccess": true, "ElasticMetalReadOnly": true, "SSHKeysFullAccess": true, "SSHKeysReadOnly": true,
	"DomainsDNSFullAccess": true, "DomainsDNSReadOnly": true, "ObjectStorageFullAccess": true, "ObjectStorageReadOnly": true,
	"ObjectStorageObjectsRead": true, "ObjectStorageObjectsWrite": true, "ObjectStorageBucketsRead": true, "ObjectStorageBucketsWrite": true,
	"IAMReadOnly": true, "IAMManager": true, "ProjectManager": true, "AllProductsFullAccess": true,
}

func (e *Emulator) iamLocked() *iamState {
	if e.iamApps == nil {
		e.iamApps = &iamState{apps: map[string]*iam.Application{}, policies: map[string]*iam.Policy{}, rules: map[string][]*iam.Rule{},
			apiKeys: map[string]*iam.APIKey{}, secrets: map[string]string{}}
	}
	return e.iamApps
}

// acceptsSecret tells whether token is the secret of an API key created through IAM.
func (e *Emulator) acceptsSecret(token string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.iamLocked().secrets[token]
	return ok && token != ""
}

// AddAPIKey records an existing key pair (the world's own) as an API key of a new application
// named app, with one policy granting sets on project: the installation an operator made by hand.
func (e *Emulator) AddAPIKey(accessKey, secretKey, app, project string, sets ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	now := e.clock().UTC()
	a := &iam.Application{ID: e.newID(), Name: app, OrganizationID: project, CreatedAt: &now, UpdatedAt: &now, Editable: true, Deletable: true, NbAPIKeys: 1}
	s.apps[a.ID] = a
	if len(sets) > 0 {
		e.addPolicyLocked(app, a.ID, a.OrganizationID, []*iam.RuleSpecs{{PermissionSetNames: &sets, ProjectIDs: &[]string{project}}})
	}
	s.apiKeys[accessKey] = &iam.APIKey{AccessKey: accessKey, ApplicationID: &a.ID, DefaultProjectID: project, CreatedAt: &now, UpdatedAt: &now}
	s.secrets[secretKey] = accessKey
}

func (e *Emulator) addPolicyLocked(name, appID, org string, specs []*iam.RuleSpecs) *iam.Policy {
	s := e.iamLocked()
	now := e.clock().UTC()
	p := &iam.Policy{ID: e.newID(), Name: name, OrganizationID: org, CreatedAt: &now, UpdatedAt: &now, Editable: true, Deletable: true,
		NbRules: uint32(len(specs)), Tags: []string{}, ApplicationID: &appID}
	s.policies[p.ID] = p
	for _, sp := range specs {
		rule := &iam.Rule{ID: e.newID(), PermissionSetNames: sp.PermissionSetNames, ProjectIDs: sp.ProjectIDs, OrganizationID: sp.OrganizationID}
		if sp.ProjectIDs != nil {
			rule.PermissionSetsScopeType = iam.PermissionSetScopeTypeProjects
		} else {
			rule.PermissionSetsScopeType = iam.PermissionSetScopeTypeOrganization
		}
		s.rules[p.ID] = append(s.rules[p.ID], rule)
	}
	return p
}

func (e *Emulator) createApplication(w http.ResponseWriter, r *http.Request) {
	var req iam.CreateApplicationRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Name == "" || len(req.Name) > 64 {
		invalidArg(w, "name", "name must be 1 to 64 characters")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock().UTC()
	a := &iam.Application{ID: e.newID(), Name: req.Name, Description: req.Description, OrganizationID: req.OrganizationID,
		CreatedAt: &now, UpdatedAt: &now, Editable: true, Deletable: true, Tags: req.Tags}
	if a.Tags == nil {
		a.Tags = []string{}
	}
	e.iamLocked().apps[a.ID] = a
	writeJSON(w, http.StatusOK, a)
}

func (e *Emulator) listApplications(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var list []*iam.Application
	for _, a := range e.iamLocked().apps {
		if nameMatch(a.Name, q.Get("name")) && (q.Get("organization_id") == "" || q.Get("organization_id") == a.OrganizationID) {
			list = append(list, a)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writePage(w, r, "applications", pagingBody, list, asJSON)
}

func (e *Emulator) oneApplication(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	a, ok := s.apps[id]
	if !ok {
		blockNotFound(w, "application", id)
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, a)
	case http.MethodDelete:
		delete(s.apps, id)
		for k, key := range s.apiKeys {
			if key.ApplicationID != nil && *key.ApplicationID == id {
				delete(s.apiKeys, k)
				for sec, acc := range s.secrets {
					if acc == k {
						delete(s.secrets, sec)
					}
				}
			}
		}
		noContent(w)
	default:
		invalidArg(w, "method", "method not allowed")
	}
}

func (e *Emulator) createPolicy(w http.ResponseWriter, r *http.Request) {
	var req iam.CreatePolicyRequest
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	if req.ApplicationID == nil || s.apps[*req.ApplicationID] == nil {
		// pocbot's policies have an application as principal; users, groups and no principal
		// are not modelled.
		invalidArg(w, "application_id", "application_id must name an existing application")
		return
	}
	if req.Name == "" {
		invalidArg(w, "name", "name is required")
		return
	}
	for _, sp := range req.Rules {
		if sp.PermissionSetNames == nil || len(*sp.PermissionSetNames) == 0 {
			invalidArg(w, "rules.permission_set_names", "a rule needs at least one permission set")
			return
		}
		for _, n := range *sp.PermissionSetNames {
			if !knownPermissionSets[n] {
				invalidArg(w, "rules.permission_set_names", "unknown permission set "+n)
				return
			}
		}
		if (sp.ProjectIDs == nil) == (sp.OrganizationID == nil) {
			invalidArg(w, "rules", "a rule is scoped to project_ids or to organization_id, exactly one")
			return
		}
	}
	p := e.addPolicyLocked(req.Name, *req.ApplicationID, req.OrganizationID, req.Rules)
	p.Description = req.Description
	writeJSON(w, http.StatusOK, p)
}

func (e *Emulator) listPolicies(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var list []*iam.Policy
	for _, p := range e.iamLocked().policies {
		if nameMatch(p.Name, q.Get("policy_name")) && (q.Get("application_ids") == "" || p.ApplicationID != nil && strings.Contains(","+q.Get("application_ids")+",", ","+*p.ApplicationID+",")) {
			list = append(list, p)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writePage(w, r, "policies", pagingBody, list, asJSON)
}

func (e *Emulator) onePolicy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	p, ok := s.policies[id]
	if !ok {
		blockNotFound(w, "policy", id)
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, p)
	case http.MethodDelete:
		delete(s.policies, id)
		delete(s.rules, id)
		noContent(w)
	default:
		invalidArg(w, "method", "method not allowed")
	}
}

func (e *Emulator) listRules(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	id := r.URL.Query().Get("policy_id")
	s := e.iamLocked()
	if _, ok := s.policies[id]; !ok {
		blockNotFound(w, "policy", id)
		return
	}
	list := s.rules[id]
	writePage(w, r, "rules", pagingBody, list, asJSON)
}

func (e *Emulator) createAPIKey(w http.ResponseWriter, r *http.Request) {
	var req iam.CreateAPIKeyRequest
	if !decode(w, r, &req) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	if req.ApplicationID == nil || s.apps[*req.ApplicationID] == nil {
		invalidArg(w, "application_id", "application_id must name an existing application")
		return
	}
	now := e.clock().UTC()
	access := "SCW" + strings.ToUpper(randHex(9))[:17] // SCW + 17: the 20-character access keys
	secret := randUUID()
	k := &iam.APIKey{AccessKey: access, ApplicationID: req.ApplicationID, Description: req.Description, CreatedAt: &now, UpdatedAt: &now,
		ExpiresAt: req.ExpiresAt}
	if req.DefaultProjectID != nil {
		k.DefaultProjectID = *req.DefaultProjectID
	}
	s.apiKeys[access] = k
	s.secrets[secret] = access
	s.apps[*req.ApplicationID].NbAPIKeys++
	out := *k
	out.SecretKey = &secret // shown once, in this answer only
	writeJSON(w, http.StatusOK, &out)
}

func (e *Emulator) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q := r.URL.Query()
	var list []*iam.APIKey
	for _, k := range e.iamLocked().apiKeys {
		if q.Get("application_id") == "" || k.ApplicationID != nil && *k.ApplicationID == q.Get("application_id") {
			list = append(list, k)
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].AccessKey < list[j].AccessKey })
	writePage(w, r, "api_keys", pagingBody, list, asJSON)
}

func (e *Emulator) oneAPIKey(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	k, ok := s.apiKeys[id]
	if !ok {
		blockNotFound(w, "api_key", id)
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, k)
	case http.MethodDelete:
		delete(s.apiKeys, id)
		for sec, acc := range s.secrets {
			if acc == id {
				delete(s.secrets, sec)
			}
		}
		noContent(w)
	default:
		invalidArg(w, "method", "method not allowed")
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randUUID() string {
	h := randHex(16)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var _ = time.Second
