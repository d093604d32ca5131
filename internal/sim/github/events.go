package github

import (
	"encoding/json"
	"strconv"
	"strings"
)

// CommentPayload is an issue_comment "created" event of GitHub's shape, as a workflow receives it
// in GITHUB_EVENT_PATH (the fields the bot reads).
func CommentPayload(repo string, number int, commentID int64, login string, userID int64, body string, installation int64) []byte {
	return commentPayload(repo, number, commentID, login, userID, body, installation, false)
}

// IssueCommentPayload is CommentPayload for repo's issue or pull request number as the stand-in
// holds it: a pull request's comment is an issue_comment whose issue carries pull_request (its
// links), which is how a receiver tells them apart (docs "Webhook events and payloads",
// issue_comment: "Activity related to a comment on an issue or pull request"; go-github v88
// Issue.IsPullRequest reads PullRequestLinks).
func (s *Server) IssueCommentPayload(repo string, number int, commentID int64, login, body string) []byte {
	userID, installation := s.UserID(login), s.InstallationID(repo)
	s.mu.Lock()
	_, is := s.mustIssue(repo, number)
	isPR := is.isPR
	s.mu.Unlock()
	return commentPayload(repo, number, commentID, login, userID, body, installation, isPR)
}

func commentPayload(repo string, number int, commentID int64, login string, userID int64, body string, installation int64, isPR bool) []byte {
	owner, name, _ := strings.Cut(repo, "/")
	user := map[string]any{"login": login, "id": userID, "type": "User"}
	issue := map[string]any{"number": number, "state": "open", "labels": []any{}, "user": map[string]any{"login": "alice", "type": "User"},
		"html_url": "https://github.com/" + repo + "/issues/" + strconv.Itoa(number)}
	if isPR {
		web := "https://github.com/" + repo + "/pull/" + strconv.Itoa(number)
		issue["html_url"] = web
		issue["pull_request"] = map[string]any{"url": "https://api.github.com/repos/" + repo + "/pulls/" + strconv.Itoa(number),
			"html_url": web, "diff_url": web + ".diff", "patch_url": web + ".patch", "merged_at": nil}
	}
	p := map[string]any{
		"action":       "created",
		"issue":        issue,
		"comment":      map[string]any{"id": commentID, "body": body, "user": user},
		"repository":   map[string]any{"name": name, "full_name": repo, "owner": map[string]any{"login": owner}, "default_branch": "main"},
		"sender":       user,
		"installation": map[string]any{"id": installation},
	}
	b, _ := json.Marshal(p) // maps of strings and numbers always marshal
	return b
}

// PRPayload is a pull_request (or pull_request_target: the same payload) event of pull request
// number as it stands, of GitHub's shape (the fields the bot reads): action, number, the pull
// request (state, draft, merged, labels, head sha/ref/repository, base), the label of a labeled
// event, repository, sender, installation.
func (s *Server) PRPayload(fullName string, number int, action, label, sender string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, is := s.mustIssue(fullName, number)
	headRepo := map[string]any{"full_name": r.fullName(), "name": r.name, "owner": map[string]any{"login": r.owner}, "fork": false}
	if is.fork {
		headRepo = map[string]any{"full_name": "contributor/" + r.name, "name": r.name, "owner": map[string]any{"login": "contributor"}, "fork": true}
	}
	repository := map[string]any{"id": r.id, "name": r.name, "full_name": r.fullName(), "owner": map[string]any{"login": r.owner}, "default_branch": r.defaultBranch}
	u := s.userLocked(sender)
	pr := map[string]any{"number": number, "state": is.state, "draft": is.draft, "merged": is.merged, "labels": labelsJSON(is.labels),
		"user":     map[string]any{"login": is.author, "type": "User"},
		"head":     map[string]any{"sha": is.headSHA, "ref": is.headRef, "repo": headRepo},
		"base":     map[string]any{"ref": r.defaultBranch, "repo": repository},
		"html_url": "https://github.com/" + r.fullName() + "/pull/" + strconv.Itoa(number)}
	p := map[string]any{"action": action, "number": number, "pull_request": pr, "repository": repository,
		"sender": map[string]any{"login": u.login, "id": u.id, "type": u.typ}, "installation": map[string]any{"id": s.installedOn(r)}}
	if label != "" {
		p["label"] = map[string]any{"name": label}
	}
	b, _ := json.Marshal(p)
	return b
}

// DispatchPayload is the repository_dispatch event of d as the default branch's workflow receives
// it: action (the event type), branch, client_payload, repository, sender, installation.
func (s *Server) DispatchPayload(d Dispatch) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.mustRepo(d.Repo)
	u := s.userLocked(d.Sender)
	p := map[string]any{"action": d.EventType, "branch": r.defaultBranch, "client_payload": d.Payload,
		"repository": map[string]any{"id": r.id, "name": r.name, "full_name": r.fullName(), "owner": map[string]any{"login": r.owner}, "default_branch": r.defaultBranch},
		"sender":     map[string]any{"login": u.login, "id": u.id, "type": u.typ}, "installation": map[string]any{"id": s.installedOn(r)}}
	b, _ := json.Marshal(p)
	return b
}
