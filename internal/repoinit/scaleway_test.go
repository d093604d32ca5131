package repoinit

import (
	"testing"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

const (
	testOrg     = "11111111-2222-4333-8444-555555555555"
	testProject = "11111111-2222-4333-8444-555555555555"
)

// With an administrator's credentials, init makes the bot's and the presigning identities and
// writes their keys; a rerun makes nothing; a lost secret gets a new pair and no stray key.
func TestInitMakesScalewayIdentities(t *testing.T) {
	emu := scwsim.New(scwsim.Options{SecretKey: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"})
	url, stop, err := emu.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	admin, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWADMINADMINADMIN00", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "acme/shop")
	delete(f.cfg.Values, "SCW_ACCESS_KEY")
	delete(f.cfg.Values, "SCW_SECRET_KEY")
	f.cfg.IAM = &IAM{Client: admin, ProjectID: testProject, OrganizationID: testOrg}
	api := iam.NewAPI(admin)
	count := func() (apps, keys int) {
		a, err := api.ListApplications(&iam.ListApplicationsRequest{}, scw.WithAllPages())
		if err != nil {
			t.Fatal(err)
		}
		k, err := api.ListAPIKeys(&iam.ListAPIKeysRequest{}, scw.WithAllPages())
		if err != nil {
			t.Fatal(err)
		}
		return len(a.Applications), len(k.APIKeys)
	}
	_, out, err := f.run(t, nil)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if apps, keys := count(); apps != 2 || keys != 2 {
		t.Fatalf("%d applications, %d keys; want pocbot and pocbot-presign with one key each\n%s", apps, keys, out)
	}
	secret, _ := f.gh.Secret("acme/shop", "poc", "SCW_SECRET_KEY")
	access, _ := f.gh.Secret("acme/shop", "poc", "SCW_ACCESS_KEY")
	noSecretIn(t, out, f.cfg, secret)
	bot, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth(access, secret), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	// The key does what the bot does: the project's resources, and the organization's quotas
	// (OrganizationReadOnly, scoped by organization: the pre-flight's read).
	if _, err := instance.NewAPI(bot).ListServers(&instance.ListServersRequest{Zone: scw.ZoneFrPar1, Project: scw.StringPtr(testProject)}); err != nil {
		t.Fatalf("the key written to the secrets does not list the project's servers: %v", err)
	}
	if _, err := iam.NewAPI(bot).ListQuota(&iam.ListQuotaRequest{OrganizationID: testOrg}); err != nil {
		t.Fatalf("the key written to the secrets does not read the organization's quotas: %v", err)
	}
	if p, _ := f.gh.Secret("acme/shop", "poc", "POC_PRESIGN_SECRET_KEY"); p == "" {
		t.Error("no presigning key written")
	}

	if _, out, err := f.run(t, nil); err != nil {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if apps, keys := count(); apps != 2 || keys != 2 {
		t.Errorf("the second init made identities: %d applications, %d keys", apps, keys)
	}

	f.gh.DeleteSecret("acme/shop", "poc", "SCW_SECRET_KEY")
	if _, out, err := f.run(t, nil); err != nil {
		t.Fatalf("init after the secret was lost: %v\n%s", err, out)
	}
	if apps, keys := count(); apps != 2 || keys != 2 {
		t.Errorf("after a new pair: %d applications, %d keys; want the old key gone", apps, keys)
	}
	if a2, _ := f.gh.Secret("acme/shop", "poc", "SCW_ACCESS_KEY"); a2 == access {
		t.Error("the access key secret was not replaced with the new pair's")
	}
}
