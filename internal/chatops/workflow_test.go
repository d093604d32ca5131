package chatops

import (
	"os"
	"slices"
	"testing"

	yaml "go.yaml.in/yaml/v4"

	"github.com/pocbot/pocbot/internal/github"
)

// The workflows that run the bot: the repository's own, and the one users copy.
var workflowFiles = []string{"../../.github/workflows/poc.yml", "../../deploy/workflow/poc.yml"}

// TestWorkflowsSubscribeEveryHandledAction parses each workflow and checks that GitHub will start
// a run for every pull-request action the handler acts on: an action the code handles but the
// workflow does not subscribe to never reaches the bot (GitHub runs pull_request_target only for
// the listed types; see "Events that trigger workflows", pull_request_target activity types).
func TestWorkflowsSubscribeEveryHandledAction(t *testing.T) {
	for _, path := range workflowFiles {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var wf struct {
				On map[string]yaml.Node `yaml:"on"` // schedule is a list, workflow_dispatch a map
			}
			if err := yaml.Unmarshal(b, &wf); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for event, handled := range map[string][]string{
				"pull_request_target": PRActions,
				"issue_comment":       CommentActions,
				"repository_dispatch": github.RequestTypes,
			} {
				node, ok := wf.On[event]
				if !ok {
					t.Errorf("%s does not subscribe to %s", path, event)
					continue
				}
				var trig struct {
					Types []string `yaml:"types"`
				}
				if err := node.Decode(&trig); err != nil {
					t.Fatalf("%s: on.%s: %v", path, event, err)
				}
				if len(trig.Types) == 0 {
					// No types: GitHub's default set (opened, synchronize, reopened for pull
					// requests) — never what the bot needs; the list must be explicit.
					t.Errorf("%s: %s has no explicit types", path, event)
					continue
				}
				for _, a := range handled {
					if !slices.Contains(trig.Types, a) {
						t.Errorf("%s: %s types %v lack %q, which the bot handles", path, event, trig.Types, a)
					}
				}
			}
		})
	}
}
