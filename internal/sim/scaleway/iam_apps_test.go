package scaleway

import (
	"errors"
	"testing"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// IAM applications, policies and API keys through the SDK: a created key's secret is shown once and
// then authenticates; a policy names known permission sets and one scope per rule.
func TestIAMApplicationsPoliciesKeys(t *testing.T) {
	_, c, url := startEmu(t, Options{})
	ia := iam.NewAPI(c)
	app, err := ia.CreateApplication(&iam.CreateApplicationRequest{Name: "pocbot", OrganizationID: testProject})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ia.CreatePolicy(&iam.CreatePolicyRequest{Name: "bad", ApplicationID: &app.ID,
		Rules: []*iam.RuleSpecs{{PermissionSetNames: &[]string{"InstancesAllAccess"}, ProjectIDs: &[]string{testProject}}}}); err == nil {
		t.Error("a policy with an unknown permission set was accepted")
	}
	if _, err := ia.CreatePolicy(&iam.CreatePolicyRequest{Name: "bad", ApplicationID: &app.ID,
		Rules: []*iam.RuleSpecs{{PermissionSetNames: &[]string{"InstancesFullAccess"}}}}); err == nil {
		t.Error("a rule without a scope was accepted")
	}
	p, err := ia.CreatePolicy(&iam.CreatePolicyRequest{Name: "pocbot", ApplicationID: &app.ID,
		Rules: []*iam.RuleSpecs{{PermissionSetNames: &[]string{"InstancesFullAccess", "BlockStorageFullAccess"}, ProjectIDs: &[]string{testProject}}}})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := ia.ListRules(&iam.ListRulesRequest{PolicyID: p.ID}, scw.WithAllPages())
	if err != nil || rules.TotalCount != 1 || len(*rules.Rules[0].PermissionSetNames) != 2 {
		t.Fatalf("rules: %+v, %v", rules, err)
	}
	k, err := ia.CreateAPIKey(&iam.CreateAPIKeyRequest{ApplicationID: &app.ID, DefaultProjectID: scw.StringPtr(testProject)})
	if err != nil || k.SecretKey == nil || *k.SecretKey == "" {
		t.Fatalf("api key: %+v, %v", k, err)
	}
	got, err := ia.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: k.AccessKey})
	if err != nil || got.SecretKey != nil || *got.ApplicationID != app.ID {
		t.Fatalf("get api key: %+v, %v (the secret must not be shown again)", got, err)
	}
	c2, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth(k.AccessKey, *k.SecretKey), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := instance.NewAPI(c2).ListServers(&instance.ListServersRequest{Zone: scw.ZoneFrPar1, Project: scw.StringPtr(testProject)}); err != nil {
		t.Fatalf("the new key does not authenticate: %v", err)
	}
	if err := ia.DeleteAPIKey(&iam.DeleteAPIKeyRequest{AccessKey: k.AccessKey}); err != nil {
		t.Fatal(err)
	}
	var denied *scw.DeniedAuthenticationError
	if _, err := instance.NewAPI(c2).ListServers(&instance.ListServersRequest{Zone: scw.ZoneFrPar1}); !errors.As(err, &denied) {
		t.Fatalf("a deleted key: %v, want denied_authentication", err)
	}
}
