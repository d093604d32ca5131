package objstore_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/sim/objstore"
	"github.com/pocbot/pocbot/internal/sim/objstore/objstoretest"
)

// TestVersityConditionalWrites checks the S3 semantics the state store relies on, through the
// same gocloud.dev/blob driver it uses: If-None-Match on create, If-Match on replace and delete.
func TestVersityConditionalWrites(t *testing.T) {
	s := objstoretest.Versity(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	// Conditional delete with the stale ETag must be refused.
	delIf := func(etag string) error {
		return b.DeleteWithOptions(ctx, "k", &blob.DeleteOptions{BeforeDelete: func(as func(any) bool) error {
			var in *s3.DeleteObjectInput
			if !as(&in) {
				t.Fatal("s3blob does not expose DeleteObjectInput")
			}
			in.IfMatch = aws.String(etag)
			return nil
		}})
	}
	if err := delIf(e1); gcerrors.Code(err) != gcerrors.FailedPrecondition {
		t.Fatalf("delete with stale ETag: got %v, want FailedPrecondition", err)
	}
	if err := delIf(etagOf()); err != nil {
		t.Fatalf("delete with current ETag: %v", err)
	}
	if _, err := b.ReadAll(ctx, "k"); gcerrors.Code(err) != gcerrors.NotFound {
		t.Fatalf("after delete: got %v, want NotFound", err)
	}
}

func TestBucketURLAndClose(t *testing.T) {
	s := objstoretest.Versity(t)
	objstoretest.Bucket(t, s, "viaurl")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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
	_, err = objstore.StartVersity(context.Background(), t.TempDir())
	if !errors.Is(err, objstore.ErrNoVersity) {
		t.Fatalf("StartVersity: got %v, want ErrNoVersity", err)
	}
}
