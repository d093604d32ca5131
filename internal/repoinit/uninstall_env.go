package repoinit

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	gh "github.com/google/go-github/v88/github"
)

// environmentRemoval decides whether uninstall deletes the environment that held the secrets.
// GitHub records nobody's name on an environment, so the decision is made from what is in it: it is
// deleted only when it holds nothing but what init puts there (pocbot's secrets, and deployments
// from the default branch only); anything else — another secret or variable, a wait timer,
// required reviewers, an App's deployment protection rule, another deployment branch rule,
// deployments limited to protected branches, administrators barred from bypassing its rules
// (can_admins_bypass false) — is someone else's, and deleting the environment would delete it too
// (GitHub deletes an environment's secrets and protection rules with it). Such an environment is
// kept, and the output names what keeps it. Variables of pocbot's names (docs/install.md's long way
// sets some) are pocbot's: they go with the environment, or one by one from a kept one. An
// environment that existed before init but holds only what init would have put there is deleted:
// nothing else is lost with it.
type environmentRemoval struct {
	c             *gh.Client
	owner, name   string
	env           string
	defaultBranch string
	rec           *record // init's record: the secrets it wrote there are not someone else's
	dryRun        bool
	out           io.Writer
}

// run deletes the environment when nothing foreign is in it, and otherwise the variables of
// pocbot's names in it; it returns the number of deleting requests made and whether the
// environment was kept.
func (x environmentRemoval) run(ctx context.Context) (changes int, kept bool, err error) {
	path := fmt.Sprintf("repos/%s/%s/environments/%s", x.owner, x.name, url.PathEscape(x.env))
	var cur struct {
		CanAdminsBypass *bool `json:"can_admins_bypass"`
		Policy          *struct {
			Protected bool `json:"protected_branches"`
			Custom    bool `json:"custom_branch_policies"`
		} `json:"deployment_branch_policy"`
		Rules []struct {
			Type string `json:"type"`
		} `json:"protection_rules"`
	}
	resp, err := x.do(ctx, http.MethodGet, path, &cur)
	switch {
	case resp != nil && resp.StatusCode == http.StatusNotFound:
		return 0, false, nil // none (repository secrets, or already deleted)
	case err != nil:
		return 0, false, fmt.Errorf("uninstall: read the environment %s: %w (rerun)", x.env, err)
	}
	foreign, ours, err := x.foreign(ctx, path, cur.Policy != nil && cur.Policy.Protected, cur.Policy != nil && cur.Policy.Custom)
	if err != nil {
		return 0, false, err
	}
	for _, r := range cur.Rules {
		switch r.Type {
		case "branch_policy": // the deployment branches, judged above
		case "wait_timer":
			foreign = append(foreign, "a wait timer")
		case "required_reviewers":
			foreign = append(foreign, "required reviewers")
		default:
			foreign = append(foreign, "the protection rule "+r.Type)
		}
	}
	if cur.CanAdminsBypass != nil && !*cur.CanAdminsBypass {
		foreign = append(foreign, "the setting that administrators may not bypass its protection rules")
	}
	if len(foreign) > 0 {
		// Kept: pocbot's own variables go one by one.
		for _, v := range ours {
			if x.dryRun {
				fmt.Fprintf(x.out, "- would delete the variable %s of the environment %s\n", v, x.env)
				continue
			}
			resp, err := x.do(ctx, http.MethodDelete, path+"/variables/"+url.PathEscape(v), nil)
			if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
				return changes, false, fmt.Errorf("uninstall: delete the variable %s of the environment %s: %w (rerun)", v, x.env, err)
			}
			changes++
			fmt.Fprintf(x.out, "- variable %s of the environment %s\n", v, x.env)
		}
		fmt.Fprintf(x.out, "! environment %s kept: it holds %s, which init does not make (deleting it would delete them too). "+
			"If nothing needs it any more: gh api -X DELETE repos/%s/%s/environments/%s\n",
			x.env, strings.Join(foreign, ", "), x.owner, x.name, url.PathEscape(x.env))
		return changes, true, nil
	}
	// Deleted: pocbot's variables go with it.
	if x.dryRun {
		for _, v := range ours {
			fmt.Fprintf(x.out, "- would delete the variable %s of the environment %s (with the environment)\n", v, x.env)
		}
		fmt.Fprintf(x.out, "- would delete the environment %s (it holds nothing but what init, or docs/install.md, puts there)\n", x.env)
		return 0, false, nil
	}
	resp, err = x.do(ctx, http.MethodDelete, path, nil)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return 0, false, fmt.Errorf("uninstall: delete the environment %s: %w (rerun)", x.env, err)
	}
	// An answer is not proof: GitHub answers 404 where a token may not act (REST API
	// troubleshooting, "404 Not Found" for resources a token cannot reach), and the environment
	// was just read. It is gone once a read says so.
	if back, err := x.do(ctx, http.MethodGet, path, nil); err == nil {
		return 0, false, fmt.Errorf("uninstall: the environment %s is still there after its delete was answered %s: the token may not delete it "+
			"(deleting an environment needs the repository's administration permission); delete it in the repository's settings, or rerun with a token that may", x.env, statusOf(resp))
	} else if back == nil || back.StatusCode != http.StatusNotFound {
		return 0, false, fmt.Errorf("uninstall: read the environment %s back after its delete: %w (rerun)", x.env, err)
	}
	for _, v := range ours {
		fmt.Fprintf(x.out, "- variable %s of the environment %s (with the environment)\n", v, x.env)
	}
	fmt.Fprintf(x.out, "- environment %s and its deployment branch rule\n", x.env)
	return 1, false, nil
}

