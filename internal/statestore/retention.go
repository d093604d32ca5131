package statestore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNoVersionExpiry: the state bucket keeps every version of every object (versioning on) and
// no lifecycle rule expires the noncurrent ones. Every state write, lock renewal and backend
// probe leaves a version behind, so the bucket grows without bound.
var ErrNoVersionExpiry = errors.New("versioned bucket without an expiry of noncurrent versions")

// ErrMarkersKept: the state bucket's lifecycle rules expire no delete marker (no
// ExpiredObjectDeleteMarker). pocbot deletes the versions of what it removes, so its own deletes
// leave none; another tool's deletes would pile up. A warning, not a failure.
var ErrMarkersKept = errors.New("lifecycle without an expiry of delete markers")

// LifecycleRuleExample is the rule docs/install.md asks for, as `aws s3api` JSON.
const LifecycleRuleExample = `{"Rules":[{"ID":"pocbot-noncurrent","Status":"Enabled","Filter":{"Prefix":""},` +
	`"Expiration":{"ExpiredObjectDeleteMarker":true},` +
	`"NoncurrentVersionExpiration":{"NoncurrentDays":30},"AbortIncompleteMultipartUpload":{"DaysAfterInitiation":1}}]}`

// NoncurrentDays is how long a noncurrent version is kept: the lifecycle bound of the state
// bucket.
const NoncurrentDays = 30

// Lifecycle is the lifecycle configuration `bot init` puts on its buckets: LifecycleRuleExample as
// the SDK's type, the rule CheckVersionRetention accepts (TestLifecycleIsWhatIsChecked). With
// markers false it leaves out ExpiredObjectDeleteMarker, which Scaleway does not document
// (register row delete-markers): init falls back to it when the bucket refuses the element.
func Lifecycle(markers bool) *types.BucketLifecycleConfiguration {
	rule := types.LifecycleRule{
		ID:                             aws.String("pocbot-noncurrent"),
		Status:                         types.ExpirationStatusEnabled,
		Filter:                         &types.LifecycleRuleFilter{Prefix: aws.String("")},
		NoncurrentVersionExpiration:    &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(NoncurrentDays)},
		AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(1)},
	}
	if markers {
		rule.Expiration = &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)}
	}
	return &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{rule}}
}

// RetentionVerdict is CheckVersionRetention's judgement on a bucket's versioning status and
// lifecycle rules, for a caller that read them itself (`bot init`, deciding whether to put
// Lifecycle). bucket names it in the error.
func RetentionVerdict(bucket string, versioning types.BucketVersioningStatus, rules []types.LifecycleRule) error {
	return retentionVerdict(bucket, versioning, rules)
}

// CheckVersionRetention reports (ErrNoVersionExpiry) a state bucket whose versioning is on but
// whose lifecycle configuration expires no noncurrent version of the objects pocbot writes; nil
// when versioning is off or suspended, for file:// state, or when such a rule exists. It reads the
// bucket's versioning and lifecycle configuration (s3:GetBucketVersioning,
// s3:GetLifecycleConfiguration); it changes nothing. `bot doctor` may call it beside
// CheckBackend.
func (s *Store) CheckVersionRetention(ctx context.Context) error {
	be := s.be
	if t, ok := be.(traced); ok {
		be = t.backend
	}
	bb, ok := be.(*blobBackend)
	if !ok {
		return nil
	}
	var c *s3.Client
	if !bb.b.As(&c) || bb.name == "" {
		return nil
	}
	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bb.name)})
	if err != nil {
		return fmt.Errorf("check the versioning of %s: %w", bb.describe(), err)
	}
	var rules []types.LifecycleRule
	if v.Status == types.BucketVersioningStatusEnabled {
		lc, err := c.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bb.name)})
		var ae smithy.APIError
		switch {
		case errors.As(err, &ae) && ae.ErrorCode() == "NoSuchLifecycleConfiguration":
		case err != nil:
			return fmt.Errorf("check the lifecycle rules of %s: %w", bb.describe(), err)
		default:
			rules = lc.Rules
		}
	}
	return retentionVerdict(bb.describe(), v.Status, rules)
}

// retentionVerdict decides on what the bucket answered: versioning on needs an enabled rule that
// expires noncurrent versions and applies to every prefix pocbot writes (an empty prefix, or one
// rule per prefix is not recognised: keep it simple and whole-bucket), and, short of a failure,
// one that expires delete markers (ErrMarkersKept otherwise).
func retentionVerdict(bucket string, versioning types.BucketVersioningStatus, rules []types.LifecycleRule) error {
	if versioning != types.BucketVersioningStatusEnabled {
		return nil
	}
	noncurrent, markers := false, false
	for _, r := range rules {
		if r.Status != types.ExpirationStatusEnabled || rulePrefix(r) != "" {
			continue
		}
		if r.NoncurrentVersionExpiration != nil && aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) > 0 {
			noncurrent = true
		}
		if r.Expiration != nil && aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) {
			markers = true
		}
	}
	switch {
	case noncurrent && markers:
		return nil
	case noncurrent:
		return fmt.Errorf("%w: %s expires noncurrent versions but no delete marker (ExpiredObjectDeleteMarker); pocbot deletes every version of what it removes, "+
			"so only other tools' deletes leave markers behind: add the element (%s) if the bucket accepts it", ErrMarkersKept, bucket, LifecycleRuleExample)
	}
	return fmt.Errorf("%w: %s has versioning on and no enabled lifecycle rule expiring noncurrent versions of the whole bucket; "+
		"every state write and lock renewal leaves a version behind. Add one (docs/install.md, \"Versioning and lifecycle\"): "+
		"aws s3api put-bucket-lifecycle-configuration --bucket BUCKET --endpoint-url https://s3.fr-par.scw.cloud --lifecycle-configuration '%s'",
		ErrNoVersionExpiry, bucket, LifecycleRuleExample)
}

// rulePrefix is the key prefix a rule is limited to ("" = the whole bucket); a rule filtered on
// tags or sizes applies to less than the whole bucket and yields a non-empty marker.
func rulePrefix(r types.LifecycleRule) string {
	if r.Filter == nil {
		return aws.ToString(r.Prefix) //nolint:staticcheck // the legacy top-level prefix
	}
	f := r.Filter
	if f.And != nil || f.Tag != nil || f.ObjectSizeGreaterThan != nil || f.ObjectSizeLessThan != nil {
		return "(filtered)"
	}
	return strings.TrimSpace(aws.ToString(f.Prefix))
}
