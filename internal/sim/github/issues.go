package github

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Issue creation, edits and search, for the operator issue ("POC clusters") the scheduled run keeps.
//
// Contract sources (docs.github.com REST reference, api version 2022-11-28):
//   - "Create an issue", POST /repos/{owner}/{repo}/issues: `title` required (422 missing_field
//     otherwise), `body` optional; 201 with the issue; needs issues write.
//   - "Update an issue", PATCH /repos/{owner}/{repo}/issues/{number}: `title`, `body`, `state`
//     optional; 200 with the issue; needs issues write.
//   - "Search issues and pull requests", GET /search/issues?q=…: answers total_count,
//     incomplete_results and items. Qualifiers read here: repo:OWNER/NAME, is:issue / is:pr,
//     is:open / is:closed (also state:), in:title, author:LOGIN, and quoted or bare words matched in
//     the title. Other qualifiers are refused with 422 (source silent on the stand-in's subset:
//     stricter reading chosen, so that a query the stand-in would silently ignore fails a test).
//     An installation token only finds issues of the repositories it covers (GitHub scopes search
//     results to what the token can read). Search is eventually consistent: an issue is found
//     only SearchLag after it was created (searchable).
//   - Bodies are limited to 65536 characters like comments ("body is too long"), counted as
//     bodyTooLong says.
//   - Pinning an issue has no REST endpoint (GraphQL mutation pinIssue only); the stand-in has none.

func (s *Server) issueInput(c *call, resource string, needTitle bool) (title, body, state *string, ok bool) {
	var in struct {
		Title *string `json:"title"`
		Body  *string `json:"body"`
		State *string `json:"state"`
	}
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return nil, nil, nil, false
	}
	if needTitle && (in.Title == nil || strings.TrimSpace(*in.Title) == "") {
		c.validation(resource, "title", "missing_field", "title wasn't supplied.")
		return nil, nil, nil, false
	}
	if in.Body != nil && s.bodyTooLong(*in.Body) {
		c.validation(resource, "body", "custom", "body is too long (maximum is 65536 characters)")
		return nil, nil, nil, false
	}
	if in.State != nil && *in.State != "open" && *in.State != "closed" {
		c.validation(resource, "state", "invalid", "state is not included in the list")
		return nil, nil, nil, false
	}
	return in.Title, in.Body, in.State, true
}

func (s *Server) createIssue(c *call, r *repo) {
	title, body, _, ok := s.issueInput(c, "Issue", true)
	if !ok {
		return
	}
	is := &issue{title: *title, author: c.tok.login, state: "open"}
	if body != nil {
		is.body = *body
	}
	s.addIssueLocked(r, is)
	c.json(http.StatusCreated, s.issueJSON(r, is))
}

func (s *Server) editIssue(c *call, r *repo, is *issue) {
	title, body, state, ok := s.issueInput(c, "Issue", false)
	if !ok {
		return
	}
	if title != nil {
		is.title = *title
	}
	if body != nil {
		is.body = *body
	}
	if state != nil && *state != is.state {
		is.state = *state
		if is.state == "closed" {
			is.closedAt = s.now()
		}
	}
	c.json(http.StatusOK, s.issueJSON(r, is))
}

func (s *Server) searchIssues(c *call) {
	q := c.r.URL.Query().Get("q")
	var repoName, kind, state, author string
	inTitle := false
	var words []string
	for _, tok := range splitQuery(q) {
		k, v, qualified := strings.Cut(tok, ":")
		if !qualified || strings.HasPrefix(tok, `"`) {
			words = append(words, strings.ToLower(strings.Trim(tok, `"`)))
			continue
		}
		switch {
		case k == "repo":
			repoName = lower(v)
		case k == "is" && (v == "issue" || v == "pr"):
			kind = v
		case (k == "is" || k == "state") && (v == "open" || v == "closed"):
			state = v
		case k == "in" && v == "title":
			inTitle = true
		case k == "author":
			author = lower(v)
		default:
			c.validation("Search", "q", "invalid", "the stand-in does not know the qualifier "+tok)
			return
		}
	}
	_ = inTitle // words always match titles here; bodies are not searched
	items := []any{}
	for _, name := range slices.Sorted(maps.Keys(s.repos)) {
		r := s.repos[name]
		if repoName != "" && name != repoName {
			continue
		}
		t := c.tok
		if t.installationID != 0 && (s.installedOn(r) != t.installationID || len(t.repos) > 0 && !t.repos[name]) {
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(r.issues)) {
			is := r.issues[n]
			if !s.searchable(is) {
				continue
			}
			if kind == "issue" && is.isPR || kind == "pr" && !is.isPR || state != "" && is.state != state ||
				author != "" && lower(is.author) != author {
				continue
			}
			title := strings.ToLower(is.title)
			match := true
			for _, w := range words {
				match = match && strings.Contains(title, w)
			}
			if match {
				items = append(items, s.issueJSON(r, is))
			}
		}
	}
	c.json(http.StatusOK, map[string]any{"total_count": len(items), "incomplete_results": false, "items": items})
}

// splitQuery splits a search query on blanks, keeping "quoted phrases" (and qualifier:"values") whole.
func splitQuery(q string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range q {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '+') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// IssueBody returns an issue's title and body (for assertions).
func (s *Server) IssueBody(fullName string, number int) (title, body string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, found := s.repos[lower(fullName)]
	if !found {
		return "", "", false
	}
	is, found := r.issues[number]
	if !found {
		return "", "", false
	}
	return is.title, is.body, true
}

// BodyUnit is how "65536 characters" is counted. GitHub's messages say characters and no page
// says which: code points, UTF-16 code units (what a browser counts) and bytes are each
// plausible, so the stand-in plays each; bytes, the strictest, by default.
type BodyUnit int

const (
	BodyBytes BodyUnit = iota // UTF-8 bytes
	BodyRunes                 // Unicode code points
	BodyUTF16                 // UTF-16 code units
)

// bodyTooLong says whether body is over GitHub's limit in the stand-in's unit.
func (s *Server) bodyTooLong(body string) bool {
	n := len(body)
	switch s.bodyUnit {
	case BodyRunes:
		n = utf8.RuneCountInString(body)
	case BodyUTF16:
		n = 0
		for _, r := range body {
			n += utf16.RuneLen(r)
		}
	}
	return n > maxBodyChars
}

// searchable says whether the search index has is yet: SearchLag after its creation.
func (s *Server) searchable(is *issue) bool { return !s.now().Before(is.created.Add(s.searchLag)) }
