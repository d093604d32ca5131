package chatops_test

import (
	"encoding/pem"
	"testing"
	"time"

	"github.com/pocbot/pocbot/internal/commands"
	"github.com/pocbot/pocbot/internal/provision/cluster"
	"github.com/pocbot/pocbot/internal/provision/talos"
	"github.com/pocbot/pocbot/internal/settings"
)

// service_account_key in .github/poc.yml chooses the key a new cluster's tokens are signed with;
// a cluster keeps its key when the setting changes later (a second up converges, refuses nothing).
func TestServiceAccountKeySetting(t *testing.T) {
	t.Parallel()
	const repo = "acme/sakey"
	h, ctx := scene{repo: repo, users: []string{"alice:admin"}, issues: []int{1}, config: "service_account_key: ecdsa\n", timeout: 2 * time.Minute}.open(t)
	gh := h.gh
	name := commands.ClusterName("acme", "sakey", 1)

	keyType := func() (settings.ServiceAccountKey, string) {
		t.Helper()
		_, st, err := h.backend.Ops.Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := talos.LoadSecrets(st.Secrets[cluster.SecretTalos])
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b.Certs.K8sServiceAccount.Key)
		if blk == nil {
			t.Fatal("the service-account key is not PEM")
		}
		return st.Spec.ServiceAccountKey, blk.Type
	}

	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("up: outcome %+v, err %v", out, err)
	}
	if spec, pemType := keyType(); spec != settings.ServiceAccountKeyECDSA || pemType != "EC PRIVATE KEY" {
		t.Fatalf("service_account_key: ecdsa made spec %q with a %s", spec, pemType)
	}

	gh.SetFile(repo, "", ".github/poc.yml", []byte("service_account_key: rsa\n"))
	if out, err := h.handle(ctx, h.comment(repo, 1, false, "alice", "/poc up")); err != nil || !out.OK {
		t.Fatalf("second up after the setting changed: outcome %+v, err %v", out, err)
	}
	if spec, pemType := keyType(); spec != settings.ServiceAccountKeyECDSA || pemType != "EC PRIVATE KEY" {
		t.Errorf("the existing cluster's key changed with the setting: spec %q, %s", spec, pemType)
	}
}
