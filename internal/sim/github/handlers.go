package github

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
)

const docURL = "https://docs.github.com/rest"

// maxBodyChars is GitHub's limit on an issue's or a comment's body ("body is too long (maximum
// is 65536 characters)"); bodyTooLong says in which unit it is counted.
const maxBodyChars = 65536

// call is one request being served, with the lock held.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	path   string   // without /api/v3
	seg    []string // path segments
	prefix string   // "/api/v3" when the client used it (for Link headers)
	auth   string
	jwtErr error
	tok    *token
	status int
	// afterEffect, when not 0, is the status answered after the request was served (an
	// AfterEffect fault).
	afterEffect int
}

func (c *call) json(status int, v any) {
	c.status = status
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(status)
	if v != nil {
		_ = json.NewEncoder(c.w).Encode(v)
	}
}

// decode reads the JSON body, at most limit bytes, into v; it answers 400 and returns false when
// the body is no JSON of v's shape.
func (c *call) decode(limit int64, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, limit)).Decode(v); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

func (c *call) fail(status int, msg string) {
	c.json(status, map[string]string{"message": msg, "documentation_url": docURL, "status": strconv.Itoa(status)})
}

// ServeHTTP serves the emulated REST API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := s.stall(r); d > 0 {
		time.Sleep(d) // bounded by the fault; the request is served even if the client left
	}
	s.mu.Lock()
	var after []func() // hooks (OnRequest): run unlocked, before the response is sent
	defer func() {
		s.mu.Unlock()
		for _, f := range after {
			f()
		}
	}()
	c := &call{w: w, r: r, path: r.URL.Path}
	escaped := r.URL.EscapedPath()
	if p, ok := strings.CutPrefix(c.path, "/api/v3"); ok && (p == "" || strings.HasPrefix(p, "/")) {
		c.path, c.prefix = p, "/api/v3"
		escaped = strings.TrimPrefix(escaped, "/api/v3")
	}
	// Split before unescaping: a label like "poc/keep" travels as one segment, "poc%2Fkeep".
	c.seg = strings.Split(strings.Trim(escaped, "/"), "/")
	for i, sg := range c.seg {
		if u, err := url.PathUnescape(sg); err == nil {
			c.seg[i] = u
		}
	}
	s.authenticate(c)
	c.oauthScopes()
	defer func() {
		s.requests = append(s.requests, Request{Method: r.Method, Path: c.path, Query: r.URL.RawQuery,
			Auth: c.auth, Status: c.status, At: s.now()})
		after = s.dueHooksLocked(s.requests[len(s.requests)-1])
		s.log.Debug("sim/github", "method", r.Method, "path", c.path, "auth", c.auth, "status", c.status)
	}()
	if s.applyFault(c) || s.limitContent(c) {
		return
	}
	if c.afterEffect != 0 {
		real := c.w
		c.w = discardWriter{h: http.Header{}}
		s.route(c)
		c.w = real
		c.fail(c.afterEffect, "Server Error")
		return
	}
	s.route(c)
}

// discardWriter takes a response nobody will see: the request's effect stays, its answer goes.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}

// stall takes the first Stall fault that matches r, if any, and returns its duration.
func (s *Server) stall(r *http.Request) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Stall <= 0 || (f.Method != "" && f.Method != r.Method) || !strings.Contains(r.URL.Path, f.PathContains) {
			continue
		}
		s.faults[i].Times--
		if s.faults[i].Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f.Stall
	}
	return 0
}

func (s *Server) applyFault(c *call) bool {
	for i, f := range s.faults {
		if f.Stall > 0 {
			continue // taken by stall, before the lock
		}
		if (f.Method != "" && f.Method != c.r.Method) || !strings.Contains(c.path, f.PathContains) {
			continue
		}
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		if f.SecondaryRateLimit {
			status := f.Status
			if status == 0 {
				status = http.StatusForbidden
			}
			secondaryLimited(c, status, f.Answer, s.now(), f.RetryAfter)
			return true
		}
		if f.RetryAfter > 0 {
			c.w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
		}
		status := f.Status
		if status == 0 {
			status = http.StatusBadGateway
		}
		if f.AfterEffect {
			c.afterEffect = status
			return false
		}
		c.fail(status, "Server Error")
		return true
	}
	return false
}

