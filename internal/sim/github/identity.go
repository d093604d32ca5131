package github

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// issueEvent is one entry of an issue's events (GET /repos/{owner}/{repo}/issues/{n}/events):
// only label changes are recorded, with the account that made them.
type issueEvent struct {
	id     int64
	event  string // labeled | unlabeled
	actor  string // login at the time of the event (follows renames, like the user id would)
	label  string
	at     time.Time
	number int
}

// hook is a one-shot action run after a request matching match has been served.
type hook struct {
	match func(Request) bool
	do    func()
	done  bool
}

// OnRequest runs do once, right after the first request that match accepts has been handled and
// before its response reaches the client (the server lock is released: do may call any method).
// Tests use it to change the world in the middle of a run, e.g. rename a user.
func (s *Server) OnRequest(match func(Request) bool, do func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, &hook{match: match, do: do})
}

func (s *Server) dueHooksLocked(r Request) []func() {
	var out []func()
	for _, h := range s.hooks {
		if !h.done && h.match(r) {
			h.done = true
			out = append(out, h.do)
		}
	}
	return out
}

// UserID returns the immutable numeric id of login (0 if unknown).
func (s *Server) UserID(login string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.users[lower(login)]; ok {
		return u.id
	}
	return 0
}

// RenameUser changes login's login to newLogin, as GitHub does: the account (its id, keys,
// repository roles, comments) keeps everything, and the old login is free at once for anyone
// to register (AddUser, AddUserKey… then create a different account with a new id).
func (s *Server) RenameUser(login, newLogin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[lower(login)]
	if !ok {
		panic("sim/github: RenameUser: unknown user " + login)
	}
	if _, taken := s.users[lower(newLogin)]; taken {
		panic("sim/github: RenameUser: login " + newLogin + " is taken")
	}
	old := u.login
	delete(s.users, lower(old))
	u.login = newLogin
	s.users[lower(newLogin)] = u
	for _, r := range s.repos {
		if role, ok := r.perms[lower(old)]; ok {
			delete(r.perms, lower(old))
			r.perms[lower(newLogin)] = role
		}
		for _, is := range r.issues {
			if strings.EqualFold(is.author, old) {
				is.author = newLogin
			}
		}
	}
	for _, c := range s.comments {
		if strings.EqualFold(c.Author, old) {
			c.Author = newLogin
		}
	}
	for k, evs := range s.events {
		for i := range evs {
			if strings.EqualFold(evs[i].actor, old) {
				s.events[k][i].actor = newLogin
			}
		}
	}
}

// LabelIssue adds label to an issue or PR as actor (a "labeled" event names actor).
func (s *Server) LabelIssue(fullName string, number int, actor, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(fullName)
	is := r.issues[number]
	if is == nil {
		panic("sim/github: LabelIssue: unknown issue " + fullName + "#" + strconv.Itoa(number))
	}
	s.userLocked(actor)
	for _, l := range is.labels {
		if strings.EqualFold(l, label) {
			return
		}
	}
	is.labels = append(is.labels, label)
	s.recordLabelEventLocked(r, is, "labeled", actor, label)
}

func eventKey(r *repo, number int) string { return lower(r.fullName()) + "#" + strconv.Itoa(number) }

func (s *Server) recordLabelEventLocked(r *repo, is *issue, event, actor, label string) {
	k := eventKey(r, is.number)
	s.events[k] = append(s.events[k], issueEvent{id: s.id(), event: event, actor: actor, label: label, at: s.now(), number: is.number})
}

func (s *Server) seedLabelEventsLocked(r *repo, number int, by, author string, labels []string) {
	if by == "" {
		by = author
	}
	if by == "" {
		by = r.owner
	}
	s.userLocked(by)
	is := r.issues[number]
	for _, l := range labels {
		s.recordLabelEventLocked(r, is, "labeled", by, l)
	}
}

func (s *Server) setLabelsLocked(r *repo, is *issue, actor string, labels []string) {
	has := func(list []string, l string) bool {
		for _, x := range list {
			if strings.EqualFold(x, l) {
				return true
			}
		}
		return false
	}
	for _, l := range is.labels {
		if !has(labels, l) {
			s.recordLabelEventLocked(r, is, "unlabeled", actor, l)
		}
	}
	for _, l := range labels {
		if !has(is.labels, l) {
			s.recordLabelEventLocked(r, is, "labeled", actor, l)
		}
	}
	is.labels = append([]string(nil), labels...)
}

// listEvents serves GET /repos/{owner}/{repo}/issues/{n}/events (issues/list-events), oldest
// first, paginated.
func (s *Server) listEvents(c *call, r *repo, is *issue) {
	all := []*gh.IssueEvent{}
	for _, e := range s.events[eventKey(r, is.number)] {
		at := gh.Timestamp{Time: e.at}
		all = append(all, &gh.IssueEvent{ID: gh.Int64(e.id), Event: gh.String(e.event), Actor: s.ghUser(e.actor),
			Label: &gh.Label{Name: gh.String(e.label)}, CreatedAt: &at})
	}
	lo, hi, ok := c.paginate(len(all))
	if !ok {
		return
	}
	c.json(http.StatusOK, all[lo:hi])
}

// tokenUser is the user of login, for a call with any token: false when it answered (401, or
// 404 for an unknown login).
func (s *Server) tokenUser(c *call, login string) (*user, bool) {
	if !s.requireToken(c, nil, "", "") {
		return nil, false
	}
	u, ok := s.users[lower(login)]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
	}
	return u, ok
}

// userByLogin serves GET /users/{username} (users/get-by-username).
func (s *Server) userByLogin(c *call, login string) {
	u, ok := s.tokenUser(c, login)
	if !ok {
		return
	}
	c.json(http.StatusOK, &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ)})
}

// userByID serves GET /user/{account_id} (users/get-by-id): the account's current login.
func (s *Server) userByID(c *call, idText string) {
	if !s.requireToken(c, nil, "", "") {
		return
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	for _, u := range s.users {
		if u.id == id {
			c.json(http.StatusOK, &gh.User{Login: gh.String(u.login), ID: gh.Int64(u.id), Type: gh.String(u.typ)})
			return
		}
	}
	c.fail(http.StatusNotFound, "Not Found")
}
