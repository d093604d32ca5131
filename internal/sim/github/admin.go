package github

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v88/github"
	"golang.org/x/crypto/nacl/box"
)

// What a repository administrator's token does to set a repository up (`bot init`, `bot doctor`):
// Actions secrets of the repository and of an environment (each sealed to the repository's public
// key), environments and their deployment branch policies, branches (git refs), files (contents),
// pull requests. The contract rows are in doc.go, under "Repository administration".

// repoAdmin is the per-repository state of these endpoints.
type repoAdmin struct {
	pub, priv    *[32]byte
	keyID        string
	secrets      map[string]*storedSecret   // repository secrets
	environments map[string]*environment    // by name (lower)
	branchSHA    map[string]string          // branch → head commit sha
	tags         map[string]string          // lightweight tag → commit sha
	variables    map[string]*storedVariable // repository variables (name upper-cased)
	forks        map[string]forkPoint       // branch → where it was made from (compare.go)
	history      map[string][]snapshot      // branch → its commits, oldest first (history.go)
}

type storedSecret struct {
	name    string
	plain   []byte
	created string
	updated string
}

type environment struct {
	name      string
	custom    bool     // deployment_branch_policy.custom_branch_policies
	protected bool     // deployment_branch_policy.protected_branches
	branches  []string // custom branch policies (names)
	secrets   map[string]*storedSecret
	variables map[string]string // environment variables (name upper-cased → value)
	waitTimer int               // minutes (protection rule wait_timer; 0 = none)
	reviewers []envReviewer     // protection rule required_reviewers
	// preventSelfReview is the required_reviewers rule's prevent_self_review; noAdminBypass is
	// can_admins_bypass false (GitHub's default is true).
	preventSelfReview, noAdminBypass bool
	appRules                         []int64 // custom deployment protection rules: the integration ids
	created                          string
	updated                          string
}

// envReviewer is one required reviewer of an environment (PUT's reviewers: type User or Team, id).
type envReviewer struct {
	Type string `json:"type"`
	ID   int64  `json:"id"`
}

// SetTag points the lightweight tag at a commit sha (a release's tag).
func (s *Server) SetTag(fullName, tag, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.adminOf(s.mustRepo(fullName)).tags[tag] = sha
}

// AddUserToken registers a personal access token of login (a classic one, ghp_…, with the repo
// and workflow scopes) and returns it: it acts with login's role on each repository
// (SetPermission), as a user's token does.
func (s *Server) AddUserToken(login string) string {
	return s.AddUserTokenWith(login, UserToken{Scopes: []string{"repo", "workflow"}})
}

// UserTokenKind is the kind of a person's token.
type UserTokenKind int

const (
	TokenPAT         UserTokenKind = iota // a personal access token (classic), ghp_…
	TokenOAuth                            // an OAuth app's token, such as the gh CLI's, gho_…
	TokenFineGrained                      // a fine-grained personal access token, github_pat_…
)

// UserToken describes a person's token for AddUserTokenWith.
type UserToken struct {
	Kind UserTokenKind
	// Scopes are a classic or OAuth token's scopes (answered in X-OAuth-Scopes): repo (or
	// public_repo), workflow, …; a default `gh auth login` grants repo, read:org and gist.
	Scopes []string
	// Workflows is a fine-grained token's Workflows (write) permission.
	Workflows bool
}

// AddUserTokenWith registers a person's token of the given kind and scopes and returns it.
func (s *Server) AddUserTokenWith(login string, ut UserToken) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.userLocked(login)
	prefix := map[UserTokenKind]string{TokenPAT: "ghp_", TokenOAuth: "gho_", TokenFineGrained: "github_pat_"}[ut.Kind]
	value := prefix + randomHex(18)
	s.tokens[value] = &token{value: value, login: u.login, typ: u.typ, repos: map[string]bool{}, user: true,
		kind: ut.Kind, scopes: append([]string(nil), ut.Scopes...), workflows: ut.Workflows,
		perms:   map[string]string{"issues": "write", "pull_requests": "write", "metadata": "read", "contents": "write"},
		expires: s.now().Add(100 * 365 * 24 * 3600e9)}
	return value
}

// SetPrivate makes a repository private (true) or public; freePlan says its owner is on GitHub
// Free, where a private repository has no environments.
func (s *Server) SetPrivate(fullName string, private, freePlan bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	r.private, r.freePlan = private, freePlan
}

