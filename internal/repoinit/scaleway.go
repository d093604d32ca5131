package repoinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	provscw "github.com/pocbot/pocbot/internal/provision/scaleway"
)

// IAM makes the bot's Scaleway identities with an administrator's credentials (Client): an
// application with a policy granting what the bot needs on Project (provision/scaleway's
// PermissionSets) and its API key; and the presigning application, allowed to read objects only.
// A key's secret is shown once, so a key is made only when its GitHub secret is missing; keys that
// an interrupted run made (same description) are deleted first, so a rerun leaves no stray key.
//
// IAM applications belong to the organization, not to a project: a name alone could be another
// project's. So an application is pocbot's for Project when init's record names its id, or when
// its name is the project's (appName) — or the name older inits gave it (the identity's plain
// name) — and its policies name no other project. Before a key is minted on an application, its
// policies must grant the identity's permission sets on Project.
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

// appName is the name of the identity's application for project: one application per project.
func (id identity) appName(project string) string { return id.name + "-" + project }

// ApplicationNames are the names of pocbot's IAM applications for project (`bot doctor --live`
// reads whether the organization holds one of them twice: register row iam-app-names).
func ApplicationNames(project string) []string {
	out := make([]string, len(identities))
	for i, id := range identities {
		out[i] = id.appName(project)
	}
	return out
}

// keyDescription names the API key of one repository (one key per repository of the project).
func keyDescription(repo string) string { return "pocbot GitHub Actions, " + repo }

// appScope is what an application is used for: its policies, what they grant on the project
// (a rule naming the project, or one scoped to the organization), the other projects they name,
// and its API keys.
type appScope struct {
	policies []*iam.Policy
	granted  map[string]bool
	// orgGranted are the sets a rule scoped to the organization grants (OrganizationReadOnly
	// counts only there).
	orgGranted map[string]bool
	others     []string // projects other than the one asked about, named by rules or keys
	keys       []*iam.APIKey
}

func readScope(ctx context.Context, api *iam.API, app *iam.Application, project string) (appScope, error) {
	s := appScope{granted: map[string]bool{}, orgGranted: map[string]bool{}}
	pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{app.ID}}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return s, fmt.Errorf("list the policies of IAM application %s: %w", app.Name, err)
	}
	s.policies = pols.Policies
	other := func(p string) {
		if p != project && !slices.Contains(s.others, p) {
			s.others = append(s.others, p)
		}
	}
	for _, p := range pols.Policies {
		rules, err := api.ListRules(&iam.ListRulesRequest{PolicyID: p.ID}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return s, fmt.Errorf("list the rules of IAM policy %s: %w", p.Name, err)
		}
		for _, r := range rules.Rules {
			here := r.OrganizationID != nil
			if r.ProjectIDs != nil {
				for _, id := range *r.ProjectIDs {
					here = here || id == project
					other(id)
				}
			}
			if here && r.PermissionSetNames != nil {
				for _, n := range *r.PermissionSetNames {
					s.granted[n] = true
					s.orgGranted[n] = s.orgGranted[n] || r.OrganizationID != nil
				}
			}
		}
	}
	keys, err := api.ListAPIKeys(&iam.ListAPIKeysRequest{ApplicationID: &app.ID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return s, fmt.Errorf("list the API keys of IAM application %s: %w", app.Name, err)
	}
	s.keys = keys.APIKeys
	for _, k := range keys.APIKeys {
		if k.DefaultProjectID != "" {
			other(k.DefaultProjectID)
		}
	}
	sort.Strings(s.others)
	return s, nil
}

// missing lists the sets the application's policies do not grant on the project.
func (s appScope) missing(sets []string) []string {
	var out []string
	for _, n := range sets {
		if !s.granted[n] && !s.granted["AllProductsFullAccess"] {
			out = append(out, n)
		}
	}
	return out
}

// found is an application of pocbot's for a project, and what it is used for.
type found struct {
	app      *iam.Application
	scope    appScope
	recorded bool // init's record names it
}

