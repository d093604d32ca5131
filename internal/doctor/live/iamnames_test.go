package live

import (
	"testing"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/repoinit"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

// The iam-app-names probe under each reading the stand-in plays: a name held twice settles
// duplicates; under unique the second is refused, and one of each name settles nothing; a key
// that may not read IAM leaves the row unprobed, not failed.
func TestIAMAppNamesProbe(t *testing.T) {
	const org, project = "11111111-2222-4333-8444-555555555555", "11111111-2222-4333-8444-555555555555"
	const secret = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
	for _, tc := range []struct {
		reading, want string
		skipped       bool
	}{
		{reading: "duplicates", want: "duplicates"},
		{reading: "unique", want: ""},
		{reading: "duplicates", skipped: true},
	} {
		emu := scwsim.New(scwsim.Options{SecretKey: secret, Readings: assume.Readings{assume.IAMAppNames: tc.reading}})
		url, stop, err := emu.Start(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		admin, err := scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWADMINADMINADMIN00", secret))
		if err != nil {
			t.Fatal(err)
		}
		name := repoinit.ApplicationNames(project)[0]
		for range 2 { // under unique, the second is refused
			_, _ = iam.NewAPI(admin).CreateApplication(&iam.CreateApplicationRequest{Name: name, OrganizationID: org})
		}
		client := admin
		if tc.skipped { // the bot's key as deploy/iam makes it: no IAM set
			emu.AddAPIKey("SCWBOTBOTBOTBOTBOT00", "bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee", "pocbot", project, "InstancesFullAccess")
			if client, err = scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWBOTBOTBOTBOTBOT00", "bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee")); err != nil {
				t.Fatal(err)
			}
		}
		f := iamAppNames(t.Context(), Config{Scaleway: client, Org: org, Project: project})
		if f.Err != nil || f.Reading != tc.want || (f.Skipped != "") != tc.skipped {
			t.Errorf("%s (skipped %v): found %+v, want reading %q", tc.reading, tc.skipped, f, tc.want)
		}
	}
}