func (s *Server) authenticate(c *call) {
	h := c.r.Header.Get("Authorization")
	scheme, cred, _ := strings.Cut(h, " ")
	cred = strings.TrimSpace(cred)
	switch {
	case h == "":
		c.auth = "none"
		return
	case !strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token"):
		c.auth = "invalid"
		return
	}
	if strings.HasPrefix(cred, "ghs_") {
		// An installation token: a stateless one holds a JWT (ghs_<app id>_<JWT>), but it is
		// GitHub's own, never an App JWT.
		s.tokenAuth(c, cred)
		return
	}
	if err := s.verifyJWT(cred, s.now()); err == nil {
		c.auth = "jwt"
		return
	} else if !errors.Is(err, errNotJWT) {
		c.auth, c.jwtErr = "invalid", err
		return
	}
	s.tokenAuth(c, cred)
}

// tokenAuth accepts a known, unexpired token, matched on its whole value.
func (s *Server) tokenAuth(c *call, cred string) {
	t, ok := s.tokens[cred]
	if !ok || !s.now().Before(t.expires) {
		c.auth = "invalid"
		return
	}
	c.auth, c.tok = "token", t
}

// requireJWT answers like GitHub when an App endpoint is called without a valid App JWT.
func (s *Server) requireJWT(c *call) bool {
	if c.auth == "jwt" {
		return true
	}
	if c.jwtErr != nil {
		c.fail(http.StatusUnauthorized, c.jwtErr.Error())
		return false
	}
	c.fail(http.StatusUnauthorized, "A JSON web token could not be decoded")
	return false
}

// requireToken checks that an installation (or static) token may use perm at level on repo.
func (s *Server) requireToken(c *call, r *repo, perm, level string) bool {
	switch c.auth {
	case "token":
	case "none":
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return false
	case "jwt":
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return false
	default:
		c.fail(http.StatusUnauthorized, "Bad credentials")
		return false
	}
	if r == nil {
		return true
	}
	t := c.tok
	if t.installationID != 0 && s.installedOn(r) != t.installationID {
		c.fail(http.StatusNotFound, "Not Found")
		return false
	}
	if len(t.repos) > 0 && !t.repos[lower(r.fullName())] {
		c.fail(http.StatusNotFound, "Not Found")
		return false
	}
	if perm != "" && permLevel(t.perms[perm]) < permLevel(level) {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return false
	}
	return true
}

