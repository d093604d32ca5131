package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
)

// IAM checks that the bot's API key (AccessKey) holds every permission set the bot needs: the
// project-scoped ones on Project, the organization-scoped ones (OrganizationReadOnly, for the
// quotas) on the organization, reading its application's policies with Client. Reading IAM needs
// IAMReadOnly, which the bot's own key does not have (deploy/iam grants it nothing it does not
// use): with the bot's key the item is not checked, and says how to check it (an admin's key,
// `--key` naming the bot's); `bot doctor --live` exercises the permissions themselves.
func IAM(client *scw.Client, accessKey, project string) Check {
	return func(ctx context.Context) []Item {
		if client == nil || accessKey == "" {
			return one("IAM permissions", Skip, "no Scaleway credentials", "set SCW_ACCESS_KEY, SCW_SECRET_KEY and SCW_DEFAULT_PROJECT_ID (or the scw CLI's profile)")
		}
		api := iam.NewAPI(client)
		key, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: accessKey}, scw.WithContext(ctx))
		var denied *scw.PermissionsDeniedError
		if errors.As(err, &denied) {
			return one("IAM permissions", Skip, "these credentials may not read IAM (the bot's own key has no IAM right, and needs none)",
				"run `bot doctor --key "+accessKey+"` with an administrator's SCW_ACCESS_KEY/SCW_SECRET_KEY to read the key's policies; `bot doctor --live` tries the calls themselves")
		}
		if err != nil {
			return one("credentials", Fail, fmt.Sprintf("read API key %s: %v", accessKey, err),
				"check SCW_ACCESS_KEY/SCW_SECRET_KEY; reading IAM needs IAMReadOnly (run doctor with an admin's key, the scw CLI profile)")
		}
		items := one("credentials", OK, fmt.Sprintf("API key %s is valid", accessKey), "")
		if key.ApplicationID == nil {
			return append(items, one("IAM permissions", Warn, "the key belongs to a user, not an application: its rights are the user's", "give the bot its own IAM application (deploy/iam/scw.sh or bot init)")...)
		}
		have, err := grantedSets(ctx, api, *key.ApplicationID, project)
		if err != nil {
			return append(items, one("IAM permissions", Fail, err.Error(), "grant IAMReadOnly to the key doctor runs with")...)
		}
		var missing, missingOrg []string
		for _, p := range provscw.PermissionSets {
			switch {
			case p.Organization && !have.org[p.Name]:
				missingOrg = append(missingOrg, p.Name+" ("+p.For+")")
			case !p.Organization && !have.project[p.Name] && !have.project["AllProductsFullAccess"]:
				missing = append(missing, p.Name+" ("+p.For+")")
			}
		}
		if len(missing) > 0 {
			return append(items, one("IAM permissions", Fail, "the key's application lacks on project "+project+": "+strings.Join(missing, ", "),
				"add them to its policy: scw iam policy create application-id="+*key.ApplicationID+" rules.0.project-ids.0="+project+" rules.0.permission-set-names.0=<name> … (deploy/iam/scw.sh lists them)")...)
		}
		if len(missingOrg) > 0 {
			return append(items, one("IAM permissions", Warn, "the key's application lacks on the organization: "+strings.Join(missingOrg, ", ")+
				"; the pre-flight then weighs Scaleway's documented quotas (or quotas: in .github/poc.yml) instead of the organization's",
				"rerun `bot init --iam`, or: scw iam policy create name="+orgPolicyName(ctx, api, *key.ApplicationID)+" application-id="+*key.ApplicationID+
					" rules.0.organization-id=<organization id> rules.0.permission-set-names.0=OrganizationReadOnly (deploy/iam/scw.sh)")...)
		}
		return append(items, one("IAM permissions", OK, fmt.Sprintf("all %d permission sets (on project %s and the organization)", len(provscw.PermissionSets), project), "")...)
	}
}

// orgPolicyName is the name `bot init --iam` gives the policy of the organization-scoped sets:
// the application's name and "-organization" (repoinit's organizationPolicy), read by the
// application's id (names are not unique in an organization: register row iam-app-names).
func orgPolicyName(ctx context.Context, api *iam.API, appID string) string {
	app, err := api.GetApplication(&iam.GetApplicationRequest{ApplicationID: appID}, scw.WithContext(ctx))
	if err != nil {
		return "<the application's name>-organization"
	}
	return app.Name + "-organization"
}

// granted is what an application's rules grant: sets usable on the project (a rule naming it, or
// one scoped to the organization) and sets scoped by the organization.
type granted struct{ project, org map[string]bool }

func grantedSets(ctx context.Context, api *iam.API, app, project string) (granted, error) {
	g := granted{project: map[string]bool{}, org: map[string]bool{}}
	pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{app}}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return g, fmt.Errorf("list the policies of application %s: %w", app, err)
	}
	for _, p := range pols.Policies {
		rules, err := api.ListRules(&iam.ListRulesRequest{PolicyID: p.ID}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return g, fmt.Errorf("list the rules of policy %s: %w", p.Name, err)
		}
		for _, r := range rules.Rules {
			if r.PermissionSetNames == nil {
				continue
			}
			onProject := r.OrganizationID != nil || r.ProjectIDs != nil && slices.Contains(*r.ProjectIDs, project)
			for _, n := range *r.PermissionSetNames {
				g.project[n] = g.project[n] || onProject
				g.org[n] = g.org[n] || r.OrganizationID != nil
			}
		}
	}
	return g, nil
}

// Credentials checks that the key authenticates with a call every bot key may make (a one-item
// list of the project's Instance servers in the default zone).
func Credentials(client *scw.Client, project string) Check {
	return func(ctx context.Context) []Item {
		req := &instance.ListServersRequest{PerPage: scw.Uint32Ptr(1)}
		if project != "" {
			req.Project = &project
		}
		if _, err := instance.NewAPI(client).ListServers(req, scw.WithContext(ctx)); err != nil {
			return one("Scaleway credentials", Fail, fmt.Sprintf("the bot's key cannot list the project's servers: %v", err),
				"check the SCW_ACCESS_KEY and SCW_SECRET_KEY secrets (a key of the pocbot IAM application; `bot init --iam` makes one) and its InstancesFullAccess permission")
		}
		return one("Scaleway credentials", OK, "the bot's key lists the project's servers", "")
	}
}