// secretsLocked is the secrets map of a repository (env "") or of one of its environments (ok
// false when that environment does not exist). Caller holds s.mu.
func (s *Server) secretsLocked(fullName, env string) (map[string]*storedSecret, bool) {
	a := s.adminOf(s.mustRepo(fullName))
	if env == "" {
		return a.secrets, true
	}
	e, ok := a.environments[lower(env)]
	if !ok {
		return nil, false
	}
	return e.secrets, true
}

// Secret returns the plaintext of a secret as a workflow would see it: env "" is the repository's
// secrets, otherwise that environment's (ok false when it does not exist).
func (s *Server) Secret(fullName, env, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, _ := s.secretsLocked(fullName, env)
	v, ok := m[strings.ToUpper(name)]
	if !ok {
		return "", false
	}
	return string(v.plain), true
}

// SetSecret sets a secret (env "" = the repository's) as a user would in the settings; false when
// the environment does not exist.
func (s *Server) SetSecret(fullName, env, name, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.secretsLocked(fullName, env)
	if ok {
		now := s.now().UTC().Format("2006-01-02T15:04:05Z")
		m[strings.ToUpper(name)] = &storedSecret{name: strings.ToUpper(name), plain: []byte(value), created: now, updated: now}
	}
	return ok
}

// DeleteSecret removes a secret (env "" = the repository's), as a user would in the settings.
func (s *Server) DeleteSecret(fullName, env, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, _ := s.secretsLocked(fullName, env)
	delete(m, strings.ToUpper(name))
}

// Environment reports whether env exists and the branches its deployment may run from ("" list
// with custom false: any branch).
func (s *Server) Environment(fullName, env string) (exists bool, branches []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.adminOf(s.mustRepo(fullName)).environments[lower(env)]
	if !ok {
		return false, nil
	}
	return true, append([]string(nil), e.branches...)
}

// SetEnvironmentVariable sets an Actions variable of an existing environment (what a user does in
// the environment's settings); false when the environment does not exist.
func (s *Server) SetEnvironmentVariable(fullName, env, name, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.adminOf(s.mustRepo(fullName)).environments[lower(env)]
	if ok {
		if e.variables == nil {
			e.variables = map[string]string{}
		}
		e.variables[strings.ToUpper(name)] = value
	}
	return ok
}

// EnvironmentVariable is the value of an Actions variable of an environment ("" when either is
// missing), as a job that names the environment reads it (vars).
func (s *Server) EnvironmentVariable(fullName, env, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.adminOf(s.mustRepo(fullName)).environments[lower(env)]; ok {
		return e.variables[strings.ToUpper(name)]
	}
	return ""
}

// File returns a file of a branch ("" = the default branch).
func (s *Server) File(fullName, branch, path string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	if branch == "" {
		branch = r.defaultBranch
	}
	b, ok := r.files[branch][strings.Trim(path, "/")]
	return b, ok
}

// PullRequests lists the open pull requests' numbers and head branches.
func (s *Server) PullRequests(fullName string) map[int]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]string{}
	for n, is := range s.mustRepo(fullName).issues {
		if is.isPR && is.state == "open" {
			out[n] = is.headRef
		}
	}
	return out
}

// MergePR merges an open pull request of the repository itself: its branch's files become the
// default branch's, and it is closed as merged (what a maintainer's "Merge" does).
func (s *Server) MergePR(fullName string, number int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	is, ok := r.issues[number]
	if !ok || !is.isPR || is.state != "open" {
		return fmt.Errorf("sim/github: %s#%d is not an open pull request", fullName, number)
	}
	s.mergeLocked(r, is)
	return nil
}

