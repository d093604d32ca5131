package repoinit

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/pocbot/pocbot/internal/assume"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/statestore"
)

// startS3 runs the Object Storage stand-in and records the mutating requests it receives.
func startS3(t *testing.T) (*objstore.Server, func() []string) {
	t.Helper()
	s := objstoretest.Versity(t)
	return s, objstoretest.Writes(s)
}

// init makes the state and image buckets with versioning and the lifecycle rule `bot doctor`
// checks; a second run makes no write to Object Storage; an existing rule of the owner's is kept.
func TestInitMakesBuckets(t *testing.T) {
	t.Parallel()
	s3s, writes := startS3(t)
	f := newFixture(t, "acme/shop")
	c := s3s.Client()
	buckets := []Bucket{{Role: "state", Name: "acme-poc-state", Client: c}, {Role: "image", Name: "acme-poc-images", Client: c}}

	_, out, err := f.run(t, func(cfg *Config) { cfg.Buckets, cfg.DryRun = buckets, true })
	if err != nil || !strings.Contains(out, "+ would create the state bucket acme-poc-state") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if w := writes(); len(w) != 0 {
		t.Fatalf("the dry run wrote to Object Storage: %v", w)
	}

	_, out, err = f.run(t, func(cfg *Config) { cfg.Buckets = buckets })
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if w := writes(); len(w) != 6 { // per bucket: create, versioning, lifecycle
		t.Fatalf("init made %d writes to Object Storage, want 6: %v\n%s", len(w), w, out)
	}
	for _, b := range buckets {
		v, err := c.GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String(b.Name)})
		if err != nil || v.Status != types.BucketVersioningStatusEnabled {
			t.Fatalf("versioning of %s after init: %v %v", b.Name, v, err)
		}
	}
	// What statestore.CheckVersionRetention (bot doctor) reads and judges.
	for _, b := range buckets {
		lc, err := c.GetBucketLifecycleConfiguration(t.Context(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(b.Name)})
		if err != nil {
			t.Fatalf("lifecycle of %s after init: %v", b.Name, err)
		}
		if err := statestore.RetentionVerdict(b.Name, types.BucketVersioningStatusEnabled, lc.Rules); err != nil {
			t.Fatalf("doctor's verdict on %s after init: %v", b.Name, err)
		}
	}

	_, out, err = f.run(t, func(cfg *Config) { cfg.Buckets = buckets })
	if err != nil || !strings.Contains(out, "✓ lifecycle of the state bucket") {
		t.Fatalf("second init: %v\n%s", err, out)
	}
	if w := writes(); len(w) != 0 {
		t.Fatalf("the second init wrote to Object Storage: %v\n%s", w, out)
	}

	// The owner's own rule stays when ours is missing.
	own := &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{ID: aws.String("owner-logs"), Status: types.ExpirationStatusEnabled,
		Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(7)}}}}
	if _, err := c.PutBucketLifecycleConfiguration(t.Context(), &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("acme-poc-images"), LifecycleConfiguration: own}); err != nil {
		t.Fatal(err)
	}
	writes()
	if _, out, err = f.run(t, func(cfg *Config) { cfg.Buckets = buckets }); err != nil {
		t.Fatalf("third init: %v\n%s", err, out)
	}
	lc, err := c.GetBucketLifecycleConfiguration(t.Context(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("acme-poc-images")})
	if err != nil || len(lc.Rules) != 2 || statestore.RetentionVerdict("images", types.BucketVersioningStatusEnabled, lc.Rules) != nil {
		t.Fatalf("lifecycle after init on a bucket with the owner's rule: %v %+v", err, lc)
	}
}

// Register row delete-markers: where the bucket refuses ExpiredObjectDeleteMarker (Scaleway does
// not document it), init writes the rule without it and says so, and a rerun changes nothing;
// where it accepts it, an installation whose rule predates it gets it.
func TestInitLifecycleUnderEveryDeleteMarkersReading(t *testing.T) {
	t.Parallel()
	for _, reading := range assume.MustLookup(assume.DeleteMarkers).Values() {
		t.Run(reading, func(t *testing.T) {
			s3s := objstoretest.VersityWith(t, objstore.Options{}.WithReadings(assume.Readings{assume.DeleteMarkers: reading}))
			c := s3s.Client()
			buckets := []Bucket{{Role: "state", Name: "acme-poc-state", Client: c}}
			if err := s3s.CreateBucket(t.Context(), "acme-poc-state"); err != nil {
				t.Fatal(err)
			}
			// An installation of before: versioned, the rule without the markers' element.
			if _, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String("acme-poc-state"),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutBucketLifecycleConfiguration(t.Context(), &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("acme-poc-state"),
				LifecycleConfiguration: statestore.Lifecycle(false)}); err != nil {
				t.Fatal(err)
			}
			f := newFixture(t, "acme/shop")
			rep, out, err := f.run(t, func(cfg *Config) { cfg.Buckets = buckets })
			if err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			lc, err := c.GetBucketLifecycleConfiguration(t.Context(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("acme-poc-state")})
			if err != nil {
				t.Fatal(err)
			}
			verdict := statestore.RetentionVerdict("state", types.BucketVersioningStatusEnabled, lc.Rules)
			if reading == "refused" {
				if !errors.Is(verdict, statestore.ErrMarkersKept) || !strings.Contains(out, "refuses ExpiredObjectDeleteMarker") {
					t.Fatalf("verdict %v after init:\n%s", verdict, out)
				}
			} else if verdict != nil {
				t.Fatalf("verdict %v after init: the rule has no ExpiredObjectDeleteMarker\n%s", verdict, out)
			}
			before := rep.Changes
			rep, out, err = f.run(t, func(cfg *Config) { cfg.Buckets = buckets })
			if err != nil || rep.Changes != 0 || !strings.Contains(out, "✓ lifecycle of the state bucket") {
				t.Fatalf("second init: %v (%d changes, %d before)\n%s", err, rep.Changes, before, out)
			}
		})
	}
}
