package statestore

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

func TestRetentionVerdict(t *testing.T) {
	t.Parallel()
	expire := func(days int32, status types.ExpirationStatus, f *types.LifecycleRuleFilter) types.LifecycleRule {
		return types.LifecycleRule{Status: status, Filter: f, Expiration: &types.LifecycleExpiration{ExpiredObjectDeleteMarker: aws.Bool(true)},
			NoncurrentVersionExpiration: &types.NoncurrentVersionExpiration{NoncurrentDays: aws.Int32(days)}}
	}
	whole := &types.LifecycleRuleFilter{Prefix: aws.String("")}
	for _, tc := range []struct {
		name       string
		versioning types.BucketVersioningStatus
		rules      []types.LifecycleRule
		missing    bool
	}{
		{"unversioned", "", nil, false},
		{"suspended", types.BucketVersioningStatusSuspended, nil, false},
		{"versioned, no rules", types.BucketVersioningStatusEnabled, nil, true},
		{"versioned, whole-bucket rule", types.BucketVersioningStatusEnabled, []types.LifecycleRule{expire(30, types.ExpirationStatusEnabled, whole)}, false},
		{"versioned, rule without filter", types.BucketVersioningStatusEnabled, []types.LifecycleRule{expire(7, types.ExpirationStatusEnabled, nil)}, false},
		{"versioned, disabled rule", types.BucketVersioningStatusEnabled, []types.LifecycleRule{expire(30, types.ExpirationStatusDisabled, whole)}, true},
		{"versioned, rule on one prefix", types.BucketVersioningStatusEnabled,
			[]types.LifecycleRule{expire(30, types.ExpirationStatusEnabled, &types.LifecycleRuleFilter{Prefix: aws.String("images/")})}, true},
		{"versioned, rule on a tag", types.BucketVersioningStatusEnabled,
			[]types.LifecycleRule{expire(30, types.ExpirationStatusEnabled, &types.LifecycleRuleFilter{Tag: &types.Tag{Key: aws.String("k"), Value: aws.String("v")}})}, true},
		{"versioned, only current-version expiry", types.BucketVersioningStatusEnabled,
			[]types.LifecycleRule{{Status: types.ExpirationStatusEnabled, Filter: whole, Expiration: &types.LifecycleExpiration{Days: aws.Int32(30)}}}, true},
		{"versioned, noncurrent versions but no delete markers", types.BucketVersioningStatusEnabled,
			Lifecycle(false).Rules, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := retentionVerdict("s3://b", tc.versioning, tc.rules)
			if got := errors.Is(err, ErrNoVersionExpiry); got != tc.missing {
				t.Fatalf("verdict %v, want missing=%v", err, tc.missing)
			}
			// A rule without ExpiredObjectDeleteMarker is a warning of its own.
			if got, want := errors.Is(err, ErrMarkersKept), !tc.missing && err != nil; got != want || (got && tc.name != "versioned, noncurrent versions but no delete markers") {
				t.Fatalf("verdict %v: markers kept %v", err, got)
			}
			if tc.missing && (!strings.Contains(err.Error(), "put-bucket-lifecycle-configuration") || !strings.Contains(err.Error(), "NoncurrentVersionExpiration")) {
				t.Fatalf("the refusal does not say how to fix it: %v", err)
			}
		})
	}
}

func TestCheckVersionRetentionOnTheStandIn(t *testing.T) {
	t.Parallel()
	for _, w := range worlds(t) {
		t.Run(w.name, func(t *testing.T) {
			// An unversioned bucket: nothing grows.
			st := w.open(t, newKey(t))
			if err := st.CheckVersionRetention(t.Context()); err != nil {
				t.Fatal(err)
			}
			if w.srv == nil {
				return
			}
			// Versioning on (the stand-in runs versitygw with --versioning-dir), no rule: reported;
			// with the rule `bot init` puts: not.
			u, _ := url.Parse(w.cfg("").StateURL)
			c := w.srv.Client()
			if _, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(u.Host),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckVersionRetention(t.Context()); !errors.Is(err, ErrNoVersionExpiry) {
				t.Fatalf("versioned bucket without a rule: %v", err)
			}
			if _, err := c.PutBucketLifecycleConfiguration(t.Context(), &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(u.Host), LifecycleConfiguration: Lifecycle(true)}); err != nil {
				t.Fatal(err)
			}
			if err := st.CheckVersionRetention(t.Context()); err != nil {
				t.Fatalf("versioned bucket with init's rule: %v", err)
			}
		})
	}
}

// What `bot init` puts is what the check accepts, and what the docs show.
func TestLifecycleIsWhatIsChecked(t *testing.T) {
	t.Parallel()
	lc := Lifecycle(true)
	if err := RetentionVerdict("b", types.BucketVersioningStatusEnabled, lc.Rules); err != nil {
		t.Fatalf("the rule init puts fails the check: %v", err)
	}
	var doc struct {
		Rules []struct {
			ID                          string
			Status                      string
			NoncurrentVersionExpiration struct{ NoncurrentDays int32 }
			Expiration                  struct{ ExpiredObjectDeleteMarker bool }
		}
	}
	if err := json.Unmarshal([]byte(LifecycleRuleExample), &doc); err != nil || len(doc.Rules) != 1 {
		t.Fatalf("LifecycleRuleExample: %v", err)
	}
	r := lc.Rules[0]
	if doc.Rules[0].ID != aws.ToString(r.ID) || doc.Rules[0].Status != string(r.Status) ||
		doc.Rules[0].NoncurrentVersionExpiration.NoncurrentDays != aws.ToInt32(r.NoncurrentVersionExpiration.NoncurrentDays) ||
		doc.Rules[0].Expiration.ExpiredObjectDeleteMarker != aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) {
		t.Fatalf("LifecycleRuleExample %s differs from Lifecycle() %+v", LifecycleRuleExample, r)
	}
}