// foreign lists what the environment holds that init does not put there: secrets of other names,
// variables of other names, deployment branch rules other than the default branch, a
// protected-branches policy, an App's deployment protection rule. ours are the variables of pocbot's names (docs/install.md's long way
// sets POC_APP_ID, POC_STATE_URL, POC_IMAGE_BUCKET and SCW_DEFAULT_PROJECT_ID as variables).
func (x environmentRemoval) foreign(ctx context.Context, path string, protected, custom bool) (found, ours []string, err error) {
	names, _, err := SecretNames(ctx, x.c, path+"/secrets")
	if err != nil {
		return nil, nil, fmt.Errorf("uninstall: list the secrets of the environment %s: %w (rerun)", x.env, err)
	}
	for _, n := range names {
		switch {
		case x.rec.wrote(n, x.env):
		case managedSecret(n):
			found = append(found, "the secret "+n+" (init did not write it)")
		default:
			found = append(found, "the secret "+n)
		}
	}
	for page := 1; page < 100; page++ {
		var vars struct {
			Total     int `json:"total_count"`
			Variables []struct {
				Name string `json:"name"`
			} `json:"variables"`
		}
		if _, err := x.do(ctx, http.MethodGet, fmt.Sprintf("%s/variables?per_page=30&page=%d", path, page), &vars); err != nil {
			return nil, nil, fmt.Errorf("uninstall: list the variables of the environment %s: %w (rerun)", x.env, err)
		}
		for _, v := range vars.Variables {
			if managedSecret(v.Name) {
				ours = append(ours, v.Name)
			} else {
				found = append(found, "the variable "+v.Name)
			}
		}
		if len(vars.Variables) < 30 {
			break
		}
	}
	if protected {
		found = append(found, "deployments limited to protected branches")
	}
	// An App's gate is not among the environment's protection_rules: it has its own list (a 404:
	// none on this plan or server).
	var gates struct {
		Rules []struct {
			App struct {
				Slug string `json:"slug"`
			} `json:"app"`
		} `json:"custom_deployment_protection_rules"`
	}
	if resp, err := x.do(ctx, http.MethodGet, path+"/deployment_protection_rules", &gates); err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return nil, nil, fmt.Errorf("uninstall: list the deployment protection rules of the environment %s: %w (rerun)", x.env, err)
	}
	for _, g := range gates.Rules {
		found = append(found, "the deployment protection rule of the App "+g.App.Slug)
	}
	if custom {
		var pol struct {
			Policies []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"branch_policies"`
		}
		if _, err := x.do(ctx, http.MethodGet, path+"/deployment-branch-policies?per_page=100", &pol); err != nil {
			return nil, nil, fmt.Errorf("uninstall: read the deployment branches of the environment %s: %w (rerun)", x.env, err)
		}
		for _, p := range pol.Policies {
			if p.Name != x.defaultBranch || p.Type == "tag" {
				found = append(found, fmt.Sprintf("the deployment rule %q", p.Name))
			}
		}
	}
	return found, ours, nil
}

func (x environmentRemoval) do(ctx context.Context, method, path string, out any) (*gh.Response, error) {
	req, err := x.c.NewRequest(ctx, method, path, nil)
	if err != nil {
		return nil, err
	}
	return x.c.Do(req, out)
}

// statusOf names an answer's status ("no answer" without one).
func statusOf(resp *gh.Response) string {
	if resp == nil || resp.Response == nil {
		return "with no answer"
	}
	return resp.Status
}
