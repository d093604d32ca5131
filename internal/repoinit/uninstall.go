package repoinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	gh "github.com/google/go-github/v88/github"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"
)

// ErrClustersLeft refuses an uninstall while the state bucket holds a cluster's state.
var ErrClustersLeft = errors.New("clusters are still up")

// UninstallConfig is one run of uninstall (`bot uninstall`).
type UninstallConfig struct {
	Repo   string // OWNER/REPO
	Env    string // the environment that holds the secrets (default poc)
	APIURL string
	Token  string // a repository admin's token (never printed)
	// Clusters lists the clusters whose state the bucket holds; uninstall refuses while there is one.
	Clusters func(ctx context.Context) ([]string, error)
	// IAM, when set, deletes the identities init --iam made (shared by every repository of the
	// project: give it for the last one).
	IAM *IAM
	// Buckets, when given, are emptied (every version) and deleted (shared too).
	Buckets   []Bucket
	DryRun    bool
	Out       io.Writer
	Transport http.RoundTripper
}

// Uninstall removes what init made, in an order that a rerun can always finish: it refuses first
// while a cluster's state exists (its resources would be left without a state to delete them by),
// then deletes the secrets init manages, the environment that held them when nothing else is in it
// (environmentRemoval), the IAM identities, the buckets. What is gone already is skipped. It
// returns the number of deleting requests made. The App's installation and the workflow files
// stay (the output says how to remove them), and so does an environment that holds anything else.
func Uninstall(ctx context.Context, cfg UninstallConfig) (int, error) {
	owner, name, err := splitRepo("uninstall", cfg.Repo)
	if err != nil {
		return 0, err
	}
	defaults(&cfg.Env, &cfg.Out, &cfg.Transport)
	out, changes := cfg.Out, 0
	if cfg.DryRun {
		fmt.Fprintf(out, "Plan for removing pocbot from %s (dry run: nothing is changed):\n", cfg.Repo)
	}
	// The state bucket goes last, so that an interrupted run is finished by a rerun, which finds it
	// gone only when everything else is.
	sort.SliceStable(cfg.Buckets, func(i, j int) bool { return cfg.Buckets[i].Role != "state" && cfg.Buckets[j].Role == "state" })
	if err := checkNoClusters(ctx, cfg); err != nil {
		return 0, err
	}
	if cfg.Token == "" {
		return 0, errors.New("uninstall: no GitHub token (GH_TOKEN, GITHUB_TOKEN or `gh auth token`)")
	}
	c, err := client(cfg.Transport, cfg.Token, cfg.APIURL)
	if err != nil {
		return 0, err
	}
	repo, _, err := c.Repositories.Get(ctx, owner, name)
	if err != nil {
		return 0, fmt.Errorf("uninstall: read %s with your token: %w (is the token a repository admin's?)", cfg.Repo, err)
	}
	// Secrets: the environment's, then the repository's (init writes one or the other; the
	// repository's only when they hold init's POC_STATE_KEY).
	for _, where := range []secretsPlace{
		{path: SecretsPath(owner, name, cfg.Env), what: "of the environment " + cfg.Env},
		{path: SecretsPath(owner, name, ""), what: "of the repository", repository: cfg.Repo},
	} {
		n, err := deleteSecrets(ctx, c, where, cfg.DryRun, out)
		changes += n
		if err != nil {
			return changes, err
		}
	}
	if !cfg.DryRun {
		fmt.Fprintln(out, "✓ no secret of pocbot's left in", cfg.Repo)
	}
	n, envKept, err := environmentRemoval{c: c, owner: owner, name: name, env: cfg.Env, defaultBranch: repo.GetDefaultBranch(),
		dryRun: cfg.DryRun, out: out}.run(ctx)
	changes += n
	if err != nil {
		return changes, err
	}

	if cfg.IAM != nil {
		n, err := uninstallIAM(ctx, cfg.IAM, cfg.DryRun, out)
		changes += n
		if err != nil {
			return changes, err
		}
	}
	for _, b := range cfg.Buckets {
		n, err := deleteBucket(ctx, b, cfg.DryRun, out)
		changes += n
		if err != nil {
			return changes, err
		}
	}
	kept := ""
	if envKept {
		kept = fmt.Sprintf(", decide about the environment %s (kept: see above)", cfg.Env)
	}
	fmt.Fprintf(out, "\nLeft for you: remove %s and %s in a pull request%s, and uninstall the App from %s (Settings → GitHub Apps → Configure → Uninstall, or remove the repository from its installation).\n",
		WorkflowPath, ConfigPath, kept, cfg.Repo)
	return changes, nil
}

