package scaleway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"

	"github.com/pocbot/pocbot/internal/assume"
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
	"IAMReadOnly": true, "IAMManager": true, "ProjectManager": true, "ProjectReadOnly": true, "AllProductsFullAccess": true,
	"AllProductsReadOnly": true, "OrganizationReadOnly": true, "OrganizationManager": true, "IAMApplicationManager": true,
	"IAMApplicationReadOnly": true, "IAMPolicyManager": true, "IAMPolicyReadOnly": true, "BillingReadOnly": true, "BillingManager": true,
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

// AddUserKey records an existing key pair as the API key of user userID (no application): a
// user's key has its user's rights, here the organization owner's, who may do everything.
func (e *Emulator) AddUserKey(accessKey, secretKey, userID, project string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	now := e.clock().UTC()
	s.apiKeys[accessKey] = &iam.APIKey{AccessKey: accessKey, UserID: &userID, DefaultProjectID: project, CreatedAt: &now, UpdatedAt: &now}
	s.secrets[secretKey] = accessKey
}

// GrantOrganization gives the application of accessKey a policy named name whose one rule grants
// sets on the organization org (an organization-scoped rule, as `bot init --iam` makes for
// OrganizationReadOnly). An unknown key is a programming error of the caller's: it panics.
func (e *Emulator) GrantOrganization(accessKey, name, org string, sets ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := e.iamLocked().apiKeys[accessKey]
	if k == nil || k.ApplicationID == nil {
		panic("scaleway emulator: GrantOrganization: no application key " + accessKey)
	}
	e.addPolicyLocked(name, *k.ApplicationID, org, []*iam.RuleSpecs{{PermissionSetNames: &sets, OrganizationID: &org}})
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
	if e.opts.Readings.Is(assume.IAMAppNames, "unique") {
		for _, x := range e.iamLocked().apps {
			if x.Name == req.Name && x.OrganizationID == req.OrganizationID {
				writeJSON(w, http.StatusConflict, map[string]any{"type": "conflict", "resource": "application",
					"message": "an application named " + req.Name + " already exists in this organization"})
				return
			}
		}
	}
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
	serveMap(e, w, r, "applications", func() map[string]*iam.Application { return e.iamLocked().apps },
		func(a *iam.Application, q url.Values) bool {
			return nameMatch(a.Name, q.Get("name")) && (q.Get("organization_id") == "" || q.Get("organization_id") == a.OrganizationID)
		}, asJSON)
}

func (e *Emulator) oneApplication(w http.ResponseWriter, r *http.Request) {
	serveIAM(e, w, r, "application", func(s *iamState) map[string]*iam.Application { return s.apps },
		func(s *iamState, a *iam.Application) {
			delete(s.apps, a.ID)
			for k, key := range s.apiKeys {
				if key.ApplicationID != nil && *key.ApplicationID == a.ID {
					s.deleteAPIKey(k)
				}
			}
		})
}

func (e *Emulator) createPolicy(w http.ResponseWriter, r *http.Request) {
	decodeLocked(e, w, r, func(req *iam.CreatePolicyRequest) {
		s := e.iamLocked()
		// pocbot's policies have an application as principal; users, groups and no principal
		// are not modelled.
		if !s.knownApp(w, req.ApplicationID) {
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
			if sp.ProjectIDs != nil {
				for _, n := range *sp.PermissionSetNames {
					if slices.Contains(orgScopedSets, n) {
						invalidArg(w, "rules.permission_set_names", n+" is scoped by organization: give it in a rule with organization_id")
						return
					}
				}
			}
		}
		p := e.addPolicyLocked(req.Name, *req.ApplicationID, req.OrganizationID, req.Rules)
		p.Description = req.Description
		writeJSON(w, http.StatusOK, p)
	})
}

func (e *Emulator) listPolicies(w http.ResponseWriter, r *http.Request) {
	serveMap(e, w, r, "policies", func() map[string]*iam.Policy { return e.iamLocked().policies },
		func(p *iam.Policy, q url.Values) bool {
			return nameMatch(p.Name, q.Get("policy_name")) && (q.Get("application_ids") == "" ||
				p.ApplicationID != nil && strings.Contains(","+q.Get("application_ids")+",", ","+*p.ApplicationID+","))
		}, asJSON)
}

