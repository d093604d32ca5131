package repoinit

import (
	"strings"
	"testing"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/assume"
	ghsim "github.com/pocbot/pocbot/internal/sim/github"
	scwsim "github.com/pocbot/pocbot/internal/sim/scaleway"
)

const (
	testOrg     = "11111111-2222-4333-8444-555555555555"
	testProject = "11111111-2222-4333-8444-555555555555"
)

// startIAM serves the Scaleway stand-in until the test ends, with a client of an administrator's.
func startIAM(t *testing.T) (emu *scwsim.Emulator, admin *scw.Client, url string) {
	t.Helper()
	return startIAMReading(t, nil)
}

// startIAMReading is startIAM with the stand-in playing rs (register rows).
func startIAMReading(t *testing.T, rs assume.Readings) (emu *scwsim.Emulator, admin *scw.Client, url string) {
	t.Helper()
	emu = scwsim.New(scwsim.Options{SecretKey: "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", Readings: rs})
	url, stop, err := emu.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	admin, err = scw.NewClient(scw.WithAPIURL(url), scw.WithAuth("SCWADMINADMINADMIN00", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"), scw.WithDefaultRegion(scw.RegionFrPar))
	if err != nil {
		t.Fatal(err)
	}
	return emu, admin, url
}

// With an administrator's credentials, init makes the bot's and the presigning identities and
// writes their keys; a rerun makes nothing; a lost secret gets a new pair and no stray key.
func TestInitMakesScalewayIdentities(t *testing.T) {
	t.Parallel()
	_, admin, url := startIAM(t)
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

// Two projects of one organization each get their own identities; a second repository of a
// project shares its project's. uninstall --iam deletes a repository's key, and an application
// only when no other repository or project uses it. Failed on the old code: the second project's
// key was minted on the first project's application (whose policy covers the first project only),
// and uninstall --iam in the second project deleted the first project's application and key.
func TestIAMIdentitiesArePerProject(t *testing.T) {
	t.Parallel()
	_, admin, _ := startIAM(t)
	const p1, p2 = "11111111-2222-4333-8444-000000000001", "11111111-2222-4333-8444-000000000002"
	f := newFixture(t, "acme/shop")
	// Three inits and three uninstalls by one admin within seconds pass GitHub's 80 writes a
	// minute: not what this test is about.
	f.gh.SetContentLimit(ghsim.ContentLimit{Disabled: true})
	for _, r := range []string{"acme/api", "acme/web"} {
		f.gh.AddRepo(r, "main")
		f.gh.SetPermission(r, "ada", "admin")
	}
	in := func(repo, project string) func(*Config) {
		return func(c *Config) {
			c.Repo = repo
			delete(c.Values, "SCW_ACCESS_KEY")
			delete(c.Values, "SCW_SECRET_KEY")
			c.IAM = &IAM{Client: admin, ProjectID: project, OrganizationID: testOrg}
		}
	}
	api := iam.NewAPI(admin)
	authenticates := func(repo string) bool {
		access, _ := f.gh.Secret(repo, "poc", "SCW_ACCESS_KEY")
		_, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: access})
		return err == nil
	}
	appOf := func(repo string) *iam.Application {
		access, _ := f.gh.Secret(repo, "poc", "SCW_ACCESS_KEY")
		k, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: access})
		if err != nil || k.ApplicationID == nil {
			t.Fatalf("the key of %s: %v", repo, err)
		}
		a, err := api.GetApplication(&iam.GetApplicationRequest{ApplicationID: *k.ApplicationID})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, step := range []struct{ repo, project string }{{"acme/shop", p1}, {"acme/api", p2}, {"acme/web", p1}} {
		if _, out, err := f.run(t, in(step.repo, step.project)); err != nil {
			t.Fatalf("init --iam %s in project %s: %v\n%s", step.repo, step.project, err, out)
		}
	}
	shop, apiApp, web := appOf("acme/shop"), appOf("acme/api"), appOf("acme/web")
	if shop.ID == apiApp.ID {
		t.Fatalf("the second project's key was minted on the first project's application %s", shop.Name)
	}
	if shop.ID != web.ID {
		t.Errorf("two repositories of one project got two applications: %s, %s", shop.Name, web.Name)
	}
	// The second project's key holds its permissions on the second project.
	pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{apiApp.ID}}, scw.WithAllPages())
	if err != nil || len(pols.Policies) == 0 {
		t.Fatalf("policies of %s: %v", apiApp.Name, err)
	}
	rules, err := api.ListRules(&iam.ListRulesRequest{PolicyID: pols.Policies[0].ID}, scw.WithAllPages())
	if err != nil || len(rules.Rules) == 0 || rules.Rules[0].ProjectIDs == nil || (*rules.Rules[0].ProjectIDs)[0] != p2 {
		t.Fatalf("the rules of %s: %+v, %v; want project %s", apiApp.Name, rules, err, p2)
	}

	uninstall := func(repo, project string) string {
		t.Helper()
		var out strings.Builder
		if _, err := Uninstall(t.Context(), UninstallConfig{Repo: repo, APIURL: f.url, Token: f.token, AppKey: f.cfg.AppKey, Out: &out,
			IAM: &IAM{Client: admin, ProjectID: project, OrganizationID: testOrg}}); err != nil {
			t.Fatalf("uninstall --iam %s: %v\n%s", repo, err, out.String())
		}
		return out.String()
	}
	// The second project's uninstall leaves the first project's identities and keys.
	out := uninstall("acme/api", p2)
	if !authenticates("acme/shop") || !authenticates("acme/web") {
		t.Fatalf("uninstall --iam in the second project deleted the first project's keys:\n%s", out)
	}
	if _, err := api.GetApplication(&iam.GetApplicationRequest{ApplicationID: apiApp.ID}); err == nil {
		t.Errorf("the second project's application %s stayed:\n%s", apiApp.Name, out)
	}
	// acme/web's uninstall deletes its key only: acme/shop still uses the application.
	out = uninstall("acme/web", p1)
	if !authenticates("acme/shop") || !strings.Contains(out, "kept: other keys still use it") {
		t.Fatalf("uninstall --iam of acme/web took acme/shop's application or key:\n%s", out)
	}
	if access, _ := f.gh.Secret("acme/web", "poc", "SCW_ACCESS_KEY"); access != "" {
		t.Errorf("acme/web's secret stayed")
	}
	out = uninstall("acme/shop", p1)
	if a, err := api.ListApplications(&iam.ListApplicationsRequest{}, scw.WithAllPages()); err != nil || len(a.Applications) != 0 {
		t.Errorf("after the last uninstall: %d applications left, %v\n%s", len(a.Applications), err, out)
	}
}

