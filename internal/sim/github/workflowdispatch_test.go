package github

import (
	"net/http"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
)

// POST …/actions/workflows/{file}/dispatches as go-github v88 sends it: 204 and recorded; 200
// with the run's details when asked; refused without actions: write (403), without a ref, to a
// workflow without the trigger, with an undeclared input or a choice outside its options (422),
// and to a file the ref does not have (404). Nothing refused is recorded.
func TestWorkflowDispatch(t *testing.T) {
	const wf = `on:
  issue_comment:
  workflow_dispatch:
    inputs:
      command:
        type: choice
        options: [reap, pool]
      cluster:
        type: string
`
	client := func(t *testing.T, opts Options) (*Server, *gh.Client) {
		s, base := startWith(t, opts)
		inst := s.AddRepo("acme/shop", "main")
		s.SetFile("acme/shop", "", ".github/workflows/poc.yml", []byte(wf))
		s.SetFile("acme/shop", "", ".github/workflows/ci.yml", []byte("on: [push]\n"))
		tr, err := ghinstallation.New(http.DefaultTransport, s.AppID(), inst, s.AppPrivateKeyPEM())
		if err != nil {
			t.Fatal(err)
		}
		tr.BaseURL = base
		root := base + "/"
		c, err := gh.NewClient(gh.WithTransport(tr), gh.WithURLs(&root, nil))
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	s, c := client(t, Options{})
	ctx := t.Context()
	send := func(file string, req gh.CreateWorkflowDispatchEventRequest) (*gh.WorkflowDispatchRunDetails, int) {
		d, resp, _ := c.Actions.CreateWorkflowDispatchEventByFileName(ctx, "acme", "shop", file, req)
		if resp == nil {
			return d, 0
		}
		return d, resp.StatusCode
	}
	if _, code := send("poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"command": "pool"}}); code != http.StatusNoContent {
		t.Fatalf("dispatch: %d, want 204", code)
	}
	d, code := send("poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main", ReturnRunDetails: gh.Ptr(true)})
	if code != http.StatusOK || d.GetWorkflowRunID() == 0 || d.GetRunURL() == "" || d.GetHTMLURL() == "" {
		t.Fatalf("dispatch with run details: %d %+v, want 200 with every field", code, d)
	}
	for _, tc := range []struct {
		name string
		file string
		req  gh.CreateWorkflowDispatchEventRequest
		want int
	}{
		{"no ref", "poc.yml", gh.CreateWorkflowDispatchEventRequest{}, http.StatusUnprocessableEntity},
		{"unknown ref", "poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "nope"}, http.StatusUnprocessableEntity},
		{"no such workflow", "none.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main"}, http.StatusNotFound},
		{"no workflow_dispatch trigger", "ci.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main"}, http.StatusUnprocessableEntity},
		{"undeclared input", "poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"x": "1"}}, http.StatusUnprocessableEntity},
		{"choice outside its options", "poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main", Inputs: map[string]any{"command": "down"}}, http.StatusUnprocessableEntity},
	} {
		if _, code := send(tc.file, tc.req); code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, code, tc.want)
		}
	}
	if n := len(s.WorkflowDispatches()); n != 2 {
		t.Errorf("%d dispatches recorded, want the 2 accepted", n)
	}
	// An installation granted actions: read only.
	s2, c2 := client(t, Options{Grant: map[string]string{"issues": "write", "metadata": "read", "contents": "read", "actions": "read"}})
	if _, resp, _ := c2.Actions.CreateWorkflowDispatchEventByFileName(ctx, "acme", "shop", "poc.yml", gh.CreateWorkflowDispatchEventRequest{Ref: "main"}); resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("dispatch with actions: read: %v, want 403", resp)
	}
	if len(s2.WorkflowDispatches()) != 0 {
		t.Error("a refused dispatch was recorded")
	}
}