// checkNoClusters refuses while the state bucket holds a cluster's state; a state bucket already
// gone holds none.
func checkNoClusters(ctx context.Context, cfg UninstallConfig) error {
	gone := false
	for _, b := range cfg.Buckets {
		if b.Role == "state" && bucketGone(ctx, b) {
			fmt.Fprintf(cfg.Out, "✓ state bucket %s: gone (no cluster state left)\n", b.Name)
			gone = true
		}
	}
	if gone || cfg.Clusters == nil {
		return nil
	}
	names, err := cfg.Clusters(ctx)
	if err != nil {
		return fmt.Errorf("uninstall: list the clusters of the state bucket: %w (nothing was removed; fix the state store's settings and rerun)", err)
	}
	if len(names) > 0 {
		sort.Strings(names)
		return fmt.Errorf("uninstall: %w: %s. Comment `/poc down` on their issues (or run `bot down --cluster NAME`) first: their resources would be left without the state that deletes them. Nothing was removed", ErrClustersLeft, strings.Join(names, ", "))
	}
	fmt.Fprintln(cfg.Out, "✓ no cluster state in the state bucket")
	return nil
}

// secretsPlace is one list of Actions secrets: its API path, how the output names it, and for
// the repository's, the repository (OWNER/REPO).
type secretsPlace struct {
	path, what string
	repository string
}

// initsMarker is the secret init always writes where it writes (a required secret it can
// generate): the repository's secrets are init's target only when they hold it.
const initsMarker = "POC_STATE_KEY"

// deleteSecrets deletes the secrets init manages from one place (a dry run prints them); a missing
// environment has none. The repository's secrets of those names are deleted only when init wrote
// there (they hold initsMarker, deleted last so that a rerun still sees it); otherwise they are
// someone else's (SCW_ACCESS_KEY of another workflow, say) and are named, not deleted. It returns
// the number of deleting requests made.
func deleteSecrets(ctx context.Context, c *gh.Client, where secretsPlace, dryRun bool, out io.Writer) (int, error) {
	names, found, err := SecretNames(ctx, c, where.path)
	switch {
	case err != nil:
		return 0, fmt.Errorf("uninstall: list the secrets %s: %w", where.what, err)
	case !found:
		return 0, nil // no such environment
	}
	var ours []string
	marked := false
	for _, n := range names {
		if managedSecret(n) {
			ours = append(ours, n)
			marked = marked || strings.EqualFold(n, initsMarker)
		}
	}
	if where.repository != "" && !marked && len(ours) > 0 {
		fmt.Fprintf(out, "! the secrets %s %s kept: init wrote pocbot's secrets to the environment, not there (the repository holds no %s). "+
			"If they are pocbot's all the same: gh secret delete NAME --repo %s\n", strings.Join(ours, ", "), where.what, initsMarker, where.repository)
		return 0, nil
	}
	sort.SliceStable(ours, func(i, j int) bool {
		return !strings.EqualFold(ours[i], initsMarker) && strings.EqualFold(ours[j], initsMarker)
	})
	changes := 0
	for _, n := range ours {
		if dryRun {
			fmt.Fprintf(out, "- would delete the secret %s %s\n", n, where.what)
			continue
		}
		req, err := c.NewRequest(ctx, http.MethodDelete, where.path+"/"+url.PathEscape(n), nil)
		if err != nil {
			return changes, err
		}
		if _, err := c.Do(req, nil); err != nil {
			return changes, fmt.Errorf("uninstall: delete the secret %s %s: %w (rerun)", n, where.what, err)
		}
		changes++
		fmt.Fprintf(out, "- secret %s %s\n", n, where.what)
	}
	return changes, nil
}

