package repoinit

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/pocbot/pocbot/internal/statestore"
)

// Bucket is one Object Storage bucket init makes (the state bucket, the image bucket), with a
// client signed by the administrator's key.
type Bucket struct {
	Role   string // "state" or "image", for the messages
	Name   string
	Client *s3.Client
}

// buckets makes each bucket that is missing (an existing one is kept), turns its versioning on and
// adds the lifecycle rule that expires noncurrent versions (statestore.Lifecycle, the rule
// `bot doctor` checks) beside the rules it already has. Each step reads first, so a rerun after a
// failure does only what is left.
func (r *runner) buckets(ctx context.Context) error {
	for _, b := range r.cfg.Buckets {
		if err := r.bucket(ctx, b); err != nil {
			return err
		}
	}
	return nil
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func (r *runner) bucket(ctx context.Context, b Bucket) error {
	c, name := b.Client, aws.String(b.Name)
	_, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: name})
	var nf *types.NotFound
	switch {
	case err == nil:
		fmt.Fprintf(r.out, "✓ %s bucket %s (kept)\n", b.Role, b.Name)
	case errors.As(err, &nf) || apiCode(err) == "NotFound" || apiCode(err) == "NoSuchBucket":
		if r.cfg.DryRun {
			fmt.Fprintf(r.out, "+ would create the %s bucket %s, turn its versioning on and add the lifecycle rule %s\n", b.Role, b.Name, statestore.LifecycleRuleExample)
			return nil
		}
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: name}); err != nil && apiCode(err) != "BucketAlreadyOwnedByYou" {
			if apiCode(err) == "BucketAlreadyExists" {
				return fmt.Errorf("init: the %s bucket name %s is taken by another account (bucket names are global in a region): choose another name in its URL and rerun", b.Role, b.Name)
			}
			return fmt.Errorf("init: create the %s bucket %s: %w (the Scaleway key needs ObjectStorageFullAccess; rerun)", b.Role, b.Name, err)
		}
		r.rep.Changes++
		fmt.Fprintf(r.out, "+ %s bucket %s\n", b.Role, b.Name)
	default:
		return fmt.Errorf("init: read the %s bucket %s: %w (a 403: the name is another account's, or the key lacks ObjectStorageFullAccess)", b.Role, b.Name, err)
	}

	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: name})
	if err != nil {
		return fmt.Errorf("init: read the versioning of the %s bucket %s: %w", b.Role, b.Name, err)
	}
	if v.Status != types.BucketVersioningStatusEnabled {
		if r.cfg.DryRun {
			fmt.Fprintf(r.out, "+ would turn the versioning of the %s bucket %s on\n", b.Role, b.Name)
		} else {
			if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: name,
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				return fmt.Errorf("init: turn the versioning of the %s bucket %s on: %w (rerun)", b.Role, b.Name, err)
			}
			r.rep.Changes++
			fmt.Fprintf(r.out, "+ versioning of the %s bucket %s: on\n", b.Role, b.Name)
		}
	} else {
		fmt.Fprintf(r.out, "✓ versioning of the %s bucket %s\n", b.Role, b.Name)
	}

	var rules []types.LifecycleRule
	lc, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: name})
	switch {
	case apiCode(err) == "NoSuchLifecycleConfiguration":
	case err != nil:
		return fmt.Errorf("init: read the lifecycle rules of the %s bucket %s: %w", b.Role, b.Name, err)
	default:
		rules = lc.Rules
	}
	verdict := statestore.RetentionVerdict(b.Name, types.BucketVersioningStatusEnabled, rules)
	if verdict == nil {
		fmt.Fprintf(r.out, "✓ lifecycle of the %s bucket %s: noncurrent versions and delete markers expire\n", b.Role, b.Name)
		return nil
	}
	if r.cfg.DryRun {
		fmt.Fprintf(r.out, "+ would add the lifecycle rule %s to the %s bucket %s\n", statestore.LifecycleRuleExample, b.Role, b.Name)
		return nil
	}
	put := func(markers bool) error {
		want := statestore.Lifecycle(markers)
		for _, rule := range rules { // keep the owner's other rules; replace a disabled or changed one of ours
			if aws.ToString(rule.ID) != aws.ToString(want.Rules[0].ID) {
				want.Rules = append(want.Rules, rule)
			}
		}
		_, err := c.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: name, LifecycleConfiguration: want})
		return err
	}
	err = put(true)
	if apiCode(err) == "MalformedXML" || apiCode(err) == "InvalidRequest" || apiCode(err) == "NotImplemented" {
		// Register row delete-markers, reading refused: ExpiredObjectDeleteMarker is not in
		// Scaleway's documented list. The bot deletes every version of what it removes, so the
		// rule without it is enough for pocbot's own objects.
		if errors.Is(verdict, statestore.ErrMarkersKept) {
			fmt.Fprintf(r.out, "✓ lifecycle of the %s bucket %s: noncurrent versions expire (the bucket refuses ExpiredObjectDeleteMarker: pocbot deletes every version of what it removes)\n", b.Role, b.Name)
			return nil
		}
		fmt.Fprintf(r.out, "! the %s bucket %s refuses ExpiredObjectDeleteMarker in a lifecycle rule: the rule goes without it (pocbot deletes every version of what it removes)\n", b.Role, b.Name)
		err = put(false)
	}
	if err != nil {
		return fmt.Errorf("init: put the lifecycle rule on the %s bucket %s: %w (rerun)", b.Role, b.Name, err)
	}
	r.rep.Changes++
	fmt.Fprintf(r.out, "+ lifecycle of the %s bucket %s: noncurrent versions expire after %d days\n", b.Role, b.Name, statestore.NoncurrentDays)
	return nil
}
