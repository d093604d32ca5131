package main

import (
	"io"
	"strings"
	"testing"

	"github.com/pocbot/pocbot/internal/clusterops"
	"github.com/pocbot/pocbot/internal/statestore"
)

// TestOperatorRequestStaysInItsRepository: run from a repository's workflow (GITHUB_REPOSITORY
// set), an operator command refuses another repository's cluster; run by hand, it does not check.
func TestOperatorRequestStaysInItsRepository(t *testing.T) {
	env := map[string]string{"GITHUB_REPOSITORY": "acme/web", "GITHUB_ACTOR": "alice"}
	a := newApp(nil, io.Discard, func(k string) string { return env[k] })
	in := a.intent("acme-shop-42", "down", &opsWorld{bucketName: "images"}, nil)
	if in.RequestedBy != "alice" || in.Repository != "acme/web" || in.Scope != "acme/web" {
		t.Errorf("intent = %+v, want alice from acme/web, confined to it", in)
	}
	for _, tc := range []struct {
		owner string
		ok    bool
	}{{"acme/shop", false}, {"ACME/Web", true}, {"", true}} {
		r := clusterops.Owned(statestore.Header{Cluster: "acme-shop-42", Repository: tc.owner}, in)
		if (r == nil) != tc.ok {
			t.Errorf("cluster of %q: %v, want ok=%v", tc.owner, r, tc.ok)
		}
		if r != nil && !strings.Contains(r.Error(), "acme/shop") {
			t.Errorf("refusal does not name the owner: %v", r)
		}
	}
	delete(env, "GITHUB_REPOSITORY")
	in = a.intent("acme-shop-42", "down", &opsWorld{}, nil)
	if r := clusterops.Owned(statestore.Header{Cluster: "acme-shop-42", Repository: "acme/shop"}, in); r != nil {
		t.Errorf("by hand (no GITHUB_REPOSITORY), no repository check is expected: %v", r)
	}
}
