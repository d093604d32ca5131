package scaleway

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// deploy/iam grants exactly what the driver needs (PermissionSets), the organization-scoped sets
// in a rule naming the organization: scw.sh in its pocbot policies, pocbot.tf in its rules.
func TestDeployIAMGrantsThePermissionSets(t *testing.T) {
	t.Parallel()
	want := append(PermissionSetNames(), OrganizationPermissionSetNames()...)
	slices.Sort(want)
	for file, re := range map[string]*regexp.Regexp{
		"../../../deploy/iam/scw.sh":    regexp.MustCompile(`permission-set-names\.\d+=(\w+)`),
		"../../../deploy/iam/pocbot.tf": regexp.MustCompile(`"(\w+(?:FullAccess|ReadOnly|ObjectsRead))"`),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "ObjectStorageObjectsRead" { // the presigner's
				got = append(got, m[1])
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s grants %v, the driver needs %v", file, got, want)
		}
	}
	for file, re := range map[string]*regexp.Regexp{
		"../../../deploy/iam/scw.sh":    regexp.MustCompile(`rules\.0\.organization-id="\$ORGANIZATION_ID" \\\s+rules\.0\.permission-set-names\.0=OrganizationReadOnly`),
		"../../../deploy/iam/pocbot.tf": regexp.MustCompile(`organization_id\s+= var\.organization_id\s+permission_set_names = \["OrganizationReadOnly"\]`),
	} {
		b, _ := os.ReadFile(file)
		if !re.Match(b) {
			t.Errorf("%s does not grant OrganizationReadOnly in a rule naming the organization", file)
		}
	}
}