// mergePull serves PUT /repos/{o}/{r}/pulls/{n}/merge: 200 with the default branch's new head;
// 404 for no such pull request, 405 when it is not open, 409 when sha is given and is not its head.
func (s *Server) mergePull(c *call, r *repo, num string) {
	n, err := strconv.Atoi(num)
	is, ok := r.issues[n]
	if err != nil || !ok || !is.isPR {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	var body struct {
		SHA string `json:"sha"`
	}
	if c.r.ContentLength != 0 && !c.decode(1<<20, &body) {
		return
	}
	switch {
	case is.state != "open":
		c.fail(http.StatusMethodNotAllowed, "Pull Request is not mergeable")
	case body.SHA != "" && body.SHA != s.adminOf(r).branchSHA[is.headRef]:
		c.fail(http.StatusConflict, "Head branch was modified. Review and try the merge again.")
	default:
		s.mergeLocked(r, is)
		c.json(http.StatusOK, map[string]any{"sha": s.adminOf(r).branchSHA[r.defaultBranch], "merged": true, "message": "Pull Request successfully merged"})
	}
}

// mergeLocked merges an open pull request of r. Caller holds s.mu.
func (s *Server) mergeLocked(r *repo, is *issue) {
	files := r.files[is.headRef]
	if r.files[r.defaultBranch] == nil {
		r.files[r.defaultBranch] = map[string][]byte{}
	}
	before := maps.Clone(r.files[r.defaultBranch])
	for p, b := range files {
		r.files[r.defaultBranch][p] = b
	}
	s.noteCommitLocked(r, r.defaultBranch, before, fmt.Sprintf("Merge pull request #%d from %s", is.number, is.headRef), "web-flow")
	is.state, is.merged, is.closedAt = "closed", true, s.now()
}

func (s *Server) adminOf(r *repo) *repoAdmin {
	if r.admin == nil {
		pub, priv, err := box.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		r.admin = &repoAdmin{pub: pub, priv: priv, keyID: fmt.Sprint(s.id()) + randomHex(4), secrets: map[string]*storedSecret{},
			environments: map[string]*environment{}, branchSHA: map[string]string{}, tags: map[string]string{},
			variables: map[string]*storedVariable{}, forks: map[string]forkPoint{}}
	}
	return r.admin
}

// treeSHA is a stable commit id for a branch's files (the stand-in has no commits).
func treeSHA(files map[string][]byte) string {
	keys := make([]string, 0, len(files))
	for k := range files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha1.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%x\x00", k, sha1.Sum(files[k]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func blobSHA(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// roleAtLeast tells whether the token's user has at least role on r (installation tokens: never;
// they are the App's, whose grant has no secrets, environments or administration permission).
func (s *Server) roleAtLeast(c *call, r *repo, role string) bool {
	if c.tok == nil || !c.tok.user {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	order := map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
	have := order[r.perms[lower(c.tok.login)]]
	if have == 0 && r.private {
		c.fail(http.StatusNotFound, "Not Found")
		return false
	}
	if have < order[role] {
		c.fail(http.StatusForbidden, "Must have "+role+" rights to Repository.")
		return false
	}
	return true
}

// adminRoute serves the repository-administration endpoints; false when the path is not one.
func (s *Server) adminRoute(c *call, r *repo) bool {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	if n < 4 {
		return false
	}
	switch {
	case seg[3] == "actions" && n >= 5 && seg[4] == "secrets":
		if c.auth != "token" {
			return false
		}
		if s.roleAtLeast(c, r, "admin") {
			s.secretsRoute(c, r, "", seg[5:])
		}
	case seg[3] == "actions" && n >= 5 && seg[4] == "variables":
		if c.auth != "token" {
			return false
		}
		if s.roleAtLeast(c, r, "write") {
			s.variablesRoute(c, r, seg[5:])
		}
	case seg[3] == "commits" && n == 4 && m == http.MethodGet:
		if s.requireToken(c, r, "contents", "read") {
			s.listCommits(c, r)
		}
	case seg[3] == "compare" && n >= 5 && m == http.MethodGet:
		if s.requireToken(c, r, "contents", "read") {
			s.compare(c, r, strings.Join(seg[4:], "/"))
		}
	case seg[3] == "environments":
		if c.auth != "token" {
			return false
		}
		if s.roleAtLeast(c, r, "admin") {
			s.environmentRoute(c, r, seg[4:])
		}
	case seg[3] == "git" && n >= 5 && (seg[4] == "ref" || seg[4] == "refs"):
		if c.auth != "token" || !s.requireToken(c, r, "contents", map[bool]string{true: "read", false: "write"}[m == http.MethodGet]) {
			return true
		}
		if m != http.MethodGet && !s.roleAtLeast(c, r, "write") {
			return true
		}
		s.gitRef(c, r, seg[4:])
	case seg[3] == "contents" && m == http.MethodPut && n >= 5:
		if s.requireToken(c, r, "contents", "write") && s.roleAtLeast(c, r, "write") {
			s.putContents(c, r, strings.Join(seg[4:], "/"))
		}
	case seg[3] == "pulls" && n == 6 && seg[5] == "merge" && m == http.MethodPut:
		if s.requireToken(c, r, "contents", "write") && s.roleAtLeast(c, r, "write") {
			s.mergePull(c, r, seg[4])
		}
	case seg[3] == "pulls" && n == 4 && (m == http.MethodPost || m == http.MethodGet):
		level := map[bool]string{true: "read", false: "write"}[m == http.MethodGet]
		if !s.requireToken(c, r, "pull_requests", level) {
			return true
		}
		if m == http.MethodGet {
			s.listPulls(c, r)
		} else if s.roleAtLeast(c, r, "write") {
			s.createPull(c, r)
		}
	default:
		return false
	}
	return true
}

func (s *Server) secretsRoute(c *call, r *repo, env string, rest []string) {
	a := s.adminOf(r)
	m := a.secrets
	if env != "" {
		m = a.environments[lower(env)].secrets
	}
	switch {
	case len(rest) == 0 && c.r.Method == http.MethodGet:
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		list := []map[string]string{}
		for _, k := range names {
			list = append(list, map[string]string{"name": m[k].name, "created_at": m[k].created, "updated_at": m[k].updated})
		}
		c.json(http.StatusOK, map[string]any{"total_count": len(list), "secrets": list})
	case len(rest) == 1 && rest[0] == "public-key" && c.r.Method == http.MethodGet:
		c.json(http.StatusOK, map[string]string{"key_id": a.keyID, "key": base64.StdEncoding.EncodeToString(a.pub[:])})
	case len(rest) == 1 && c.r.Method == http.MethodGet:
		v, ok := m[strings.ToUpper(rest[0])]
		if !ok {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		c.json(http.StatusOK, map[string]string{"name": v.name, "created_at": v.created, "updated_at": v.updated})
	case len(rest) == 1 && c.r.Method == http.MethodPut:
		var body struct {
			EncryptedValue string `json:"encrypted_value"`
			KeyID          string `json:"key_id"`
		}
		if !c.decode(1<<20, &body) {
			return
		}
		name := rest[0]
		if !validSecretName(name) {
			c.fail(http.StatusUnprocessableEntity, "Secret names can only contain alphanumeric characters ([a-z], [A-Z], [0-9]) or underscores (_), must not start with a number or GITHUB_")
			return
		}
		sealed, err := base64.StdEncoding.DecodeString(body.EncryptedValue)
		if err != nil || body.KeyID != a.keyID {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: encrypted_value must be base64 sealed to the key key_id names")
			return
		}
		plain, ok := box.OpenAnonymous(nil, sealed, a.pub, a.priv)
		if !ok {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: encrypted_value does not open with the repository's key")
			return
		}
		if len(plain) > 48*1024 {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: secrets are limited to 48 KB")
			return
		}
		now := s.now().UTC().Format("2006-01-02T15:04:05Z")
		if old, ok := m[strings.ToUpper(name)]; ok {
			old.plain, old.updated = plain, now
			c.status = http.StatusNoContent
			c.w.WriteHeader(http.StatusNoContent)
			return
		}
		m[strings.ToUpper(name)] = &storedSecret{name: strings.ToUpper(name), plain: plain, created: now, updated: now}
		c.json(http.StatusCreated, map[string]any{})
	case len(rest) == 1 && c.r.Method == http.MethodDelete:
		delete(m, strings.ToUpper(rest[0]))
		c.status = http.StatusNoContent
		c.w.WriteHeader(http.StatusNoContent)
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func validSecretName(n string) bool {
	if n == "" || strings.HasPrefix(strings.ToUpper(n), "GITHUB_") || (n[0] >= '0' && n[0] <= '9') {
		return false
	}
	for _, ch := range n {
		if !(ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9') {
			return false
		}
	}
	return true
}

func (s *Server) environmentJSON(r *repo, e *environment) map[string]any {
	out := map[string]any{"name": e.name, "html_url": "https://github.com/" + r.fullName() + "/deployments/activity_log?environments_filter=" + e.name,
		"created_at": e.created, "updated_at": e.updated, "can_admins_bypass": !e.noAdminBypass}
	rules := []map[string]any{}
	if e.waitTimer > 0 {
		rules = append(rules, map[string]any{"id": 1, "type": "wait_timer", "wait_timer": e.waitTimer})
	}
	if len(e.reviewers) > 0 {
		var list []map[string]any
		for _, rv := range e.reviewers {
			list = append(list, map[string]any{"type": rv.Type, "reviewer": map[string]any{"id": rv.ID}})
		}
		rules = append(rules, map[string]any{"id": 2, "type": "required_reviewers", "prevent_self_review": e.preventSelfReview, "reviewers": list})
	}
	if e.custom || e.protected {
		out["deployment_branch_policy"] = map[string]bool{"protected_branches": e.protected, "custom_branch_policies": e.custom}
		rules = append(rules, map[string]any{"id": 3, "type": "branch_policy"})
	} else {
		out["deployment_branch_policy"] = nil
	}
	out["protection_rules"] = rules
	return out
}

// appRuleJSON is the i-th custom deployment protection rule of an environment, the App's gate.
func appRuleJSON(i int, integrationID int64) map[string]any {
	return map[string]any{"id": i + 1, "enabled": true,
		"app": map[string]any{"id": integrationID, "slug": fmt.Sprintf("gate-%d", integrationID),
			"integration_url": fmt.Sprintf("https://api.github.com/apps/gate-%d", integrationID)}}
}

func (s *Server) environmentRoute(c *call, r *repo, rest []string) {
	a := s.adminOf(r)
	m := c.r.Method
	if len(rest) == 0 {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	name := rest[0]
	e, ok := a.environments[lower(name)]
	if len(rest) == 1 && m == http.MethodPut {
		if r.private && r.freePlan {
			c.fail(http.StatusUnprocessableEntity, "Environments are not available for private repositories on this plan")
			return
		}
		var body struct {
			WaitTimer         *int          `json:"wait_timer"`
			Reviewers         []envReviewer `json:"reviewers"`
			PreventSelfReview *bool         `json:"prevent_self_review"`
			CanAdminsBypass   *bool         `json:"can_admins_bypass"`
			Policy            *struct {
				Protected bool `json:"protected_branches"`
				Custom    bool `json:"custom_branch_policies"`
			} `json:"deployment_branch_policy"`
		}
		if c.r.ContentLength != 0 {
			if !c.decode(1<<20, &body) {
				return
			}
		}
		if body.Policy != nil && body.Policy.Protected == body.Policy.Custom {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: exactly one of protected_branches and custom_branch_policies must be true")
			return
		}
		if body.WaitTimer != nil && (*body.WaitTimer < 0 || *body.WaitTimer > 43200) || len(body.Reviewers) > 6 {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: wait_timer is 0 to 43200 minutes, at most 6 reviewers")
			return
		}
		now := s.now().UTC().Format("2006-01-02T15:04:05Z")
		if !ok {
			e = &environment{name: name, secrets: map[string]*storedSecret{}, variables: map[string]string{}, created: now}
			a.environments[lower(name)] = e
		}
		// A PUT states the whole configuration: what it leaves out is cleared (source silent:
		// the stricter reading).
		e.custom = body.Policy != nil && body.Policy.Custom
		e.protected = body.Policy != nil && body.Policy.Protected
		if !e.custom {
			e.branches = nil
		}
		e.waitTimer, e.reviewers, e.updated = 0, body.Reviewers, now
		if body.WaitTimer != nil {
			e.waitTimer = *body.WaitTimer
		}
		e.preventSelfReview = body.PreventSelfReview != nil && *body.PreventSelfReview
		e.noAdminBypass = body.CanAdminsBypass != nil && !*body.CanAdminsBypass
		c.json(http.StatusOK, s.environmentJSON(r, e))
		return
	}
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	switch {
	case len(rest) == 1 && m == http.MethodGet:
		c.json(http.StatusOK, s.environmentJSON(r, e))
	case len(rest) == 1 && m == http.MethodDelete:
		// Its secrets, variables and protection rules go with it.
		delete(a.environments, lower(name))
		c.status = http.StatusNoContent
		c.w.WriteHeader(http.StatusNoContent)
	case len(rest) == 2 && rest[1] == "variables" && m == http.MethodGet:
		names := make([]string, 0, len(e.variables))
		for k := range e.variables {
			names = append(names, k)
		}
		sort.Strings(names)
		lo, hi, ok := c.paginateBy(len(names), 10, 30)
		if !ok {
			return
		}
		list := []map[string]string{}
		for _, k := range names[lo:hi] {
			list = append(list, map[string]string{"name": k, "value": e.variables[k], "created_at": e.created, "updated_at": e.updated})
		}
		c.json(http.StatusOK, map[string]any{"total_count": len(names), "variables": list})
	case len(rest) == 2 && rest[1] == "deployment_protection_rules" && m == http.MethodGet:
		list := []map[string]any{}
		for i, id := range e.appRules {
			list = append(list, appRuleJSON(i, id))
		}
		c.json(http.StatusOK, map[string]any{"total_count": len(list), "custom_deployment_protection_rules": list})
	case len(rest) == 2 && rest[1] == "deployment_protection_rules" && m == http.MethodPost:
		var body struct {
			IntegrationID int64 `json:"integration_id"`
		}
		if !c.decode(1<<20, &body) {
			return
		}
		if body.IntegrationID <= 0 {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: integration_id is required")
			return
		}
		e.appRules = append(e.appRules, body.IntegrationID)
		c.json(http.StatusCreated, appRuleJSON(len(e.appRules)-1, body.IntegrationID))
	case len(rest) == 3 && rest[1] == "variables" && m == http.MethodDelete:
		k := strings.ToUpper(rest[2])
		if _, ok := e.variables[k]; !ok {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		delete(e.variables, k)
		c.status = http.StatusNoContent
		c.w.WriteHeader(http.StatusNoContent)
	case len(rest) >= 2 && rest[1] == "secrets":
		s.secretsRoute(c, r, name, rest[2:])
	case len(rest) == 2 && rest[1] == "deployment-branch-policies" && m == http.MethodGet:
		list := []map[string]any{}
		for i, b := range e.branches {
			list = append(list, map[string]any{"id": i + 1, "name": b, "type": "branch"})
		}
		c.json(http.StatusOK, map[string]any{"total_count": len(list), "branch_policies": list})
	case len(rest) == 2 && rest[1] == "deployment-branch-policies" && m == http.MethodPost:
		var body struct {
			Name string `json:"name"`
			Type string `json:"type"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, 1<<20)).Decode(&body); err != nil || body.Name == "" {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: name is required")
			return
		}
		if !e.custom {
			c.fail(http.StatusNotFound, "Not Found") // the environment's policy is not custom
			return
		}
		for _, b := range e.branches {
			if b == body.Name {
				c.fail(http.StatusConflict, "Branch policy already exists")
				return
			}
		}
		e.branches = append(e.branches, body.Name)
		c.json(http.StatusOK, map[string]any{"id": len(e.branches), "name": body.Name, "type": "branch"})
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (s *Server) gitRef(c *call, r *repo, rest []string) {
	a := s.adminOf(r)
	m := c.r.Method
	switch {
	case m == http.MethodGet && rest[0] == "ref" && len(rest) == 3 && rest[1] == "tags":
		sha, ok := a.tags[rest[2]]
		if !ok {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		c.json(http.StatusOK, &gh.Reference{Ref: gh.String("refs/tags/" + rest[2]), Object: &gh.GitObject{Type: gh.String("commit"), SHA: gh.String(sha)}})
	case m == http.MethodGet && rest[0] == "ref" && len(rest) == 3 && rest[1] == "heads":
		files, ok := r.files[rest[2]]
		if !ok && rest[2] != r.defaultBranch {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		sha, ok := a.branchSHA[rest[2]]
		if !ok {
			sha = treeSHA(files)
			a.branchSHA[rest[2]] = sha
		}
		c.json(http.StatusOK, &gh.Reference{Ref: gh.String("refs/heads/" + rest[2]), Object: &gh.GitObject{Type: gh.String("commit"), SHA: gh.String(sha)}})
	case m == http.MethodPost && rest[0] == "refs" && len(rest) == 1:
		var body struct {
			Ref string `json:"ref"`
			SHA string `json:"sha"`
		}
		if !c.decode(1<<20, &body) {
			return
		}
		branch, ok := strings.CutPrefix(body.Ref, "refs/heads/")
		if !ok || branch == "" {
			c.fail(http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.")
			return
		}
		if _, exists := r.files[branch]; exists {
			c.fail(http.StatusUnprocessableEntity, "Reference already exists")
			return
		}
		var from string
		for b, sha := range a.branchSHA {
			if sha == body.SHA {
				from = b
			}
		}
		if from == "" {
			c.fail(http.StatusUnprocessableEntity, "Object does not exist")
			return
		}
		r.files[branch] = map[string][]byte{}
		for p, b := range r.files[from] {
			r.files[branch][p] = b
		}
		a.branchSHA[branch] = body.SHA
		a.forks[branch] = forkPoint{from: from, sha: body.SHA, files: maps.Clone(r.files[from])}
		c.json(http.StatusCreated, &gh.Reference{Ref: gh.String(body.Ref), Object: &gh.GitObject{Type: gh.String("commit"), SHA: gh.String(body.SHA)}})
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (s *Server) putContents(c *call, r *repo, path string) {
	var body struct {
		Message string `json:"message"`
		Content string `json:"content"`
		Branch  string `json:"branch"`
		SHA     string `json:"sha"`
	}
	if !c.decode(10<<20, &body) {
		return
	}
	if body.Message == "" {
		c.fail(http.StatusUnprocessableEntity, "Invalid request.\n\n\"message\" wasn't supplied.")
		return
	}
	data, err := base64.StdEncoding.DecodeString(body.Content)
	if err != nil {
		c.fail(http.StatusUnprocessableEntity, "content is not valid Base64")
		return
	}
	branch := body.Branch
	if branch == "" {
		branch = r.defaultBranch
	}
	files, ok := r.files[branch]
	if !ok {
		if branch != r.defaultBranch {
			c.fail(http.StatusNotFound, "Branch "+branch+" not found")
			return
		}
		files = map[string][]byte{}
		r.files[branch] = files
	}
	if workflowPath(path) && !s.mayWriteWorkflow(c.tok, r, branch, path, data) {
		// GitHub hides the path from a token that may not write workflows (recorded: 404).
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	old, exists := files[path]
	switch {
	case exists && body.SHA == "":
		c.fail(http.StatusUnprocessableEntity, "Invalid request.\n\n\"sha\" wasn't supplied.")
		return
	case exists && body.SHA != blobSHA(old):
		c.fail(http.StatusConflict, path+" does not match "+body.SHA)
		return
	}
	before := maps.Clone(files)
	files[path] = data
	a := s.adminOf(r)
	s.noteCommitLocked(r, branch, before, body.Message, c.tok.login)
	if f, ok := a.forks[branch]; ok {
		f.commits = append(f.commits, commitRec{sha: a.branchSHA[branch], message: body.Message, author: c.tok.login, date: s.now().UTC()})
		a.forks[branch] = f
	}
	status := http.StatusCreated
	if exists {
		status = http.StatusOK
	}
	c.json(status, map[string]any{"content": map[string]any{"path": path, "sha": blobSHA(data)},
		"commit": map[string]any{"sha": a.branchSHA[branch], "message": body.Message}})
}

func (s *Server) listPulls(c *call, r *repo) {
	q := c.r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head") // user:ref-name
	nums := make([]int, 0)
	for n, is := range r.issues {
		if !is.isPR || (state != "all" && is.state != state) {
			continue
		}
		if head != "" && !strings.EqualFold(head, r.owner+":"+is.headRef) {
			continue
		}
		nums = append(nums, n)
	}
	sort.Ints(nums)
	out := []*gh.PullRequest{}
	for _, n := range nums {
		out = append(out, s.prJSON(r, r.issues[n]))
	}
	c.json(http.StatusOK, out)
}

func (s *Server) createPull(c *call, r *repo) {
	var body struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
	}
	if !c.decode(1<<20, &body) {
		return
	}
	head := body.Head
	if i := strings.Index(head, ":"); i >= 0 {
		head = head[i+1:]
	}
	if _, ok := r.files[head]; !ok || body.Title == "" || body.Base == "" {
		c.fail(http.StatusUnprocessableEntity, "Validation Failed")
		return
	}
	for _, is := range r.issues {
		if is.isPR && is.state == "open" && is.headRef == head {
			c.fail(http.StatusUnprocessableEntity, "Validation Failed: A pull request already exists for "+r.owner+":"+head+".")
			return
		}
	}
	if treeSHA(r.files[head]) == treeSHA(r.files[body.Base]) {
		c.fail(http.StatusUnprocessableEntity, "Validation Failed: No commits between "+body.Base+" and "+head)
		return
	}
	r.nextNumber++
	for r.issues[r.nextNumber] != nil {
		r.nextNumber++
	}
	is := &issue{number: r.nextNumber, title: body.Title, body: body.Body, author: c.tok.login, state: "open", isPR: true,
		headRef: head, headSHA: s.adminOf(r).branchSHA[head], created: s.now()}
	r.issues[is.number] = is
	c.json(http.StatusCreated, s.prJSON(r, is))
}
