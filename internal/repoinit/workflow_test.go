package repoinit

import (
	"strings"
	"testing"

	"github.com/pocbot/pocbot/deploy"
)

// ParseWorkflow recognises every workflow init writes or docs/install.md copies, whatever the
// pin, schedule, runner and environment line, and nothing else.
func TestParseWorkflow(t *testing.T) {
	t.Parallel()
	const ref = "pocbot/pocbot@89abcdef0123456789abcdef0123456789abcdef # v1.2.4"
	for _, tc := range []struct {
		name string
		text string
		ok   bool
		want WorkflowShape
	}{
		{"init's", string(WorkflowFile(ref, true, "")), true, WorkflowShape{Ref: ref, Cron: "7 * * * *", Environment: true, Secrets: true, RunsOn: DefaultRunsOn}},
		{"init's, repository secrets, another schedule", string(WorkflowFile(ref, false, "*/20 * * * *")), true,
			WorkflowShape{Ref: ref, Cron: "*/20 * * * *", Secrets: true, RunsOn: DefaultRunsOn}},
		{"the template docs/install.md copies", deploy.Workflow, true, WorkflowShape{Ref: deploy.PlaceholderRef, Cron: "7 * * * *", Environment: true, RunsOn: DefaultRunsOn}},
		{"another runner", strings.Replace(string(WorkflowFile(ref, true, "")), "runs-on: "+DefaultRunsOn, "runs-on: [self-hosted]", 1), true,
			WorkflowShape{Ref: ref, Cron: "7 * * * *", Environment: true, Secrets: true, RunsOn: "[self-hosted]"}},
		{"a step added", strings.Replace(string(WorkflowFile(ref, true, "")), "    steps:\n", "    steps:\n      - run: env\n", 1), false, WorkflowShape{}},
		{"an event added", strings.Replace(string(WorkflowFile(ref, true, "")), "on:\n", "on:\n  push:\n", 1), false, WorkflowShape{}},
		{"CRLF", strings.ReplaceAll(string(WorkflowFile(ref, true, "")), "\n", "\r\n"), false, WorkflowShape{}},
		{"empty", "", false, WorkflowShape{}},
	} {
		got, ok := ParseWorkflow([]byte(tc.text))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// Whatever it is given, ParseWorkflow does not panic, and what it recognises renders back to the
// very bytes it was given.
func FuzzParseWorkflow(f *testing.F) {
	f.Add(string(WorkflowFile(testRef, true, "")))
	f.Add(deploy.Workflow)
	f.Add("on: push\n")
	f.Fuzz(func(t *testing.T, text string) {
		shape, ok := ParseWorkflow([]byte(text))
		if ok && string(shape.render()) != text {
			t.Fatalf("recognised as %+v, which renders otherwise", shape)
		}
	})
}