func (s *Server) route(c *call) {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	if c.prefix == "" && s.oidcRoute(c) {
		return
	}
	switch {
	case n == 1 && seg[0] == "app" && m == http.MethodGet:
		if s.requireJWT(c) {
			c.json(http.StatusOK, &gh.App{ID: gh.Int64(s.appID), Slug: gh.String(s.appSlug), Name: gh.String(s.appSlug)})
		}
	case n == 4 && seg[0] == "app" && seg[1] == "installations" && seg[3] == "access_tokens" && m == http.MethodPost:
		s.accessToken(c, seg[2])
	case n == 3 && seg[0] == "users" && seg[2] == "keys" && m == http.MethodGet:
		s.userKeys(c, seg[1])
	case n == 2 && seg[0] == "users" && m == http.MethodGet:
		s.userByLogin(c, seg[1])
	case n == 2 && seg[0] == "user" && m == http.MethodGet:
		s.userByID(c, seg[1])
	case n >= 3 && seg[0] == "repos":
		s.repoRoute(c)
	case n == 2 && seg[0] == "app" && seg[1] == "installations" && m == http.MethodGet:
		s.listInstallations(c)
	case n == 5 && seg[0] == "user" && seg[1] == "installations" && seg[3] == "repositories" && m == http.MethodPut:
		s.addInstallationRepo(c, seg[2], seg[4])
	case n >= 5 && seg[0] == "repositories" && seg[2] == "environments" && seg[4] == "secrets":
		// The id-based paths of the environment secrets (go-github v88 calls these): the same
		// secrets as under /repos/{o}/{r}/environments/{e}/secrets.
		r := s.repoByID(seg[1])
		if r == nil {
			if s.requireToken(c, nil, "", "") {
				c.fail(http.StatusNotFound, "Not Found")
			}
			return
		}
		c.seg = append([]string{"repos", r.owner, r.name}, seg[2:]...)
		s.repoRoute(c)
	case n == 2 && seg[0] == "search" && seg[1] == "issues" && m == http.MethodGet:
		if s.requireToken(c, nil, "", "") {
			s.searchIssues(c)
		}
	case n == 3 && seg[0] == "app-manifests" && seg[2] == "conversions" && m == http.MethodPost:
		s.manifestConversion(c, seg[1])
	case c.prefix == "" && m == http.MethodPost && (n == 3 && seg[0] == "settings" && seg[1] == "apps" && seg[2] == "new" ||
		n == 5 && seg[0] == "organizations" && seg[2] == "settings" && seg[3] == "apps" && seg[4] == "new"):
		owner := ""
		if n == 5 {
			owner = seg[1]
		}
		s.manifestRegister(c, owner)
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

// repoByID is the repository whose id is the decimal id (nil when there is none).
func (s *Server) repoByID(id string) *repo {
	for _, r := range s.repos {
		if strconv.FormatInt(r.id, 10) == id {
			return r
		}
	}
	return nil
}

func (s *Server) repoRoute(c *call) {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	r, ok := s.repos[lower(seg[1]+"/"+seg[2])]
	if n == 4 && seg[3] == "installation" && m == http.MethodGet {
		if !s.requireJWT(c) {
			return
		}
		if !ok || s.installedOn(r) == 0 {
			c.fail(http.StatusNotFound, "Not Found")
			return
		}
		c.json(http.StatusOK, s.installationJSON(s.installedOn(r), r.owner))
		return
	}
	if !ok {
		if s.requireToken(c, nil, "", "") {
			c.fail(http.StatusNotFound, "Not Found")
		}
		return
	}
	if c.auth == "token" && !s.scopesAllow(c, r) {
		return
	}
	if s.adminRoute(c, r) || s.prRoute(c, r) {
		return
	}
	switch {
	case n == 3 && m == http.MethodGet:
		if s.requireToken(c, r, "metadata", "read") {
			c.json(http.StatusOK, s.repoJSON(r))
		}
	case n == 4 && seg[3] == "collaborators" && m == http.MethodGet:
		if s.requireToken(c, r, "metadata", "read") {
			s.collaborators(c, r)
		}
	case n == 6 && seg[3] == "collaborators" && seg[5] == "permission" && m == http.MethodGet:
		if s.requireToken(c, r, "metadata", "read") {
			s.permission(c, r, seg[4])
		}
	case n >= 5 && seg[3] == "contents" && m == http.MethodGet:
		if s.requireToken(c, r, "contents", "read") {
			s.contents(c, r, strings.Join(seg[4:], "/"))
		}
	case n == 5 && seg[3] == "pulls" && m == http.MethodGet:
		if s.requireToken(c, r, "pull_requests", "read") {
			if is := s.issueOf(c, r, seg[4]); is != nil {
				if !is.isPR {
					c.fail(http.StatusNotFound, "Not Found")
					return
				}
				c.json(http.StatusOK, s.prJSON(r, is))
			}
		}
	case n == 4 && seg[3] == "issues" && m == http.MethodPost:
		if s.requireToken(c, r, "issues", "write") {
			s.createIssue(c, r)
		}
	case n >= 5 && seg[3] == "issues" && seg[4] == "comments":
		s.commentRoute(c, r)
	case n >= 5 && seg[3] == "issues":
		s.issueRoute(c, r)
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (s *Server) commentRoute(c *call, r *repo) {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	if n < 6 {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	level := "read"
	if m != http.MethodGet {
		level = "write"
	}
	if !s.requireToken(c, r, "issues", level) {
		return
	}
	id, _ := strconv.ParseInt(seg[5], 10, 64)
	cm, ok := s.comments[id]
	if !ok || !strings.EqualFold(cm.Repo, r.fullName()) {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	switch {
	case n == 6 && m == http.MethodGet:
		c.json(http.StatusOK, s.commentJSON(r, cm))
	case n == 6 && m == http.MethodPatch:
		body, ok := s.commentBody(c)
		if !ok {
			return
		}
		cm.Body, cm.Updated = body, s.now()
		cm.Edits++
		c.json(http.StatusOK, s.commentJSON(r, cm))
	case n == 7 && seg[6] == "reactions" && m == http.MethodPost:
		s.react(c, r, cm.Number, cm.ID)
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (s *Server) issueRoute(c *call, r *repo) {
	seg, m := c.seg, c.r.Method
	n := len(seg)
	level := "read"
	if m != http.MethodGet {
		level = "write"
	}
	if !s.requireToken(c, r, "issues", level) {
		return
	}
	is := s.issueOf(c, r, seg[4])
	if is == nil {
		return
	}
	switch {
	case n == 5 && m == http.MethodGet:
		c.json(http.StatusOK, s.issueJSON(r, is))
	case n == 5 && m == http.MethodPatch:
		s.editIssue(c, r, is)
	case n == 6 && seg[5] == "comments" && m == http.MethodGet:
		s.listComments(c, r, is)
	case n == 6 && seg[5] == "comments" && m == http.MethodPost:
		body, ok := s.commentBody(c)
		if !ok {
			return
		}
		cm := s.addCommentLocked(r, is, c.tok.login, c.tok.typ, body)
		c.json(http.StatusCreated, s.commentJSON(r, cm))
	case n == 6 && seg[5] == "reactions" && m == http.MethodPost:
		s.react(c, r, is.number, 0)
	case n == 6 && seg[5] == "labels" && m == http.MethodGet:
		c.json(http.StatusOK, labelsJSON(is.labels))
	case n == 6 && seg[5] == "labels" && m == http.MethodPost:
		s.addLabels(c, r, is)
	case n == 6 && seg[5] == "events" && m == http.MethodGet:
		s.listEvents(c, r, is)
	case n == 7 && seg[5] == "labels" && m == http.MethodDelete:
		name := seg[6]
		for i, l := range is.labels {
			if strings.EqualFold(l, name) {
				is.labels = append(is.labels[:i], is.labels[i+1:]...)
				s.recordLabelEventLocked(r, is, "unlabeled", c.tok.login, l)
				c.json(http.StatusOK, labelsJSON(is.labels))
				return
			}
		}
		c.fail(http.StatusNotFound, "Label does not exist")
	default:
		c.fail(http.StatusNotFound, "Not Found")
	}
}

func (s *Server) issueOf(c *call, r *repo, num string) *issue {
	n, err := strconv.Atoi(num)
	if err != nil || r.issues[n] == nil {
		c.fail(http.StatusNotFound, "Not Found")
		return nil
	}
	return r.issues[n]
}

func (s *Server) commentBody(c *call) (string, bool) {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return "", false
	}
	if in.Body == nil || *in.Body == "" {
		c.validation("IssueComment", "body", "missing_field", "body wasn't supplied.")
		return "", false
	}
	if s.bodyTooLong(*in.Body) {
		// The shape recorded since 2021 for comments (field "data", code "unprocessable").
		c.validation("IssueComment", "data", "unprocessable", "Body is too long (maximum is 65536 characters)")
		return "", false
	}
	return *in.Body, true
}

func (c *call) validation(resource, field, code, msg string) {
	c.json(http.StatusUnprocessableEntity, map[string]any{
		"message":           "Validation Failed",
		"errors":            []map[string]string{{"resource": resource, "code": code, "field": field, "message": msg}},
		"documentation_url": docURL,
		"status":            "422",
	})
}

var validReactions = map[string]bool{"+1": true, "-1": true, "laugh": true, "confused": true, "heart": true,
	"hooray": true, "rocket": true, "eyes": true}

func (s *Server) react(c *call, r *repo, number int, commentID int64) {
	var in struct {
		Content string `json:"content"`
	}
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<16)).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if !validReactions[in.Content] {
		c.validation("Reaction", "content", "invalid", "content is not a valid reaction")
		return
	}
	u := s.userLocked(c.tok.login)
	for _, re := range s.reactions {
		// GitHub answers 200 with the existing reaction when the same user reacts twice.
		if strings.EqualFold(re.Repo, r.fullName()) && re.Number == number && re.CommentID == commentID &&
			re.Content == in.Content && re.User == u.login {
			c.json(http.StatusOK, reactionJSON(re, u))
			return
		}
	}
	re := Reaction{ID: s.id(), Repo: r.fullName(), Number: number, CommentID: commentID, Content: in.Content,
		User: u.login, At: s.now()}
	s.reactions = append(s.reactions, re)
	c.json(http.StatusCreated, reactionJSON(re, u))
}

func (s *Server) addLabels(c *call, r *repo, is *issue) {
	raw, err := io.ReadAll(io.LimitReader(c.r.Body, 1<<16))
	if err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	// The API takes either a bare array or {"labels": [...]}; go-github sends the array.
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil {
		var obj struct {
			Labels []string `json:"labels"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			c.fail(http.StatusBadRequest, "Problems parsing JSON")
			return
		}
		names = obj.Labels
	}
next:
	for _, n := range names {
		for _, l := range is.labels {
			if strings.EqualFold(l, n) {
				continue next
			}
		}
		is.labels = append(is.labels, n)
		s.recordLabelEventLocked(r, is, "labeled", c.tok.login, n)
	}
	c.json(http.StatusOK, labelsJSON(is.labels))
}

func (s *Server) listComments(c *call, r *repo, is *issue) {
	var since time.Time
	if v := c.r.URL.Query().Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			c.validation("IssueComment", "since", "invalid", "since is not a timestamp")
			return
		}
		since = t
	}
	var all []*gh.IssueComment
	for _, id := range is.comments {
		if cm, ok := s.comments[id]; ok && !cm.Updated.Before(since) {
			all = append(all, s.commentJSON(r, cm))
		}
	}
	lo, hi, ok := c.paginate(len(all))
	if !ok {
		return
	}
	c.json(http.StatusOK, all[lo:hi])
}

// paginate applies page/per_page (default 30, at most 100) and writes GitHub's Link header
// (first, prev, next, last).
func (c *call) paginate(total int) (lo, hi int, ok bool) { return c.paginateBy(total, 30, 100) }

// paginateBy is paginate with an endpoint's own default and largest per_page.
func (c *call) paginateBy(total, defPer, maxPer int) (lo, hi int, ok bool) {
	q := c.r.URL.Query()
	per, page := defPer, 1
	if v := q.Get("per_page"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 {
			c.validation("", "per_page", "invalid", "per_page must be a positive integer")
			return 0, 0, false
		}
		per = min(p, maxPer)
	}
	if v := q.Get("page"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 1 {
			p = 1
		}
		page = p
	}
	last := max(1, (total+per-1)/per)
	link := func(p int, rel string) string {
		u := url.URL{Scheme: "http", Host: c.r.Host, Path: c.prefix + c.path}
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		qq.Set("per_page", strconv.Itoa(per))
		qq.Set("page", strconv.Itoa(p))
		u.RawQuery = qq.Encode()
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"), link(1, "first"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	lo = min((page-1)*per, total)
	hi = min(lo+per, total)
	return lo, hi, true
}

func (s *Server) permission(c *call, r *repo, login string) {
	u, ok := s.users[lower(login)]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	role := r.perms[lower(login)]
	if role == "" && strings.EqualFold(login, r.owner) {
		role = "admin" // the owner of a repository administers it
	}
	if role == "" {
		role = "none"
		if !r.private {
			role = "read"
		}
	}
	// The legacy "permission" field folds maintain into write and triage into read; role_name
	// keeps the exact role. Clients must read both.
	legacy := map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read",
		"read": "read", "none": "none"}[role]
	c.json(http.StatusOK, &gh.RepositoryPermissionLevel{
		Permission: gh.String(legacy), RoleName: gh.String(role),
		User: &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ)},
	})
}

// collaborators serves GET /repos/{o}/{r}/collaborators: every user given a role on r, by login
// (one page of up to 100: no test repository has more), with role_name and the permissions
// flags GitHub derives from it.
func (s *Server) collaborators(c *call, r *repo) {
	logins := make([]string, 0, len(r.perms))
	for l := range r.perms {
		logins = append(logins, l)
	}
	sort.Strings(logins)
	rank := map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}
	out := []*gh.User{}
	for _, l := range logins {
		role := r.perms[l]
		u, ok := s.users[l]
		if !ok || rank[role] == 0 {
			continue
		}
		k := rank[role]
		out = append(out, &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ), RoleName: gh.String(role),
			Permissions: &gh.RepositoryPermissions{Pull: gh.Ptr(k >= 1), Triage: gh.Ptr(k >= 2), Push: gh.Ptr(k >= 3), Maintain: gh.Ptr(k >= 4), Admin: gh.Ptr(k >= 5)}})
		if len(out) == 100 {
			break
		}
	}
	c.json(http.StatusOK, out)
}

func (s *Server) contents(c *call, r *repo, path string) {
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = r.defaultBranch
	}
	data, ok := r.files[ref][path]
	if !ok {
		if list, isDir := dirListing(r, ref, path); isDir {
			c.json(http.StatusOK, list)
			return
		}
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	name := path[strings.LastIndex(path, "/")+1:]
	// GitHub wraps the base64 at 60 columns; clients must cope.
	enc := base64.StdEncoding.EncodeToString(data)
	var wrapped strings.Builder
	for len(enc) > 60 {
		wrapped.WriteString(enc[:60] + "\n")
		enc = enc[60:]
	}
	wrapped.WriteString(enc + "\n")
	c.json(http.StatusOK, &gh.RepositoryContent{
		Type: gh.String("file"), Encoding: gh.String("base64"), Content: gh.String(wrapped.String()),
		Name: gh.String(name), Path: gh.String(path), Size: gh.Int(len(data)), SHA: gh.String(blobSHA(data)),
	})
}

func (s *Server) userKeys(c *call, login string) {
	u, ok := s.tokenUser(c, login)
	if !ok {
		return
	}
	out := []*gh.Key{}
	for _, k := range u.keys {
		out = append(out, &gh.Key{ID: gh.Int64(k.id), Key: gh.String(k.key)})
	}
	c.json(http.StatusOK, out)
}

func (s *Server) accessToken(c *call, instID string) {
	if !s.requireJWT(c) {
		return
	}
	id, _ := strconv.ParseInt(instID, 10, 64)
	owner := ""
	for o, i := range s.installations {
		if i == id {
			owner = o
		}
	}
	if owner == "" {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	var in struct {
		Repositories  []string          `json:"repositories"`
		RepositoryIDs []int64           `json:"repository_ids"`
		Permissions   map[string]string `json:"permissions"`
	}
	if c.r.ContentLength != 0 {
		if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<16)).Decode(&in); err != nil && !errors.Is(err, io.EOF) {
			c.fail(http.StatusBadRequest, "Problems parsing JSON")
			return
		}
	}
	t := &token{installationID: id, login: s.BotLogin(), typ: "Bot",
		repos: map[string]bool{}, perms: map[string]string{}, expires: s.now().Add(s.tokenTTL).Truncate(time.Second)}
	var repos []*gh.Repository
	addRepo := func(r *repo) {
		if !t.repos[lower(r.fullName())] {
			t.repos[lower(r.fullName())] = true
			repos = append(repos, s.repoJSON(r))
		}
	}
	for _, name := range in.Repositories {
		r, ok := s.repos[owner+"/"+lower(name)]
		if !ok || s.installedOn(r) != id {
			c.validation("", "repositories", "invalid",
				"There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		addRepo(r)
	}
	for _, rid := range in.RepositoryIDs {
		var found *repo
		for _, r := range s.repos {
			if r.id == rid && lower(r.owner) == owner && s.installedOn(r) == id {
				found = r
			}
		}
		if found == nil {
			c.validation("", "repository_ids", "invalid",
				"There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
		addRepo(found)
	}
	if len(in.Permissions) == 0 {
		for k, v := range s.grant {
			t.perms[k] = v
		}
	}
	for k, v := range in.Permissions {
		if permLevel(v) == 0 || permLevel(v) > permLevel(s.grant[k]) {
			c.validation("", "permissions", "invalid", "The permissions requested are not granted to this installation.")
			return
		}
		t.perms[k] = v
	}
	if _, ok := t.perms["metadata"]; !ok {
		t.perms["metadata"] = "read" // every installation token can read metadata
	}
	t.value = s.mintTokenValue(t)
	s.tokens[t.value] = t
	selection := s.selection(id)
	if len(t.repos) > 0 {
		selection = "selected"
	}
	perms := &gh.InstallationPermissions{}
	b, _ := json.Marshal(t.perms)
	_ = json.Unmarshal(b, perms)
	c.json(http.StatusCreated, map[string]any{
		"token": t.value, "expires_at": t.expires.UTC().Format(time.RFC3339),
		"permissions": perms, "repository_selection": selection, "repositories": repos,
	})
}

func (s *Server) installationJSON(id int64, owner string) *gh.Installation {
	perms := &gh.InstallationPermissions{}
	b, _ := json.Marshal(s.grant)
	_ = json.Unmarshal(b, perms)
	return &gh.Installation{ID: gh.Int64(id), AppID: gh.Int64(s.appID), AppSlug: gh.String(s.appSlug),
		Account: &gh.User{Login: gh.String(owner)}, Permissions: perms, RepositorySelection: gh.String(s.selection(id))}
}

// selection is an installation's repository_selection: "selected" or "all".
func (s *Server) selection(inst int64) string {
	if _, ok := s.selected[inst]; ok {
		return "selected"
	}
	return "all"
}

// listInstallations answers GET /app/installations (JWT): every installation of the App, one page.
func (s *Server) listInstallations(c *call) {
	if !s.requireJWT(c) {
		return
	}
	list := []*gh.Installation{}
	for _, owner := range slices.Sorted(maps.Keys(s.installations)) {
		list = append(list, s.installationJSON(s.installations[owner], s.ownerLogin(owner)))
	}
	c.json(http.StatusOK, list)
}

// ownerLogin is the login of an owner as its repositories spell it.
func (s *Server) ownerLogin(lowerOwner string) string {
	for _, r := range s.repos {
		if lower(r.owner) == lowerOwner {
			return r.owner
		}
	}
	return lowerOwner
}

// addInstallationRepo answers PUT /user/installations/{id}/repositories/{repository_id}: a user's
// token, admin on the repository, adds it to the installation on its owner.
func (s *Server) addInstallationRepo(c *call, instID, repoID string) {
	if !s.requireToken(c, nil, "", "") {
		return
	}
	if !c.tok.user {
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	if !s.classicOnly(c) {
		return
	}
	inst, _ := strconv.ParseInt(instID, 10, 64)
	r := s.repoByID(repoID)
	if r == nil || inst == 0 || s.installations[lower(r.owner)] != inst {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	if !s.roleAtLeast(c, r, "admin") {
		return
	}
	if sel, ok := s.selected[inst]; ok {
		sel[lower(r.fullName())] = true
	}
	c.status = http.StatusNoContent
	c.w.WriteHeader(http.StatusNoContent)
}

func (s *Server) repoJSON(r *repo) *gh.Repository {
	return &gh.Repository{ID: gh.Int64(r.id), Name: gh.String(r.name), FullName: gh.String(r.fullName()),
		Owner: &gh.User{Login: gh.String(r.owner)}, DefaultBranch: gh.String(r.defaultBranch),
		Private: gh.Bool(r.private), HTMLURL: gh.String("https://github.com/" + r.fullName())}
}

func (s *Server) ghUser(login string) *gh.User {
	u := s.userLocked(login)
	return &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ)}
}

func (s *Server) commentJSON(r *repo, cm *comment) *gh.IssueComment {
	created, updated := gh.Timestamp{Time: cm.Created}, gh.Timestamp{Time: cm.Updated}
	return &gh.IssueComment{ID: gh.Int64(cm.ID), Body: gh.String(cm.Body), User: s.ghUser(cm.Author),
		CreatedAt: &created, UpdatedAt: &updated,
		HTMLURL: gh.String(fmt.Sprintf("https://github.com/%s/issues/%d#issuecomment-%d", r.fullName(), cm.Number, cm.ID))}
}

func labelsJSON(names []string) []*gh.Label {
	out := []*gh.Label{}
	for _, n := range names {
		out = append(out, &gh.Label{Name: gh.String(n)})
	}
	return out
}

func reactionJSON(re Reaction, u *user) *gh.Reaction {
	return &gh.Reaction{ID: gh.Int64(re.ID), Content: gh.String(re.Content),
		User: &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ)}}
}

func (s *Server) issueJSON(r *repo, is *issue) *gh.Issue {
	out := &gh.Issue{Number: gh.Int(is.number), Title: gh.String(is.title), Body: gh.String(is.body), State: gh.String(is.state),
		Labels: labelsJSON(is.labels), HTMLURL: gh.String(fmt.Sprintf("https://github.com/%s/issues/%d", r.fullName(), is.number)),
		CreatedAt: &gh.Timestamp{Time: is.created}}
	if is.author != "" {
		out.User = s.ghUser(is.author)
	}
	if !is.closedAt.IsZero() {
		out.ClosedAt = &gh.Timestamp{Time: is.closedAt}
	}
	if is.isPR {
		out.PullRequestLinks = &gh.PullRequestLinks{URL: gh.String(fmt.Sprintf("https://api.github.com/repos/%s/pulls/%d", r.fullName(), is.number))}
	}
	return out
}

func (s *Server) prJSON(r *repo, is *issue) *gh.PullRequest {
	headRepo := r.fullName()
	if is.fork {
		headRepo = "contributor/" + r.name
	}
	out := &gh.PullRequest{Number: gh.Int(is.number), Title: gh.String(is.title), State: gh.String(is.state),
		Draft: gh.Bool(is.draft), Merged: gh.Bool(is.merged), Labels: labelsJSON(is.labels),
		Head: &gh.PullRequestBranch{SHA: gh.String(is.headSHA), Ref: gh.String(is.headRef),
			Repo: &gh.Repository{FullName: gh.String(headRepo), Fork: gh.Bool(is.fork)}},
		Base:    &gh.PullRequestBranch{Ref: gh.String(r.defaultBranch), Repo: s.repoJSON(r)},
		HTMLURL: gh.String(fmt.Sprintf("https://github.com/%s/pull/%d", r.fullName(), is.number))}
	if is.author != "" {
		out.User = s.ghUser(is.author)
	}
	if is.body != "" { // GitHub answers null for none
		out.Body = gh.String(is.body)
	}
	if is.merged {
		out.MergedAt = &gh.Timestamp{Time: is.closedAt}
	}
	return out
}