// findApplication finds id's application for x.ProjectID: the one init's record names (which may
// have come to serve another project too: scope.others says), else one of the project's name or
// the older plain name whose policies and keys name no other project (the plain name must grant
// something here). nil when there is none.
func findApplication(ctx context.Context, api *iam.API, x *IAM, id identity, rec *record) (*found, error) {
	if r := rec.identity(id.name, x.ProjectID); r != nil {
		app, err := api.GetApplication(&iam.GetApplicationRequest{ApplicationID: r.ApplicationID}, scw.WithContext(ctx))
		switch {
		case iamNotFound(err): // deleted since: looked for again below
		case err != nil:
			return nil, fmt.Errorf("read the IAM application %s that init recorded: %w (the Scaleway credentials need IAMManager)", r.ApplicationID, err)
		default:
			scope, err := readScope(ctx, api, app, x.ProjectID)
			if err != nil {
				return nil, err
			}
			return &found{app: app, scope: scope, recorded: true}, nil
		}
	}
	list, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &id.name, OrganizationID: x.OrganizationID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("list the IAM applications: %w (the Scaleway credentials need IAMManager)", err)
	}
	// The project's own name first, then the older plain name.
	apps := slices.Clone(list.Applications)
	slices.SortStableFunc(apps, func(a, b *iam.Application) int {
		return boolInt(a.Name != id.appName(x.ProjectID)) - boolInt(b.Name != id.appName(x.ProjectID))
	})
	for _, a := range apps {
		if a.Name != id.appName(x.ProjectID) && a.Name != id.name { // the name filter is partial
			continue
		}
		scope, err := readScope(ctx, api, a, x.ProjectID)
		if err != nil {
			return nil, err
		}
		if len(scope.others) > 0 || a.Name == id.name && len(scope.missing(id.sets)) == len(id.sets) {
			continue // another project's, or (plain name) one that grants nothing here
		}
		return &found{app: a, scope: scope}, nil
	}
	return nil, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// iamNotFound tells whether err is Scaleway's 404.
func iamNotFound(err error) bool {
	var nf *scw.ResourceNotFoundError
	var re *scw.ResponseError
	return errors.As(err, &nf) || errors.As(err, &re) && re.StatusCode == http.StatusNotFound
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
		f, err := findApplication(ctx, api, x, id, r.rec)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if have[id.accessSecret[0]] && have[id.accessSecret[1]] {
			fmt.Fprintf(r.out, "✓ IAM application %s: its key is in the secrets (kept)\n", id.name)
			if f != nil && len(f.scope.others) == 0 {
				if err := r.organizationPolicy(ctx, api, id, f); err != nil {
					return err
				}
			}
			continue
		}
		if r.cfg.DryRun {
			if f != nil {
				fmt.Fprintf(r.out, "+ would mint an API key on IAM application %s (%s)\n", f.app.Name, f.app.ID)
			} else {
				fmt.Fprintf(r.out, "+ would make IAM application %s (policy: %v on project %s) and its API key\n", id.appName(x.ProjectID), id.sets, x.ProjectID)
			}
			values[id.accessSecret[0]], values[id.accessSecret[1]] = "(new key)", "(new key)"
			continue
		}
		if f != nil && len(f.scope.others) > 0 {
			return fmt.Errorf("init: the IAM application %s (%s) that init recorded for project %s now serves project(s) %s too: "+
				"init mints no key on an application another project uses. Remove the other projects from its policies and keys, or delete the variable %s so that init makes project %s its own, then rerun",
				f.app.Name, f.app.ID, x.ProjectID, strings.Join(f.scope.others, ", "), RecordVariable, x.ProjectID)
		}
		made := f == nil
		if made {
			if f, err = r.createApplication(ctx, api, id); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(r.out, "✓ IAM application %s (%s) of project %s\n", f.app.Name, f.app.ID, x.ProjectID)
		}
		entry := iamRecord{Identity: id.name, ProjectID: x.ProjectID, ApplicationID: f.app.ID, Made: made}
		if prev := r.rec.identity(id.name, x.ProjectID); prev != nil && prev.ApplicationID == f.app.ID {
			entry.Made, entry.AccessKey = prev.Made || made, prev.AccessKey
		}
		r.rec.setIdentity(entry)
		if err := r.saveRecord(ctx); err != nil {
			return err
		}
		if err := r.policy(ctx, api, id, f); err != nil {
			return err
		}
		if err := r.organizationPolicy(ctx, api, id, f); err != nil {
			return err
		}
		k, err := r.mintKey(ctx, api, id, f)
		if err != nil {
			return err
		}
		entry.AccessKey = k.AccessKey
		r.rec.setIdentity(entry)
		if err := r.saveRecord(ctx); err != nil {
			return err
		}
		values[id.accessSecret[0]], values[id.accessSecret[1]] = k.AccessKey, *k.SecretKey
		have[id.accessSecret[0]], have[id.accessSecret[1]] = false, false // both written: a new pair
		fmt.Fprintf(r.out, "+ API key %s of IAM application %s (its secret goes to the GitHub secrets only)\n", k.AccessKey, f.app.Name)
	}
	return nil
}