// An application of the project's name whose policy does not grant the bot's permission sets on
// the project gets no key: init refuses and names what is missing, and creates nothing.
func TestInitMintsNoKeyOnAnApplicationWhosePolicyFallsShort(t *testing.T) {
	t.Parallel()
	emu, admin, _ := startIAM(t)
	emu.AddAPIKey("SCWOTHEROTHEROTHER00", "bbbbbbbb-bbbb-4ccc-8ddd-eeeeeeeeeeee", identities[0].appName(testProject), testProject, "InstancesReadOnly")
	f := newFixture(t, "acme/shop")
	delete(f.cfg.Values, "SCW_ACCESS_KEY")
	delete(f.cfg.Values, "SCW_SECRET_KEY")
	f.cfg.IAM = &IAM{Client: admin, ProjectID: testProject, OrganizationID: testOrg}
	_, out, err := f.run(t, nil)
	if err == nil || !strings.Contains(err.Error(), "do not grant") || !strings.Contains(err.Error(), "InstancesFullAccess") {
		t.Fatalf("init on an application whose policy falls short: %v\n%s", err, out)
	}
	keys, err := iam.NewAPI(admin).ListAPIKeys(&iam.ListAPIKeysRequest{}, scw.WithAllPages())
	if err != nil || len(keys.APIKeys) != 1 {
		t.Errorf("keys after the refusal: %d (want the one there before), %v", len(keys.APIKeys), err)
	}
}

