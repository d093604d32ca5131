package world_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	iam "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	"github.com/scaleway/scaleway-sdk-go/scw"

	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
	"github.com/pocbot/pocbot/internal/sim/world"
)

// An API key made in the Scaleway stand-in's IAM works against the world's Object Storage as its
// policy says, with nothing registered by hand: full access writes, a read-only set cannot write,
// a key without an Object Storage permission set (or preferring another project) is refused, a
// read-only one reads (the bucket has no policy), and
// a deleted key is unknown. Failed on the old code: every such key was refused (AccessDenied),
// whatever its policy.
func TestIAMKeysReachObjectStorageAsTheirPolicySays(t *testing.T) {
	objstoretest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	w, err := world.Start(ctx, world.Options{Dir: t.TempDir(), TimeFactor: 0.002, S3: "versitygw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	c, err := scw.NewClient(scw.WithAPIURL(w.ScalewayURL), scw.WithAuth(w.AdminAccessKey, w.AdminSecretKey), scw.WithDefaultOrganizationID(world.OrganizationID))
	if err != nil {
		t.Fatal(err)
	}
	api := iam.NewAPI(c)
	// key makes an application whose policy grants sets on the world's project, and its key
	// preferring project.
	key := func(name, project string, sets ...string) (*iam.APIKey, *s3.Client) {
		t.Helper()
		app, err := api.CreateApplication(&iam.CreateApplicationRequest{Name: name, OrganizationID: world.OrganizationID}, scw.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := api.CreatePolicy(&iam.CreatePolicyRequest{Name: name, OrganizationID: world.OrganizationID, ApplicationID: &app.ID,
			Rules: []*iam.RuleSpecs{{PermissionSetNames: &sets, ProjectIDs: &[]string{world.ProjectID}}}}, scw.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		k, err := api.CreateAPIKey(&iam.CreateAPIKeyRequest{ApplicationID: &app.ID, DefaultProjectID: &project}, scw.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		o := s3.Options{Region: objstore.Region, BaseEndpoint: aws.String(w.S3.Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(k.AccessKey, *k.SecretKey, "")}
		s3opts.Client(&o)
		return k, s3.New(o)
	}
	put := func(cl *s3.Client, obj string) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(world.StateBucket), Key: aws.String(obj), Body: strings.NewReader("x")})
		return err
	}
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return ""
	}

	fullKey, full := key("bot", world.ProjectID, "InstancesFullAccess", "ObjectStorageFullAccess")
	if err := put(full, "probe"); err != nil {
		t.Fatalf("a key with ObjectStorageFullAccess cannot write to %s: %v", world.StateBucket, err)
	}
	if _, err := full.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(world.StateBucket), Key: aws.String("probe")}); err != nil {
		t.Errorf("a key with ObjectStorageFullAccess cannot read back: %v", err)
	}
	if err := put(full, "public/probe"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, project string
		sets          []string
		want          string
	}{
		{"no Object Storage set", world.ProjectID, []string{"InstancesFullAccess"}, "AccessDenied"},
		{"objects read only", world.ProjectID, []string{"ObjectStorageObjectsRead"}, "AccessDenied"},
		{"another preferred project", "00000000-0000-4000-8000-000000000000", []string{"ObjectStorageFullAccess"}, "AccessDenied"},
	} {
		_, cl := key(strings.ReplaceAll(tc.name, " ", "-"), tc.project, tc.sets...)
		if err := put(cl, "denied"); code(err) != tc.want {
			t.Errorf("%s: PutObject answered %v, want %s", tc.name, err, tc.want)
		}
		// Reading public/: only ObjectsRead (register row presign-scope at its default, narrowed:
		// IAM and docs/install.md's bucket policy both apply).
		_, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(world.StateBucket), Key: aws.String("public/probe")})
		if canRead := slices.Contains(tc.sets, "ObjectStorageObjectsRead"); (err == nil) != canRead {
			t.Errorf("%s: GetObject answered %v (reading allowed: %v)", tc.name, err, canRead)
		}
	}
	if err := api.DeleteAPIKey(&iam.DeleteAPIKeyRequest{AccessKey: fullKey.AccessKey}, scw.WithContext(ctx)); err != nil {
		t.Fatal(err)
	}
	if err := put(full, "after"); code(err) != "InvalidAccessKeyId" {
		t.Errorf("a deleted key: PutObject answered %v, want InvalidAccessKeyId", err)
	}
}