// managedSecret says whether init writes a secret of that name (GitHub lists names upper-cased).
func managedSecret(name string) bool {
	n := strings.ToUpper(name)
	return slices.Contains(requiredSecrets, n) || slices.Contains(optionalSecrets, n)
}

// uninstallIAM deletes init's applications: their policies, then the application (Scaleway
// deletes its API keys with it).
func uninstallIAM(ctx context.Context, x *IAM, dryRun bool, out io.Writer) (int, error) {
	api, changes := iam.NewAPI(x.Client), 0
	for _, id := range identities {
		list, err := api.ListApplications(&iam.ListApplicationsRequest{Name: &id.name, OrganizationID: x.OrganizationID}, scw.WithAllPages(), scw.WithContext(ctx))
		if err != nil {
			return changes, fmt.Errorf("uninstall: list the IAM applications: %w (the Scaleway credentials need IAMManager)", err)
		}
		for _, a := range list.Applications {
			if a.Name != id.name {
				continue
			}
			if dryRun {
				fmt.Fprintf(out, "- would delete the IAM application %s (%s), its policy and its API keys\n", a.Name, a.ID)
				continue
			}
			pols, err := api.ListPolicies(&iam.ListPoliciesRequest{ApplicationIDs: []string{a.ID}}, scw.WithAllPages(), scw.WithContext(ctx))
			if err != nil {
				return changes, fmt.Errorf("uninstall: list the policies of %s: %w", a.Name, err)
			}
			for _, p := range pols.Policies {
				if p.Name != id.name {
					continue
				}
				if err := api.DeletePolicy(&iam.DeletePolicyRequest{PolicyID: p.ID}, scw.WithContext(ctx)); err != nil {
					return changes, fmt.Errorf("uninstall: delete the IAM policy %s: %w (rerun)", p.Name, err)
				}
				changes++
			}
			if err := api.DeleteApplication(&iam.DeleteApplicationRequest{ApplicationID: a.ID}, scw.WithContext(ctx)); err != nil {
				return changes, fmt.Errorf("uninstall: delete the IAM application %s: %w (rerun)", a.Name, err)
			}
			changes++
			fmt.Fprintf(out, "- IAM application %s (%s), its policy and its API keys\n", a.Name, a.ID)
		}
	}
	return changes, nil
}

// deleteBucket deletes every version and delete marker of a bucket, then the bucket.
func deleteBucket(ctx context.Context, b Bucket, dryRun bool, out io.Writer) (int, error) {
	c, name, changes := b.Client, aws.String(b.Name), 0
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: name}); err != nil {
		var nf *types.NotFound
		if errors.As(err, &nf) || apiCode(err) == "NotFound" || apiCode(err) == "NoSuchBucket" {
			fmt.Fprintf(out, "✓ %s bucket %s: gone\n", b.Role, b.Name)
			return 0, nil
		}
		return 0, fmt.Errorf("uninstall: read the %s bucket %s: %w", b.Role, b.Name, err)
	}
	if dryRun {
		fmt.Fprintf(out, "- would empty (every version) and delete the %s bucket %s\n", b.Role, b.Name)
		return 0, nil
	}
	p := s3.NewListObjectVersionsPaginator(c, &s3.ListObjectVersionsInput{Bucket: name})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return changes, fmt.Errorf("uninstall: list the objects of the %s bucket %s: %w (rerun)", b.Role, b.Name, err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		for _, id := range ids {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: name, Key: id.Key, VersionId: id.VersionId}); err != nil {
				return changes, fmt.Errorf("uninstall: delete %s of the %s bucket %s: %w (rerun)", aws.ToString(id.Key), b.Role, b.Name, err)
			}
			changes++
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: name}); err != nil {
		return changes, fmt.Errorf("uninstall: delete the %s bucket %s: %w (rerun)", b.Role, b.Name, err)
	}
	changes++
	fmt.Fprintf(out, "- %s bucket %s and its objects\n", b.Role, b.Name)
	return changes, nil
}

// bucketGone tells whether a bucket is known not to exist (any other answer: it may).
func bucketGone(ctx context.Context, b Bucket) bool {
	_, err := b.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(b.Name)})
	var nf *types.NotFound
	return err != nil && (errors.As(err, &nf) || apiCode(err) == "NotFound" || apiCode(err) == "NoSuchBucket")
}
