package github

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"testing"

	gh "github.com/google/go-github/v88/github"
	"golang.org/x/crypto/nacl/box"
)

// go-github v88 reaches environment secrets by the repository's id
// (/repositories/{id}/environments/{e}/secrets); pocbot's own requests use the name-based path.
// Both reach the same secrets; an unknown id is 404.
func TestEnvironmentSecretsByRepositoryID(t *testing.T) {
	s, base := start(t)
	s.AddRepo("acme/shop", "main")
	s.SetPermission("acme/shop", "ada", "admin")
	root := base + "/"
	c, err := gh.NewClient(gh.WithAuthToken(s.AddUserToken("ada")), gh.WithURLs(&root, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	repo, _, err := c.Repositories.Get(ctx, "acme", "shop")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Repositories.CreateUpdateEnvironment(ctx, "acme", "shop", "poc", nil); err != nil {
		t.Fatal(err)
	}
	id := int(repo.GetID())
	key, _, err := c.Actions.GetEnvPublicKey(ctx, id, "poc")
	if err != nil {
		t.Fatalf("GET /repositories/%d/environments/poc/secrets/public-key: %v", id, err)
	}
	raw, err := base64.StdEncoding.DecodeString(key.GetKey())
	if err != nil || len(raw) != 32 {
		t.Fatalf("public key %q: %v", key.GetKey(), err)
	}
	sealed, err := box.SealAnonymous(nil, []byte("s3cr3t"), (*[32]byte)(raw), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Actions.CreateOrUpdateEnvSecret(ctx, id, "poc", &gh.EncryptedSecret{Name: "POC_X", KeyID: key.GetKeyID(), EncryptedValue: base64.StdEncoding.EncodeToString(sealed)}); err != nil {
		t.Fatalf("PUT by id: %v", err)
	}
	if v, ok := s.Secret("acme/shop", "poc", "POC_X"); !ok || v != "s3cr3t" {
		t.Errorf("the secret written by id reads %q (set %v)", v, ok)
	}
	list, _, err := c.Actions.ListEnvSecrets(ctx, id, "poc", nil)
	if err != nil || list.TotalCount != 1 || list.Secrets[0].Name != "POC_X" {
		t.Fatalf("list by id: %+v, %v", list, err)
	}
	req, err := c.NewRequest(ctx, http.MethodGet, "repos/acme/shop/environments/poc/secrets", nil)
	if err != nil {
		t.Fatal(err)
	}
	var byName gh.Secrets
	if _, err := c.Do(req, &byName); err != nil || byName.TotalCount != 1 {
		t.Errorf("list by name: %+v, %v", byName, err)
	}
	if _, err := c.Actions.DeleteEnvSecret(ctx, id, "poc", "POC_X"); err != nil {
		t.Fatalf("DELETE by id: %v", err)
	}
	if _, ok := s.Secret("acme/shop", "poc", "POC_X"); ok {
		t.Error("the secret deleted by id is still there")
	}
	if _, resp, err := c.Actions.ListEnvSecrets(ctx, id+1000, "poc", nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown repository id: %v, want 404", err)
	}
}
