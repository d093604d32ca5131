package repoinit

import (
	"context"
	"fmt"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
)

// IAM makes the bot's Scaleway identities with an administrator's credentials (Client): an
// application with a policy granting what the bot needs on Project (provision/scaleway's
// PermissionSets) and its API key; and the presigning application, allowed to read objects only.
// A key's secret is shown once, so a key is made only when its GitHub secret is missing; keys that
// an interrupted run made (same description) are deleted first, so a rerun leaves no stray key.
type IAM struct {
	Client         *scw.Client
	ProjectID      string
	OrganizationID string
}

// identity is one application of pocbot's.
type identity struct {
	name, description string
	sets              []string
	// orgSets are granted on the organization, in a policy of their own named name +
	// "-organization": a set scoped by organization (OrganizationReadOnly, the quotas) cannot
	// be given to a project, and an installation made before the rule existed gets it added.
	orgSets      []string
	accessSecret [2]string // the secrets that hold its key
}

var identities = []identity{
	{name: "pocbot", description: "pocbot: throw-away Talos clusters from GitHub comments", sets: provscw.PermissionSetNames(),
		orgSets: provscw.OrganizationPermissionSetNames(), accessSecret: [2]string{"SCW_ACCESS_KEY", "SCW_SECRET_KEY"}},
	{name: "pocbot-presign", description: "pocbot: signs the kubeconfig links (reads objects only)", sets: []string{"ObjectStorageObjectsRead"},
		accessSecret: [2]string{"POC_PRESIGN_ACCESS_KEY", "POC_PRESIGN_SECRET_KEY"}},
}

// iamValues fills values with keys for the identities whose secrets are missing.
func (r *runner) iamValues(ctx context.Context, have map[string]bool, values map[string]string) error {
	x := r.cfg.IAM
	if x == nil {
		return nil
	}
	if x.ProjectID == "" || x.OrganizationID == "" {
		return fmt.Errorf("init: making the Scaleway identities needs SCW_DEFAULT_PROJECT_ID and SCW_DEFAULT_ORGANIZATION_ID")
	}
	values["SCW_DEFAULT_PROJECT_ID"] = x.ProjectID
	api := iam.NewAPI(x.Client)
	for _, id := range identities {
		if have[id.accessSecret[0]] && have[id.accessSecret[1]] {
			fmt.Fprintf(r.out, "✓ IAM application %s: its key is in the secrets (kept)\n", id.name)
			if err := r.organizationPolicy(ctx, api, id); err != nil {
				return err
			}
			continue
		}
		if r.cfg.DryRun {
			fmt.Fprintf(r.out, "+ would make IAM application %s (policy: %v on project %s) and its API key\n", id.name, id.sets, x.ProjectID)
			values[id.accessSecret[0]], values[id.accessSecret[1]] = "(new key)", "(new key)"
			continue
		}
		app, err := r.application(ctx, api, id)
		if err != nil {
			return err
		}
		if err := r.policy(ctx, api, id, app); err != nil {
			return err
		}
		if err := r.organizationPolicy(ctx, api, id); err != nil {
			return err
		}
		keyDesc := "pocbot GitHub Actions, " + r.cfg.Repo
		keys, err := api.ListAPIKeys(&iam.ListAPIKeysRequest{ApplicationID: &app.ID}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("init: list the API keys of %s: %w", id.name, err)
		}
		for _, k := range keys.APIKeys {
			if k.Description == keyDesc {
				// Made by a run that failed before writing its secret: nobody holds that secret.
				if err := api.DeleteAPIKey(&iam.DeleteAPIKeyRequest{AccessKey: k.AccessKey}, scw.WithContext(ctx)); err != nil {
					return fmt.Errorf("init: delete the stray API key %s of %s: %w", k.AccessKey, id.name, err)
				}
				r.rep.Changes++
			}
		}
		k, err := api.CreateAPIKey(&iam.CreateAPIKeyRequest{ApplicationID: &app.ID, DefaultProjectID: &x.ProjectID, Description: keyDesc}, scw.WithContext(ctx))
		if err != nil || k.SecretKey == nil {
			return fmt.Errorf("init: create the API key of %s: %w (rerun)", id.name, err)
		}
		r.rep.Changes++
		values[id.accessSecret[0]], values[id.accessSecret[1]] = k.AccessKey, *k.SecretKey
		have[id.accessSecret[0]], have[id.accessSecret[1]] = false, false // both written: a new pair
		fmt.Fprintf(r.out, "+ API key %s of IAM application %s (its secret goes to the GitHub secrets only)\n", k.AccessKey, id.name)
	}
	return nil
}

