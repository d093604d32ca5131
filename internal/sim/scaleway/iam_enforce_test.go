package scaleway

import (
	"errors"
	"testing"

	baremetal "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

const testOrg = "00000000-0000-4000-8000-0000000000aa"

// The emulator holds a key to its permission sets as Scaleway does (permission-sets.mdx): a
// project-scoped set reaches its project, an organization-scoped set (OrganizationReadOnly, the
// quotas) only from a rule scoped to the organization; the owner's key reaches everything.
func TestIAMPermissionSetsAreEnforced(t *testing.T) {
	_, owner, url := startEmu(t, Options{})
	ia := iam.NewAPI(owner)
	key := func(t *testing.T, rules ...*iam.RuleSpecs) *scw.Client {
		t.Helper()
		app, err := ia.CreateApplication(&iam.CreateApplicationRequest{Name: "k", OrganizationID: testOrg})
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) > 0 {
			if _, err := ia.CreatePolicy(&iam.CreatePolicyRequest{Name: "p", ApplicationID: &app.ID, OrganizationID: testOrg, Rules: rules}); err != nil {
				t.Fatal(err)
			}
		}
		k, err := ia.CreateAPIKey(&iam.CreateAPIKeyRequest{ApplicationID: &app.ID, DefaultProjectID: scw.StringPtr(testProject)})
		if err != nil {
			t.Fatal(err)
		}
		c, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth(k.AccessKey, *k.SecretKey), scw.WithDefaultRegion(scw.RegionFrPar), scw.WithDefaultZone(zone))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	projects := func(sets ...string) *iam.RuleSpecs {
		return &iam.RuleSpecs{PermissionSetNames: &sets, ProjectIDs: &[]string{testProject}}
	}
	org := func(sets ...string) *iam.RuleSpecs {
		return &iam.RuleSpecs{PermissionSetNames: &sets, OrganizationID: scw.StringPtr(testOrg)}
	}
	listQuota := func(c *scw.Client) error {
		_, err := iam.NewAPI(c).ListQuota(&iam.ListQuotaRequest{OrganizationID: testOrg})
		return err
	}
	listServers := func(c *scw.Client) error {
		_, err := instance.NewAPI(c).ListServers(&instance.ListServersRequest{Project: scw.StringPtr(testProject)})
		return err
	}
	otherProject := func(c *scw.Client) error {
		_, err := instance.NewAPI(c).ListServers(&instance.ListServersRequest{Project: scw.StringPtr("99999999-0000-4000-8000-000000000000")})
		return err
	}
	createIP := func(c *scw.Client) error {
		_, err := instance.NewAPI(c).CreateIP(&instance.CreateIPRequest{Project: scw.StringPtr(testProject)})
		return err
	}
	listOffers := func(c *scw.Client) error {
		_, err := baremetal.NewAPI(c).ListOffers(&baremetal.ListOffersRequest{})
		return err
	}
	bot := []string{"InstancesFullAccess", "BlockStorageFullAccess", "ElasticMetalFullAccess", "SSHKeysFullAccess", "DomainsDNSFullAccess", "ObjectStorageFullAccess"}
	for _, tc := range []struct {
		name  string
		rules []*iam.RuleSpecs
		call  func(*scw.Client) error
		ok    bool
	}{
		{"the bot's project sets list the project's servers", []*iam.RuleSpecs{projects(bot...)}, listServers, true},
		{"and create in it", []*iam.RuleSpecs{projects(bot...)}, createIP, true},
		{"but not in another project", []*iam.RuleSpecs{projects(bot...)}, otherProject, false},
		{"nor read the organization's quotas", []*iam.RuleSpecs{projects(bot...)}, listQuota, false},
		{"OrganizationReadOnly on the organization reads them", []*iam.RuleSpecs{projects(bot...), org("OrganizationReadOnly")}, listQuota, true},
		{"a read-only set reads", []*iam.RuleSpecs{projects("InstancesReadOnly")}, listServers, true},
		{"and does not write", []*iam.RuleSpecs{projects("InstancesReadOnly")}, createIP, false},
		{"an organization-scoped product set reaches every project", []*iam.RuleSpecs{org("AllProductsFullAccess")}, otherProject, true},
		{"a set of another product grants nothing here", []*iam.RuleSpecs{projects("InstancesFullAccess")}, listOffers, false},
		{"a key without policy may do nothing", nil, listServers, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(key(t, tc.rules...))
			var denied *scw.PermissionsDeniedError
			switch {
			case tc.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.ok && !errors.As(err, &denied):
				t.Fatalf("got %v, want permissions_denied", err)
			}
		})
	}
	if err := listQuota(owner); err != nil {
		t.Errorf("the owner's key: %v", err)
	}
	// A set scoped by organization cannot be given to projects (the stricter reading).
	app, _ := ia.CreateApplication(&iam.CreateApplicationRequest{Name: "x", OrganizationID: testOrg})
	if _, err := ia.CreatePolicy(&iam.CreatePolicyRequest{Name: "bad", ApplicationID: &app.ID,
		Rules: []*iam.RuleSpecs{projects("OrganizationReadOnly")}}); err == nil {
		t.Error("OrganizationReadOnly scoped to a project was accepted")
	}
}