// An application of the project's name that serves another project of the organization is never
// taken for the project's, whether the organization lets two applications share a name or not
// (register row iam-app-names). duplicates: init makes its own of that name, gives it the
// organization-scoped quota read in a policy named after it, and finds it again by the id its
// record names. unique: init makes nothing, names the application that holds the name and what
// to do.
func TestInitUnderEveryIAMAppNamesReading(t *testing.T) {
	t.Parallel()
	const other = "11111111-2222-4333-8444-000000000009"
	for _, reading := range assume.MustLookup(assume.IAMAppNames).Values() {
		t.Run(reading, func(t *testing.T) {
			_, admin, _ := startIAMReading(t, assume.Readings{assume.IAMAppNames: reading})
			api := iam.NewAPI(admin)
			name := identities[0].appName(testProject)
			foreign, err := api.CreateApplication(&iam.CreateApplicationRequest{Name: name, OrganizationID: testOrg})
			if err != nil {
				t.Fatal(err)
			}
			sets := []string{"InstancesFullAccess"}
			if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: "theirs", ApplicationID: &foreign.ID, OrganizationID: testOrg,
				Rules: []*iam.RuleSpecs{{PermissionSetNames: &sets, ProjectIDs: &[]string{other}}}}); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, "acme/shop")
			delete(f.cfg.Values, "SCW_ACCESS_KEY")
			delete(f.cfg.Values, "SCW_SECRET_KEY")
			f.cfg.IAM = &IAM{Client: admin, ProjectID: testProject, OrganizationID: testOrg}
			_, out, err := f.run(t, nil)
			named := func() []*iam.Application {
				l, lerr := api.ListApplications(&iam.ListApplicationsRequest{Name: &name, OrganizationID: testOrg}, scw.WithAllPages())
				if lerr != nil {
					t.Fatal(lerr)
				}
				return l.Applications
			}
			foreignPolicies := func() int {
				p, perr := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{foreign.ID}}, scw.WithAllPages())
				if perr != nil {
					t.Fatal(perr)
				}
				return len(p.Policies)
			}
			if foreignPolicies() != 1 {
				t.Errorf("init changed the policies of the other project's application %s:\n%s", foreign.ID, out)
			}
			if reading == "unique" {
				if err == nil || !strings.Contains(err.Error(), foreign.ID) || !strings.Contains(err.Error(), "Rename or delete it") {
					t.Fatalf("init under unique names: %v, want a refusal naming %s and what to do\n%s", err, foreign.ID, out)
				}
				if keys, _ := api.ListAPIKeys(&iam.ListAPIKeysRequest{}, scw.WithAllPages()); len(keys.APIKeys) != 0 {
					t.Errorf("init minted %d keys after the refusal", len(keys.APIKeys))
				}
				return
			}
			if err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			apps := named()
			var mine *iam.Application
			for _, a := range apps {
				if a.ID != foreign.ID {
					mine = a
				}
			}
			if len(apps) != 2 || mine == nil {
				t.Fatalf("applications named %s: %d, want the other project's and init's own", name, len(apps))
			}
			pols, err := api.ListPolicies(&iam.ListPoliciesRequest{PolicyName: scw.StringPtr(name + "-organization")}, scw.WithAllPages())
			if err != nil || len(pols.Policies) != 1 || pols.Policies[0].ApplicationID == nil || *pols.Policies[0].ApplicationID != mine.ID {
				t.Fatalf("the organization policy %s-organization: %+v %v, want one, on init's application %s", name, pols, err, mine.ID)
			}
			if _, out, err := f.run(t, nil); err != nil || len(named()) != 2 {
				t.Fatalf("rerun: %v, %d applications named %s\n%s", err, len(named()), name, out)
			}
		})
	}
}
