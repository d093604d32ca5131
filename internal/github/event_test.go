package github

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeEvent(t *testing.T) {
	t.Parallel()
	commented := time.Date(2026, 10, 17, 9, 12, 0, 0, time.UTC) // the fixtures' comment.created_at
	tests := []struct {
		file, name string
		want       Event
		ignored    bool
	}{
		{file: "issue_comment_created.json", name: "issue_comment", want: Event{
			Name: "issue_comment", Kind: KindComment, Action: "created", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 42, CommentID: 987654321, Body: "/poc up --ttl 4h\r\n", Sender: "alice", SenderID: 1001, InstallationID: 31337,
			Labels: []string{"poc", "poc/keep"}, IssueState: "open", Created: commented}},
		{file: "issue_comment_pr.json", name: "issue_comment", want: Event{
			Name: "issue_comment", Kind: KindComment, Action: "created", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 7, IsPR: true, CommentID: 987654321, Body: "/poc down", Sender: "alice", SenderID: 1001, InstallationID: 31337,
			IssueState: "open", Created: commented}},
		{file: "issue_comment_closed_issue.json", name: "issue_comment", want: Event{
			Name: "issue_comment", Kind: KindComment, Action: "created", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 42, CommentID: 987654321, Body: "/poc up --ttl 4h\r\n", Sender: "alice", SenderID: 1001, InstallationID: 31337,
			Labels: []string{"poc", "poc/keep"}, IssueState: "closed", Created: commented}},
		{file: "issue_comment_edited.json", name: "issue_comment", ignored: true},
		{file: "issue_comment_bot.json", name: "issue_comment", ignored: true},
		{file: "pull_request_labeled_fork.json", name: "pull_request", want: Event{
			Name: "pull_request", Kind: KindPullRequest, Action: "labeled", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 7, IsPR: true, Sender: "bob", SenderID: 1002, InstallationID: 31337, Labels: []string{"poc"}, Label: "poc",
			IssueState: "open", PR: PRInfo{FromFork: true, HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", HeadRepo: "mallory/web"}}},
		{file: "pull_request_labeled_fork.json", name: "pull_request_target", want: Event{
			Name: "pull_request_target", Kind: KindPullRequest, Action: "labeled", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 7, IsPR: true, Sender: "bob", SenderID: 1002, InstallationID: 31337, Labels: []string{"poc"}, Label: "poc",
			IssueState: "open", PR: PRInfo{FromFork: true, HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", HeadRepo: "mallory/web"}}},
		{file: "pull_request_target_closed_merged.json", name: "pull_request_target", want: Event{
			Name: "pull_request_target", Kind: KindPullRequest, Action: "closed", Owner: "acme", Repo: "web", RepoID: 555001,
			Number: 7, IsPR: true, Sender: "alice", SenderID: 1001, InstallationID: 31337, Labels: []string{"poc"},
			IssueState: "closed", PR: PRInfo{Merged: true, HeadSHA: "6dcb09b5b57875f334f61aebed695e2e4193db5e", HeadRepo: "acme/web"}}},
		{file: "pull_request_opened_draft_deleted_fork_bot.json", name: "pull_request", ignored: true},
		{file: "schedule.json", name: "schedule", want: Event{Name: "schedule", Kind: KindSchedule, Schedule: "*/30 * * * *"}},
		{file: "workflow_dispatch.json", name: "workflow_dispatch", want: Event{
			Name: "workflow_dispatch", Kind: KindDispatch, Owner: "acme", Repo: "web", RepoID: 555001, Sender: "alice", SenderID: 1001,
			Inputs: map[string]string{"command": "reap", "cluster": "acme-web-42", "dry_run": "true", "ttl": "2h"}}},
		{file: "issue_comment_created.json", name: "push", ignored: true},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeEvent(tc.name, data)
			if err != nil {
				t.Fatalf("DecodeEvent: %v", err)
			}
			if tc.ignored {
				if got.Ignore == "" {
					t.Fatalf("event should be ignored: %+v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeEvent mismatch\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDecodeEventDetails(t *testing.T) {
	t.Parallel()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bot, _ := DecodeEvent("issue_comment", read("issue_comment_bot.json"))
	if !bot.SenderIsBot || !bot.FromApp("pocbot") || bot.FromApp("other") {
		t.Errorf("bot comment: SenderIsBot=%v FromApp(pocbot)=%v", bot.SenderIsBot, bot.FromApp("pocbot"))
	}
	// A deleted fork (head.repo null) counts as a fork: never provision it automatically.
	d, _ := DecodeEvent("pull_request", read("pull_request_opened_draft_deleted_fork_bot.json"))
	if !d.PR.Draft || !d.PR.FromFork || !d.SenderIsBot || d.PR.HeadRepo != "" {
		t.Errorf("draft PR from deleted fork by dependabot: %+v", d)
	}
	// A bot closing a PR must still tear down: not ignored.
	closed := strings.Replace(string(read("pull_request_target_closed_merged.json")), `"login": "alice",
    "id": 1001,
    "type": "User"`, `"login": "renovate[bot]", "id": 5, "type": "Bot"`, 1)
	c, err := DecodeEvent("pull_request_target", []byte(closed))
	if err != nil || c.Ignore != "" || !c.SenderIsBot {
		t.Errorf("bot close: ignore=%q bot=%v err=%v", c.Ignore, c.SenderIsBot, err)
	}
	for _, bad := range []struct{ name, payload string }{
		{"issue_comment", `{"action":`},
		{"issue_comment", `{"action":"created","issue":{}}`},
		{"pull_request", `{"action":"opened"}`},
		{"workflow_dispatch", `{"inputs":[1,2]}`},
	} {
		if _, err := DecodeEvent(bad.name, []byte(bad.payload)); err == nil {
			t.Errorf("DecodeEvent(%s, %s) should fail", bad.name, bad.payload)
		}
	}
}

func TestReadEvent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "event.json")
	if err := os.WriteFile(p, []byte(`{"schedule":"0 * * * *"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := ActionsEnv{EventName: "schedule", EventPath: p, Owner: "acme", Repo: "web"}
	e, err := ReadEvent(env)
	if err != nil || e.FullName() != "acme/web" || e.Kind != KindSchedule {
		t.Fatalf("ReadEvent schedule: %+v %v", e, err)
	}
	if _, err := ReadEvent(ActionsEnv{EventName: "issue_comment"}); err == nil {
		t.Fatal("issue_comment without GITHUB_EVENT_PATH should fail")
	}
	if _, err := ReadEvent(ActionsEnv{EventName: "issue_comment", EventPath: filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("missing event file should fail")
	}
}

func TestEnvFromActions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantAPI string
		wantRun string
		wantErr string
	}{
		{name: "github.com defaults", env: map[string]string{"GITHUB_REPOSITORY": "acme/web", "GITHUB_RUN_ID": "99"},
			wantAPI: DefaultAPIURL, wantRun: "https://github.com/acme/web/actions/runs/99"},
		{name: "enterprise", env: map[string]string{"GITHUB_REPOSITORY": "acme/web", "GITHUB_RUN_ID": "5",
			"GITHUB_API_URL": "https://ghe.example.com/api/v3/", "GITHUB_SERVER_URL": "https://ghe.example.com"},
			wantAPI: "https://ghe.example.com/api/v3", wantRun: "https://ghe.example.com/acme/web/actions/runs/5"},
		{name: "no run id", env: map[string]string{"GITHUB_REPOSITORY": "acme/web"}, wantAPI: DefaultAPIURL},
		{name: "missing repository", env: map[string]string{}, wantErr: "GITHUB_REPOSITORY"},
		{name: "bad repository", env: map[string]string{"GITHUB_REPOSITORY": "acme"}, wantErr: "owner/name"},
		{name: "bad api url", env: map[string]string{"GITHUB_REPOSITORY": "a/b", "GITHUB_API_URL": "ftp://x"}, wantErr: "GITHUB_API_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := EnvFromActions(func(k string) string { return tc.env[k] })
			if errorWanted(t, err, tc.wantErr) {
				return
			}
			if e.APIURL != tc.wantAPI || e.RunURL() != tc.wantRun || e.Owner != "acme" || e.Repo != "web" {
				t.Fatalf("got %+v RunURL=%q", e, e.RunURL())
			}
		})
	}
}

func TestAuthFromEnv(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "app.pem")
	if err := os.WriteFile(keyFile, []byte("-----BEGIN RSA PRIVATE KEY-----\nfile\n-----END RSA PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		env      map[string]string
		wantMode Mode
		wantKey  string
		wantErr  string
	}{
		{name: "app with PEM text", env: map[string]string{"POC_APP_ID": "12", "POC_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n", "GITHUB_TOKEN": "ignored"},
			wantMode: ModeApp, wantKey: "x"},
		{name: "app with escaped newlines", env: map[string]string{"POC_APP_ID": "12", "POC_APP_PRIVATE_KEY": `-----BEGIN RSA PRIVATE KEY-----\ny\n-----END RSA PRIVATE KEY-----`},
			wantMode: ModeApp, wantKey: "\ny\n"},
		{name: "app with key file", env: map[string]string{"POC_APP_ID": "12", "POC_APP_PRIVATE_KEY_FILE": keyFile},
			wantMode: ModeApp, wantKey: "file"},
		{name: "lesser mode", env: map[string]string{"GITHUB_TOKEN": "ghs_abc"}, wantMode: ModeToken},
		{name: "nothing", env: map[string]string{}, wantErr: "POC_APP_ID and POC_APP_PRIVATE_KEY (or POC_APP_PRIVATE_KEY_FILE) for the App, or GITHUB_TOKEN"},
		{name: "id without key", env: map[string]string{"POC_APP_ID": "12", "GITHUB_TOKEN": "t"}, wantErr: "POC_APP_PRIVATE_KEY"},
		{name: "key without id", env: map[string]string{"POC_APP_PRIVATE_KEY": "k"}, wantErr: "POC_APP_ID"},
		{name: "bad id", env: map[string]string{"POC_APP_ID": "abc", "POC_APP_PRIVATE_KEY": "k"}, wantErr: "not a GitHub App id"},
		{name: "missing key file", env: map[string]string{"POC_APP_ID": "1", "POC_APP_PRIVATE_KEY_FILE": "/nonexistent/key.pem"}, wantErr: "POC_APP_PRIVATE_KEY_FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["GITHUB_REPOSITORY"] = "acme/web"
			a, err := AuthFromEnv(func(k string) string { return tc.env[k] })
			if errorWanted(t, err, tc.wantErr) {
				return
			}
			if a.Mode() != tc.wantMode || !strings.Contains(string(a.PrivateKeyPEM), tc.wantKey) || a.Owner != "acme" || a.Repo != "web" {
				t.Fatalf("got %v key=%q", a, a.PrivateKeyPEM)
			}
			if strings.Contains(a.String(), "ghs_abc") || strings.Contains(a.String(), "PRIVATE") {
				t.Fatalf("Auth.String leaks a secret: %s", a)
			}
		})
	}
}

// errorWanted fails the test unless err mentions want, or is nil when want is "". It says whether
// an error was wanted: the case ends there.
func errorWanted(t *testing.T, err error, want string) bool {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return false
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one mentioning %q", err, want)
	}
	return true
}