func (r *runner) createApplication(ctx context.Context, api *iam.API, id identity) (*found, error) {
	x := r.cfg.IAM
	a, err := api.CreateApplication(&iam.CreateApplicationRequest{Name: id.appName(x.ProjectID), OrganizationID: x.OrganizationID,
		Description: id.description + ", project " + x.ProjectID}, scw.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("init: create the IAM application %s: %w%s", id.appName(x.ProjectID), err, r.nameHolders(ctx, api, id.appName(x.ProjectID)))
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ IAM application %s (%s)\n", a.Name, a.ID)
	return &found{app: a, scope: appScope{granted: map[string]bool{}, orgGranted: map[string]bool{}}}, nil
}

// nameHolders names, for an error, the applications of the organization that already hold name
// (register row iam-app-names: the organization may refuse a second one). init skipped them: they
// serve another project, or grant nothing here.
func (r *runner) nameHolders(ctx context.Context, api *iam.API, name string) string {
	list, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &name, OrganizationID: r.cfg.IAM.OrganizationID}, scw.WithAllPages(), scw.WithContext(ctx))
	if err != nil {
		return ""
	}
	var held []string
	for _, a := range list.Applications {
		if a.Name == name {
			held = append(held, a.ID)
		}
	}
	if len(held) == 0 {
		return ""
	}
	return fmt.Sprintf(". The organization already holds an application of this name (%s) that init does not take as project %s's: "+
		"it serves another project or grants nothing here, and the organization may refuse a second name. Rename or delete it (scw iam application list name=%s), then rerun",
		strings.Join(held, ", "), r.cfg.IAM.ProjectID, name)
}

