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
)

// ErrClustersLeft refuses an uninstall while the state bucket holds a cluster's state.
var ErrClustersLeft = errors.New("clusters are still up")

// UninstallConfig is one run of uninstall (`bot uninstall`).
type UninstallConfig struct {
	Repo   string // OWNER/REPO
	Env    string // the environment that holds the secrets (default poc)
	APIURL string
	Token  string // a repository admin's token (never printed)
	// AppKey is the App's private key (PEM): it checks init's record (RecordVariable). Without
	// it no secret is deleted.
	AppKey []byte
	// Clusters lists the clusters whose state the bucket holds; uninstall refuses while there is one.
	Clusters func(ctx context.Context) ([]string, error)
	// IAM, when set, deletes this repository's API keys on the project's applications of pocbot's,
	// and an application once no other repository or project uses it (uninstallIAM).
	IAM *IAM
	// Buckets, when given, are emptied (every version) and deleted (shared too).
	Buckets   []Bucket
	DryRun    bool
	Out       io.Writer
	Transport http.RoundTripper
}

// Uninstall removes what init made, in an order that a rerun can always finish: it refuses first
// while a cluster's state exists (its resources would be left without a state to delete them by),
// then deletes the secrets init's record (RecordVariable) names, the environment that held them
// when nothing else is in it (environmentRemoval), the IAM identities, the buckets, and last the
// record (kept, rewritten, while it still names IAM identities). What is gone already is skipped. It
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
	store, rec, err := openRecord(ctx, c, owner, name, cfg.AppKey, out)
	if err != nil {
		return 0, err
	}
	// Secrets: only those init's record says it wrote, where it wrote them.
	for _, where := range secretPlaces(owner, name, cfg.Env, rec) {
		n, err := deleteSecrets(ctx, c, where, rec, cfg.DryRun, out)
		changes += n
		if err != nil {
			return changes, err
		}
	}
	n, envKept, err := environmentRemoval{c: c, owner: owner, name: name, env: cfg.Env, defaultBranch: repo.GetDefaultBranch(),
		rec: rec, dryRun: cfg.DryRun, out: out}.run(ctx)
	changes += n
	if err != nil {
		return changes, err
	}

	if cfg.IAM != nil {
		n, err := uninstallIAM(ctx, cfg.IAM, cfg.Repo, rec, cfg.DryRun, out)
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
	n, err = closeRecord(ctx, store, rec, cfg.DryRun, out)
	changes += n
	if err != nil {
		return changes, err
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

// secretsPlace is one list of Actions secrets: its API path, how the output names it, the
// environment ("": the repository's secrets) and the gh flags that name it.
type secretsPlace struct {
	path, what, env, flags string
}

// secretPlaces are where uninstall looks: the environment, every other place init's record names,
// the repository's secrets.
func secretPlaces(owner, name, env string, rec *record) []secretsPlace {
	repo := owner + "/" + name
	envs := []string{env}
	for _, s := range rec.Secrets {
		if s.Env != "" && !slices.ContainsFunc(envs, func(e string) bool { return strings.EqualFold(e, s.Env) }) {
			envs = append(envs, s.Env)
		}
	}
	var out []secretsPlace
	for _, e := range envs {
		out = append(out, secretsPlace{path: SecretsPath(owner, name, e), what: "of the environment " + e, env: e, flags: "--repo " + repo + " --env " + e})
	}
	return append(out, secretsPlace{path: SecretsPath(owner, name, ""), what: "of the repository", flags: "--repo " + repo})
}

// deleteSecrets deletes, from one place, the secrets init's record says it wrote there (a dry run
// prints them; a missing environment has none); a secret of pocbot's name that init did not write
// there (another workflow's SCW_ACCESS_KEY, say, or one set by hand) is named and kept. It returns
// the number of deleting requests made.
func deleteSecrets(ctx context.Context, c *gh.Client, where secretsPlace, rec *record, dryRun bool, out io.Writer) (int, error) {
	names, found, err := SecretNames(ctx, c, where.path)
	switch {
	case err != nil:
		return 0, fmt.Errorf("uninstall: list the secrets %s: %w", where.what, err)
	case !found:
		return 0, nil // no such environment
	}
	var ours, kept []string
	for _, n := range names {
		switch {
		case rec.wrote(n, where.env):
			ours = append(ours, n)
		case managedSecret(n):
			kept = append(kept, n)
		}
	}
	if len(kept) > 0 {
		fmt.Fprintf(out, "! the secrets %s %s kept: init's record does not say it wrote them there. If they are pocbot's all the same: gh secret delete NAME %s\n",
			strings.Join(kept, ", "), where.what, where.flags)
	}
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
		if resp, err := c.Do(req, nil); err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
			return changes, fmt.Errorf("uninstall: delete the secret %s %s: %w (rerun)", n, where.what, err)
		}
		changes++
		fmt.Fprintf(out, "- secret %s %s\n", n, where.what)
	}
	if !dryRun {
		// What the record names and is not there any more (deleted now, or never written by
		// a run cut after recording it) is forgotten.
		for _, w := range slices.Clone(rec.Secrets) {
			if strings.EqualFold(w.Env, where.env) {
				rec.forgetSecret(w.Name, w.Env)
			}
		}
	}
	return changes, nil
}

// managedSecret says whether init writes a secret of that name (GitHub lists names upper-cased).
func managedSecret(name string) bool {
	n := strings.ToUpper(name)
	return slices.Contains(requiredSecrets, n) || slices.Contains(optionalSecrets, n)
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
