package objstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// TestVersityConditionalWrites checks the S3 semantics the state store relies on, through the
// same gocloud.dev/blob driver it uses: If-None-Match on create, If-Match on replace and delete.
func TestVersityConditionalWrites(t *testing.T) {
	t.Parallel()
	s := objstoretest.Versity(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	objstoretest.Bucket(t, s, "state")
	b, err := s.OpenBucket(ctx, "state")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	put := func(data string, opts *blob.WriterOptions) error {
		return b.WriteAll(ctx, "k", []byte(data), opts)
	}
	ifMatch := func(etag string) *blob.WriterOptions {
		return &blob.WriterOptions{BeforeWrite: func(as func(any) bool) error {
			var in *transfermanager.UploadObjectInput
			if !as(&in) {
				t.Fatal("s3blob writer does not expose UploadObjectInput")
			}
			in.IfMatch = aws.String(etag)
			return nil
		}}
	}
	etagOf := func() string {
		a, err := b.Attributes(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return a.ETag
	}

	if err := put("one", &blob.WriterOptions{IfNotExist: true}); err != nil {
		t.Fatalf("first IfNotExist write: %v", err)
	}
	if err := put("two", &blob.WriterOptions{IfNotExist: true}); gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("second IfNotExist write: got %v, want FailedPrecondition", err)
	}
	e1 := etagOf()
	if err := put("three", ifMatch(`"0123456789abcdef0123456789abcdef"`)); gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("If-Match with a wrong ETag: got %v, want FailedPrecondition", err)
	}
	if err := put("four", ifMatch(e1)); err != nil {
		t.Fatalf("If-Match with the current ETag: %v", err)
	}
	got, err := b.ReadAll(ctx, "k")
	if err != nil || string(got) != "four" {
		t.Fatalf("read back: %q, %v", got, err)
	}
}

// TestDeleteConditionsByDialect: a DeleteObject with a stale If-Match deletes anyway in Scaleway's
// dialect (the default: the header is ignored), is refused with 501 where it is rejected, and
// fails with 412 on a generic S3 server. A failed conditional PutObject is a bare 412.
func TestDeleteConditionsByDialect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode       objstore.DeleteConditions
		wantStatus int  // of the stale conditional delete; 0 = success
		gone       bool // the object is gone afterwards
	}{
		{objstore.DeleteConditionsIgnored, 0, true},
		{objstore.DeleteConditionsRejected, http.StatusNotImplemented, false},
		{objstore.DeleteConditionsHonoured, http.StatusPreconditionFailed, false},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			s := objstoretest.VersityWith(t, objstore.Options{DeleteConditions: tc.mode})
			ctx := t.Context()
			objstoretest.Bucket(t, s, "state")
			c := s.Client()
			put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("k"), Body: strings.NewReader("one")})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("state"), Key: aws.String("k"), Body: strings.NewReader("two"), IfNoneMatch: aws.String("*")})
			var re *smithyhttp.ResponseError
			if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
				t.Fatalf("second create with If-None-Match: %v, want a 412", err)
			}
			_, err = c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("state"), Key: aws.String("k"), IfMatch: aws.String(`"0123456789abcdef0123456789abcdef"`)})
			switch {
			case tc.wantStatus == 0 && err != nil:
				t.Fatalf("stale conditional delete: %v, want it done", err)
			case tc.wantStatus != 0 && (!errors.As(err, &re) || re.HTTPStatusCode() != tc.wantStatus):
				t.Fatalf("stale conditional delete: %v, want status %d", err, tc.wantStatus)
			}
			_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("state"), Key: aws.String("k")})
			if gone := err != nil; gone != tc.gone {
				t.Fatalf("after the stale conditional delete: gone=%v (%v), want %v", gone, err, tc.gone)
			}
			if !tc.gone {
				if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("state"), Key: aws.String("k"), IfMatch: put.ETag}); err != nil && tc.mode == objstore.DeleteConditionsHonoured {
					t.Fatalf("delete with the current ETag: %v", err)
				}
			}
		})
	}
}

// TestPresignNeedsIAMAndBucketPolicy: Scaleway grants a request what IAM and the bucket policy
// both allow. A presigned GET signed by a key whose IAM grants nothing is a 403 although the
// bucket policy allows it; with ObjectStorageObjectsRead it downloads, and still only public/.
func TestPresignNeedsIAMAndBucketPolicy(t *testing.T) {
	t.Parallel()
	s := objstoretest.Versity(t)
	ctx := t.Context()
	const bucket, ak, sk = "links", "PRESIGNONLY000000001", "presign-secret-0000000000000000000000001"
	objstoretest.Bucket(t, s, bucket)
	if err := s.AddUser(ctx, ak, sk); err != nil {
		t.Fatal(err)
	}
	policy := `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": ["` + ak + `"]},
		"Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::` + bucket + `/public/*"]}]}`
	if err := s.PutBucketPolicy(ctx, bucket, policy); err != nil {
		t.Fatal(err)
	}
	root, err := s.OpenBucket(ctx, bucket)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, k := range []string{"public/x", "clusters/secret"} {
		if err := root.WriteAll(ctx, k, []byte("data of "+k), nil); err != nil {
			t.Fatal(err)
		}
	}
	signer, err := s.OpenBucketAs(ctx, bucket, ak, sk)
	if err != nil {
		t.Fatal(err)
	}
	defer signer.Close()
	get := func(key string) int {
		u, err := signer.SignedURL(ctx, key, &blob.SignedURLOptions{Expiry: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := s.HTTPClient().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("public/x"); got != http.StatusForbidden {
		t.Fatalf("presigned GET by a key without IAM: %d, want 403 (IAM grants nothing)", got)
	}
	s.GrantIAM(ak, objstore.AccessObjectsRead)
	if got := get("public/x"); got != http.StatusOK {
		t.Fatalf("presigned GET of public/ by a key with IAM read and the bucket policy: %d, want 200", got)
	}
	if got := get("clusters/secret"); got != http.StatusForbidden {
		t.Fatalf("presigned GET outside public/: %d, want 403 (the bucket policy)", got)
	}
}

func TestBucketURLAndClose(t *testing.T) {
	s := objstoretest.Versity(t)
	objstoretest.Bucket(t, s, "viaurl")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	b, err := blob.OpenBucket(ctx, s.BucketURL("viaurl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAll(ctx, "x", []byte("hello"), nil); err != nil {
		t.Fatalf("write through BucketURL: %v", err)
	}
	b.Close()
	// The posix backend stores the object as a plain file: proof the server used our dir.
	if data, err := os.ReadFile(s.Dir + "/viaurl/x"); err != nil || string(data) != "hello" {
		t.Fatalf("object on disk: %q, %v", data, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	resp, err := http.Get(s.Endpoint)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		t.Fatalf("server still answers after Close: %s", resp.Status)
	}
}

func TestLookVersityMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := objstore.LookVersity()
	if !errors.Is(err, objstore.ErrNoVersity) {
		t.Fatalf("got %v, want ErrNoVersity", err)
	}
	_, err = objstore.StartVersity(t.Context(), t.TempDir())
	if !errors.Is(err, objstore.ErrNoVersity) {
		t.Fatalf("StartVersity: got %v, want ErrNoVersity", err)
	}
}