func (r *runner) application(ctx context.Context, api *iam.API, id identity) (*iam.Application, error) {
	x := r.cfg.IAM
	list, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &id.name, OrganizationID: x.OrganizationID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("init: list the IAM applications: %w (the Scaleway credentials need IAMManager)", err)
	}
	for _, a := range list.Applications {
		if a.Name == id.name { // the name filter is partial
			fmt.Fprintf(r.out, "✓ IAM application %s (%s)\n", id.name, a.ID)
			return a, nil
		}
	}
	a, err := api.CreateApplication(&iam.CreateApplicationRequest{Name: id.name, OrganizationID: x.OrganizationID, Description: id.description}, scw.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("init: create the IAM application %s: %w", id.name, err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ IAM application %s (%s)\n", id.name, a.ID)
	return a, nil
}

func (r *runner) policy(ctx context.Context, api *iam.API, id identity, app *iam.Application) error {
	x := r.cfg.IAM
	list, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{app.ID}}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("init: list the policies of %s: %w", id.name, err)
	}
	for _, p := range list.Policies {
		if p.Name == id.name {
			fmt.Fprintf(r.out, "✓ IAM policy %s (`bot doctor` checks its permission sets)\n", id.name)
			return nil
		}
	}
	sets := append([]string(nil), id.sets...)
	if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: id.name, OrganizationID: x.OrganizationID, ApplicationID: &app.ID,
		Description: "what " + id.name + " needs, in the POC project only",
		Rules:       []*iam.RuleSpecs{{PermissionSetNames: &sets, ProjectIDs: &[]string{x.ProjectID}}}}, scw.WithContext(ctx)); err != nil {
		return fmt.Errorf("init: create the IAM policy %s: %w", id.name, err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ IAM policy %s: %v on project %s\n", id.name, sets, x.ProjectID)
	return nil
}

// organizationPolicy gives the identity's application its organization-scoped sets (the
// pre-flight's quota read, OrganizationReadOnly) in a policy named name + "-organization", when
// it has none of that name: also for an installation made before that rule existed.
func (r *runner) organizationPolicy(ctx context.Context, api *iam.API, id identity) error {
	x := r.cfg.IAM
	if len(id.orgSets) == 0 {
		return nil
	}
	name := id.name + "-organization"
	if r.cfg.DryRun {
		fmt.Fprintf(r.out, "+ would make sure IAM policy %s grants %v on organization %s\n", name, id.orgSets, x.OrganizationID)
		return nil
	}
	apps, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &id.name, OrganizationID: x.OrganizationID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("init: list the IAM applications: %w (the Scaleway credentials need IAMManager)", err)
	}
	for _, app := range apps.Applications {
		if app.Name != id.name {
			continue
		}
		list, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{app.ID}}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("init: list the policies of %s: %w", id.name, err)
		}
		for _, p := range list.Policies {
			if p.Name == name {
				fmt.Fprintf(r.out, "✓ IAM policy %s\n", name)
				return nil
			}
		}
		sets := append([]string(nil), id.orgSets...)
		if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: name, OrganizationID: x.OrganizationID, ApplicationID: &app.ID,
			Description: "the organization's quotas, read by " + id.name + "'s pre-flight (organization-scoped sets)",
			Rules:       []*iam.RuleSpecs{{PermissionSetNames: &sets, OrganizationID: &x.OrganizationID}}}, scw.WithContext(ctx)); err != nil {
			return fmt.Errorf("init: create the IAM policy %s: %w", name, err)
		}
		r.rep.Changes++
		fmt.Fprintf(r.out, "+ IAM policy %s: %v on organization %s (the quotas the pre-flight reads)\n", name, sets, x.OrganizationID)
		return nil
	}
	return nil
}
