package doctor

import (
	"strings"
	"testing"

	"github.com/scaleway/scaleway-sdk-go/scw"

	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// A key whose application lacks the organization-scoped quota read is a warning whose fix names
// the policy as `bot init --iam` names it: the key's own application's name (found by its id)
// and "-organization", not a fixed name that another project's application may hold.
func TestIAMNamesTheOrganizationPolicyAfterTheKeysApplication(t *testing.T) {
	const secret, project = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "11111111-2222-4333-8444-555555555555"
	emu := scwsim.New(scwsim.Options{SecretKey: secret})
	url, stop, err := emu.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	app := "pocbot-" + project
	emu.AddAPIKey("SCWBOTBOTBOTBOTBOT00", "bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee", app, project, provscw.PermissionSetNames()...)
	admin, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWADMINADMINADMIN00", secret))
	if err != nil {
		t.Fatal(err)
	}
	items := IAM(admin, "SCWBOTBOTBOTBOTBOT00", project)(t.Context())
	var got *Item
	for i := range items {
		if items[i].Name == "IAM permissions" {
			got = &items[i]
		}
	}
	if got == nil || got.Status != Warn || !strings.Contains(got.Detail, "OrganizationReadOnly") {
		t.Fatalf("items %+v: want a warning naming OrganizationReadOnly", items)
	}
	if !strings.Contains(got.Fix, "name="+app+"-organization ") {
		t.Errorf("the fix does not name the policy %s-organization: %s", app, got.Fix)
	}
}