// policy makes sure the application's policies grant the identity's sets on the project before a
// key is minted: an application with no policy gets init's; one whose policies fall short is
// refused (they are someone's: init does not widen them).
func (r *runner) policy(ctx context.Context, api *iam.API, id identity, f *found) error {
	x := r.cfg.IAM
	missing := f.scope.missing(id.sets)
	switch {
	case len(missing) == 0:
		fmt.Fprintf(r.out, "✓ IAM policies of %s grant %v on project %s\n", f.app.Name, id.sets, x.ProjectID)
		return nil
	case len(f.scope.policies) > 0:
		return fmt.Errorf("init: the IAM application %s (%s) has policies that do not grant %s on project %s: init mints no key on it. "+
			"Grant them (deploy/iam/scw.sh), or delete the application, then rerun", f.app.Name, f.app.ID, strings.Join(missing, ", "), x.ProjectID)
	}
	sets := slices.Clone(id.sets)
	if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: f.app.Name, OrganizationID: x.OrganizationID, ApplicationID: &f.app.ID,
		Description: "what " + id.name + " needs, in the POC project only",
		Rules:       []*iam.RuleSpecs{{PermissionSetNames: &sets, ProjectIDs: &[]string{x.ProjectID}}}}, scw.WithContext(ctx)); err != nil {
		return fmt.Errorf("init: create the IAM policy %s: %w", f.app.Name, err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ IAM policy %s: %v on project %s\n", f.app.Name, sets, x.ProjectID)
	return nil
}

// organizationPolicy gives the application its organization-scoped sets (the pre-flight's quota
// read, OrganizationReadOnly: a set scoped by organization cannot be granted on a project) in a
// policy of its own, named after the application with "-organization", when no rule of its
// policies grants them on the organization: also to an installation made before that rule existed.
// It reads; it grants no access to a resource.
func (r *runner) organizationPolicy(ctx context.Context, api *iam.API, id identity, f *found) error {
	x := r.cfg.IAM
	var missing []string
	for _, n := range id.orgSets {
		if !f.scope.orgGranted[n] {
			missing = append(missing, n)
		}
	}
	name := f.app.Name + "-organization"
	switch {
	case len(missing) == 0:
		return nil
	case r.cfg.DryRun:
		fmt.Fprintf(r.out, "+ would make IAM policy %s: %v on organization %s\n", name, missing, x.OrganizationID)
		return nil
	}
	if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: name, OrganizationID: x.OrganizationID, ApplicationID: &f.app.ID,
		Description: "the organization's quotas, read by " + id.name + "'s pre-flight (organization-scoped sets)",
		Rules:       []*iam.RuleSpecs{{PermissionSetNames: &missing, OrganizationID: &x.OrganizationID}}}, scw.WithContext(ctx)); err != nil {
		return fmt.Errorf("init: create the IAM policy %s: %w", name, err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ IAM policy %s: %v on organization %s (the quotas the pre-flight reads)\n", name, missing, x.OrganizationID)
	return nil
}

// mintKey makes this repository's API key on the application, deleting first the keys a run cut
// before it wrote their secrets made (same description: nobody holds their secret).
func (r *runner) mintKey(ctx context.Context, api *iam.API, id identity, f *found) (*iam.APIKey, error) {
	x := r.cfg.IAM
	desc := keyDescription(r.cfg.Repo)
	for _, k := range f.scope.keys {
		if k.Description == desc {
			if err := api.DeleteAPIKey(&iam.DeleteAPIKeyRequest{AccessKey: k.AccessKey}, scw.WithContext(ctx)); err != nil && !iamNotFound(err) {
				return nil, fmt.Errorf("init: delete the stray API key %s of %s: %w", k.AccessKey, f.app.Name, err)
			}
			r.rep.Changes++
		}
	}
	k, err := api.CreateAPIKey(&iam.CreateAPIKeyRequest{ApplicationID: &f.app.ID, DefaultProjectID: &x.ProjectID, Description: desc}, scw.WithContext(ctx))
	if err != nil || k.SecretKey == nil {
		return nil, fmt.Errorf("init: create the API key of %s: %w (rerun)", f.app.Name, err)
	}
	r.rep.Changes++
	return k, nil
}

// uninstallIAM deletes this repository's API keys on the project's applications of pocbot's, and
// an application itself (its policies first) only when no other key is left on it and nothing
// names another project: another repository of the project, or another project, still uses it.
func uninstallIAM(ctx context.Context, x *IAM, repo string, rec *record, dryRun bool, out io.Writer) (int, error) {
	api, changes := iam.NewAPI(x.Client), 0
	for _, id := range identities {
		f, err := findApplication(ctx, api, x, id, rec)
		if err != nil {
			return changes, fmt.Errorf("uninstall: %w", err)
		}
		if f == nil {
			continue
		}
		n, err := removeApplication(ctx, api, x, id, f, repo, rec, dryRun, out)
		changes += n
		if err != nil {
			return changes, err
		}
	}
	return changes, nil
}

func removeApplication(ctx context.Context, api *iam.API, x *IAM, id identity, f *found, repo string, rec *record, dryRun bool, out io.Writer) (int, error) {
	changes, mine := 0, ""
	if r := rec.identity(id.name, x.ProjectID); r != nil {
		mine = r.AccessKey
	}
	var others []string
	for _, k := range f.scope.keys {
		if k.Description != keyDescription(repo) && k.AccessKey != mine {
			others = append(others, fmt.Sprintf("%s (%s)", k.AccessKey, k.Description))
			continue
		}
		if dryRun {
			fmt.Fprintf(out, "- would delete the API key %s of IAM application %s\n", k.AccessKey, f.app.Name)
			continue
		}
		if err := api.DeleteAPIKey(&iam.DeleteAPIKeyRequest{AccessKey: k.AccessKey}, scw.WithContext(ctx)); err != nil && !iamNotFound(err) {
			return changes, fmt.Errorf("uninstall: delete the API key %s of %s: %w (rerun)", k.AccessKey, f.app.Name, err)
		}
		changes++
		fmt.Fprintf(out, "- API key %s of IAM application %s\n", k.AccessKey, f.app.Name)
	}
	if len(others) > 0 || len(f.scope.others) > 0 {
		why := "other keys still use it: " + strings.Join(others, ", ")
		if len(others) == 0 {
			why = "its policies name project(s) " + strings.Join(f.scope.others, ", ") + " too"
		}
		fmt.Fprintf(out, "! IAM application %s (%s) kept: %s\n", f.app.Name, f.app.ID, why)
		if !dryRun {
			rec.forgetIdentity(id.name, x.ProjectID)
		}
		return changes, nil
	}
	if dryRun {
		fmt.Fprintf(out, "- would delete the IAM application %s (%s) and its policies\n", f.app.Name, f.app.ID)
		return changes, nil
	}
	for _, p := range f.scope.policies {
		if err := api.DeletePolicy(&iam.DeletePolicyRequest{PolicyID: p.ID}, scw.WithContext(ctx)); err != nil && !iamNotFound(err) {
			return changes, fmt.Errorf("uninstall: delete the IAM policy %s: %w (rerun)", p.Name, err)
		}
		changes++
	}
	if err := api.DeleteApplication(&iam.DeleteApplicationRequest{ApplicationID: f.app.ID}, scw.WithContext(ctx)); err != nil && !iamNotFound(err) {
		return changes, fmt.Errorf("uninstall: delete the IAM application %s: %w (rerun)", f.app.Name, err)
	}
	changes++
	rec.forgetIdentity(id.name, x.ProjectID)
	fmt.Fprintf(out, "- IAM application %s (%s) and its policies\n", f.app.Name, f.app.ID)
	return changes, nil
}
