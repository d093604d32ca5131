package main

import (
	"io"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/statestore"
)

// TestOperatorRequestStaysInItsRepository: run from a repository's workflow (GITHUB_REPOSITORY
// set), an operator command refuses another repository's cluster; run by hand, it does not check.
func TestOperatorRequestStaysInItsRepository(t *testing.T) {
	env := map[string]string{"GITHUB_REPOSITORY": "acme/web", "GITHUB_ACTOR": "alice"}
	a := newApp(nil, io.Discard, func(k string) string { return env[k] })
	req := a.request("acme-shop-42", "down", &opsWorld{bucketName: "images"}, nil)
	if req.RequestedBy != "alice" || req.Repository != "acme/web" {
		t.Errorf("request = %+v, want alice from acme/web", req)
	}
	for _, tc := range []struct {
		owner string
		ok    bool
	}{{"acme/shop", false}, {"ACME/Web", true}, {"", true}} {
		err := req.Precondition(statestore.Header{Cluster: "acme-shop-42", Repository: tc.owner})
		if (err == nil) != tc.ok {
			t.Errorf("cluster of %q: %v, want ok=%v", tc.owner, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "acme/shop") {
			t.Errorf("refusal does not name the owner: %v", err)
		}
	}
	delete(env, "GITHUB_REPOSITORY")
	if req := a.request("acme-shop-42", "down", &opsWorld{}, nil); req.Precondition != nil {
		t.Error("by hand (no GITHUB_REPOSITORY), no repository check is expected")
	}
}
