package soak

import (
	"strconv"
	"strings"

	ghsim "github.com/pocbot/pocbot/internal/sim/github"
)

// The harness keeps the issues' state itself (the GitHub stand-in has no reader for it): GitHub
// sends it in every payload.
type issueState struct {
	closed, merged, isPR, draft, fork bool
}

func ghIssue(n int) ghsim.Issue {
	return ghsim.Issue{Number: n, Title: "soak issue " + strconv.Itoa(n), Author: "ada"}
}

func ghPR(p PR) ghsim.PR {
	return ghsim.PR{Number: p.Number, Title: "soak PR " + strconv.Itoa(p.Number), Author: "wes", Draft: p.Draft, Fork: p.Fork}
}

func key(repo string, n int) string { return repo + "#" + strconv.Itoa(n) }

func (h *history) state(repo string, n int) *issueState {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.issues == nil {
		h.issues = map[string]*issueState{}
		for _, r := range Repos() {
			for _, i := range r.Issues {
				h.issues[key(r.Name, i)] = &issueState{}
			}
			for _, p := range r.PRs {
				h.issues[key(r.Name, p.Number)] = &issueState{isPR: true, draft: p.Draft, fork: p.Fork}
			}
		}
	}
	return h.issues[key(repo, n)]
}

// applyPR changes the pull request on the stand-in as the user's action would, before the event
// is delivered (GitHub sends the event after the change). Actions that cannot happen (reopening a
// merged PR) leave it unchanged; the event is still delivered, as a stale redelivery would be.
func (h *history) applyPR(e Event) {
	st := h.state(e.Repo, e.Number)
	gh := h.w.GitHub
	labels := gh.Labels(e.Repo, e.Number)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Action {
	case "labeled":
		if !containsFold(labels, "poc") {
			gh.SetLabels(e.Repo, e.Number, append(labels, "poc")...)
		}
	case "unlabeled":
		var keep []string
		for _, l := range labels {
			if !strings.EqualFold(l, "poc") {
				keep = append(keep, l)
			}
		}
		gh.SetLabels(e.Repo, e.Number, keep...)
	case "closed":
		st.closed = true
		gh.SetIssueState(e.Repo, e.Number, false, false)
	case "merged":
		if !st.merged {
			st.closed, st.merged = true, true
			gh.SetIssueState(e.Repo, e.Number, false, true)
		}
	case "reopened":
		if !st.merged {
			st.closed = false
			gh.SetIssueState(e.Repo, e.Number, true, false)
		}
	}
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// payload builds the webhook payload GitHub would send for e, posting the comment first for a
// comment event. It returns the payload, the event name, the repository and the comment id.
func (h *history) payload(e Event) (payload []byte, name, repo string, commentID int64) {
	gh := h.w.GitHub
	repo = e.Repo
	if repo == "" {
		repo = Repos()[0].Name
	}
	owner, rname, _ := strings.Cut(repo, "/")
	repository := map[string]any{"name": rname, "full_name": repo, "owner": map[string]any{"login": owner}, "default_branch": "main"}
	installation := map[string]any{"id": gh.InstallationID(repo)}
	// sender.id is the account's id in the stand-in: the bot binds the requester to it and asks
	// GitHub for the login behind it (issue 11 hole 3).
	var sender map[string]any
	if e.User == BotUser {
		gh.AddUser(gh.BotLogin())
		sender = map[string]any{"login": gh.BotLogin(), "type": "Bot", "id": gh.UserID(gh.BotLogin())}
	} else {
		gh.AddUser(e.User)
		sender = map[string]any{"login": e.User, "type": "User", "id": gh.UserID(e.User)}
	}
	labels := func(n int) []any {
		var out []any
		for _, l := range gh.Labels(repo, n) {
			out = append(out, map[string]any{"name": l})
		}
		return out
	}
	switch e.Kind {
	case KindComment:
		st := h.state(repo, e.Number)
		action := "created"
		k := key(repo, e.Number) + "/" + e.User
		h.mu.Lock()
		last := h.lastBy[k]
		h.mu.Unlock()
		if e.Edit && last != 0 {
			action, commentID = "edited", last
		} else {
			author := e.User
			if author == BotUser {
				author = gh.BotLogin()
			}
			commentID = gh.AddComment(repo, e.Number, author, e.Body)
			h.mu.Lock()
			h.lastBy[k] = commentID
			h.mu.Unlock()
		}
		issue := map[string]any{"number": e.Number, "state": openClosed(st.closed), "labels": labels(e.Number),
			"user": map[string]any{"login": "ada", "type": "User"}, "html_url": "https://github.com/" + repo + "/issues/" + strconv.Itoa(e.Number)}
		if st.isPR {
			issue["pull_request"] = map[string]any{"url": "https://api.github.com/repos/" + repo + "/pulls/" + strconv.Itoa(e.Number)}
		}
		return jsonBytes(map[string]any{"action": action, "issue": issue,
			"comment":    map[string]any{"id": commentID, "body": e.Body, "user": sender},
			"repository": repository, "sender": sender, "installation": installation}), "issue_comment", repo, commentID
	case KindPR:
		st := h.state(repo, e.Number)
		action := e.Action
		if action == "merged" {
			action = "closed"
		}
		head := repo
		if st.fork {
			head = "mallory/" + rname
		}
		pr := map[string]any{"number": e.Number, "state": openClosed(st.closed), "merged": st.merged, "draft": st.draft,
			"labels": labels(e.Number),
			"head":   map[string]any{"sha": "0123456789abcdef0123456789abcdef01234567", "repo": map[string]any{"full_name": head}},
			"base":   map[string]any{"repo": map[string]any{"full_name": repo}}}
		p := map[string]any{"action": action, "number": e.Number, "pull_request": pr, "repository": repository,
			"sender": sender, "installation": installation}
		if action == "labeled" || action == "unlabeled" {
			p["label"] = map[string]any{"name": "poc"}
		}
		return jsonBytes(p), "pull_request_target", repo, 0
	default: // KindSchedule
		return jsonBytes(map[string]any{"schedule": "7,37 * * * *", "workflow": ".github/workflows/poc.yml",
			"repository": repository, "installation": installation}), "schedule", repo, 0
	}
}

func openClosed(closed bool) string {
	if closed {
		return "closed"
	}
	return "open"
}
