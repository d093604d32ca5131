package github

import (
	"encoding/json"
	"strconv"
	"strings"
)

// CommentPayload is an issue_comment "created" event of GitHub's shape, as a workflow receives it
// in GITHUB_EVENT_PATH (the fields the bot reads).
func CommentPayload(repo string, number int, commentID int64, login string, userID int64, body string, installation int64) []byte {
	owner, name, _ := strings.Cut(repo, "/")
	user := map[string]any{"login": login, "id": userID, "type": "User"}
	p := map[string]any{
		"action": "created",
		"issue": map[string]any{"number": number, "state": "open", "labels": []any{}, "user": map[string]any{"login": "alice", "type": "User"},
			"html_url": "https://github.com/" + repo + "/issues/" + strconv.Itoa(number)},
		"comment":      map[string]any{"id": commentID, "body": body, "user": user},
		"repository":   map[string]any{"name": name, "full_name": repo, "owner": map[string]any{"login": owner}, "default_branch": "main"},
		"sender":       user,
		"installation": map[string]any{"id": installation},
	}
	b, _ := json.Marshal(p) // maps of strings and numbers always marshal
	return b
}
