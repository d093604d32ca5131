package doctor

import (
	"context"
	"fmt"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
)

// IAM checks that the bot's API key (AccessKey) holds every permission set the bot needs on
// Project, reading its application's policies with Client (the same key needs IAMReadOnly for
// that, or the caller's admin credentials are used).
func IAM(client *scw.Client, accessKey, project string) Check {
	return func(ctx context.Context) []Item {
		if client == nil || accessKey == "" {
			return one("IAM permissions", Skip, "no Scaleway credentials", "set SCW_ACCESS_KEY, SCW_SECRET_KEY and SCW_DEFAULT_PROJECT_ID (or the scw CLI's profile)")
		}
		api := iam.NewAPI(client)
		key, err := api.GetAPIKey(&iam.GetAPIKeyRequest{AccessKey: accessKey}, scw.WithContext(ctx))
		if err != nil {
			return one("credentials", Fail, fmt.Sprintf("read API key %s: %v", accessKey, err),
				"check SCW_ACCESS_KEY/SCW_SECRET_KEY; reading IAM needs IAMReadOnly (run doctor with an admin's key, the scw CLI profile)")
		}
		items := one("credentials", OK, fmt.Sprintf("API key %s is valid", accessKey), "")
		if key.ApplicationID == nil {
			return append(items, one("IAM permissions", Warn, "the key belongs to a user, not an application: its rights are the user's", "give the bot its own IAM application (deploy/iam/scw.sh or bot init)")...)
		}
		pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{*key.ApplicationID}}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return append(items, one("IAM permissions", Fail, fmt.Sprintf("list the policies of application %s: %v", *key.ApplicationID, err), "grant IAMReadOnly to the key doctor runs with")...)
		}
		have := map[string]bool{}
		for _, p := range pols.Policies {
			rules, err := api.ListRules(&iam.ListRulesRequest{PolicyID: p.ID}, scw.WithAllPages(), scw.WithContext(ctx))
			if err != nil {
				return append(items, one("IAM permissions", Fail, fmt.Sprintf("list the rules of policy %s: %v", p.Name, err), "grant IAMReadOnly to the key doctor runs with")...)
			}
			for _, r := range rules.Rules {
				scoped := r.OrganizationID != nil
				if r.ProjectIDs != nil {
					for _, id := range *r.ProjectIDs {
						scoped = scoped || id == project
					}
				}
				if scoped && r.PermissionSetNames != nil {
					for _, n := range *r.PermissionSetNames {
						have[n] = true
					}
				}
			}
		}
		var missing []string
		for _, p := range provscw.PermissionSets {
			if !have[p.Name] && !have["AllProductsFullAccess"] {
				missing = append(missing, p.Name+" ("+p.For+")")
			}
		}
		if len(missing) > 0 {
			return append(items, one("IAM permissions", Fail, "the key's application lacks on project "+project+": "+strings.Join(missing, ", "),
				"add them to its policy: scw iam policy create application-id="+*key.ApplicationID+" rules.0.project-ids.0="+project+" rules.0.permission-set-names.0=<name> … (deploy/iam/scw.sh lists them)")...)
		}
		return append(items, one("IAM permissions", OK, fmt.Sprintf("all %d permission sets on project %s", len(provscw.PermissionSets), project), "")...)
	}
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