func (e *Emulator) onePolicy(w http.ResponseWriter, r *http.Request) {
	serveIAM(e, w, r, "policy", func(s *iamState) map[string]*iam.Policy { return s.policies }, func(s *iamState, p *iam.Policy) {
		delete(s.policies, p.ID)
		delete(s.rules, p.ID)
	})
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
	decodeLocked(e, w, r, func(req *iam.CreateAPIKeyRequest) {
		s := e.iamLocked()
		if !s.knownApp(w, req.ApplicationID) {
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
	})
}

func (e *Emulator) listAPIKeys(w http.ResponseWriter, r *http.Request) {
	serveMap(e, w, r, "api_keys", func() map[string]*iam.APIKey { return e.iamLocked().apiKeys },
		func(k *iam.APIKey, q url.Values) bool {
			return q.Get("application_id") == "" || k.ApplicationID != nil && *k.ApplicationID == q.Get("application_id")
		}, asJSON)
}

func (e *Emulator) oneAPIKey(w http.ResponseWriter, r *http.Request) {
	serveIAM(e, w, r, "api_key", func(s *iamState) map[string]*iam.APIKey { return s.apiKeys },
		func(s *iamState, k *iam.APIKey) { s.deleteAPIKey(k.AccessKey) })
}

// serveIAM answers GET and DELETE of one IAM resource (application, policy, api_key) of the map
// of's: its SDK value as is, or 204 once del forgot it; a 404 names the resource.
func serveIAM[T any](e *Emulator, w http.ResponseWriter, r *http.Request, resource string, of func(*iamState) map[string]T,
	del func(*iamState, T)) {
	serveOne(e, w, r, r.PathValue("id"), single[T]{
		find:     func(id string) (T, bool) { return inMap(of(e.iamLocked()))(id) },
		notFound: named(blockNotFound, resource), json: asJSON[T], badMethod: methodNotAllowed,
		del: func(w http.ResponseWriter, v T) {
			del(e.iamLocked(), v)
			noContent(w)
		}})
}

// knownApp tells whether id names an existing application; it answers 400 when not.
func (s *iamState) knownApp(w http.ResponseWriter, id *string) bool {
	if id == nil || s.apps[*id] == nil {
		invalidArg(w, "application_id", "application_id must name an existing application")
		return false
	}
	return true
}

// deleteAPIKey forgets the API key of access key id and its secret. Caller holds e.mu.
func (s *iamState) deleteAPIKey(id string) {
	delete(s.apiKeys, id)
	for sec, acc := range s.secrets {
		if acc == id {
			delete(s.secrets, sec)
		}
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

// APIKeyGrants is what Object Storage needs to know of an API key (world wires it to the S3
// stand-in): its secret key, its preferred project for Object Storage (the project of every
// bucket it reaches) and the permission sets its application's policies grant on that project.
// ok is false when no such key exists, or it expired.
func (e *Emulator) APIKeyGrants(accessKey string) (secretKey, project string, sets []string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.iamLocked()
	k, found := s.apiKeys[accessKey]
	if !found || k.ExpiresAt != nil && !k.ExpiresAt.After(e.clock()) {
		return "", "", nil, false
	}
	for sec, acc := range s.secrets {
		if acc == accessKey {
			secretKey = sec
		}
	}
	if k.ApplicationID != nil {
		for id, p := range s.policies {
			if p.ApplicationID == nil || *p.ApplicationID != *k.ApplicationID {
				continue
			}
			for _, r := range s.rules[id] {
				if r.ProjectIDs != nil && r.PermissionSetNames != nil && slices.Contains(*r.ProjectIDs, k.DefaultProjectID) {
					sets = append(sets, *r.PermissionSetNames...)
				}
			}
		}
	}
	return secretKey, k.DefaultProjectID, sets, secretKey != ""
}
