package statestore

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/pocbot/pocbot/internal/retry"
)

// blobBackend stores objects in an S3 bucket through gocloud.dev/blob (s3blob). gocloud has no
// portable If-Match, so the S3 request is reached through the driver's As hooks; a bucket of
// another driver is refused at Open rather than used without conditional updates.
type blobBackend struct {
	b    *blob.Bucket
	name string // bucket name for messages and locations, when known
	own  bool   // close b on close
	// signer, when set, signs the GET URLs of public objects (a read-only credential's handle on
	// the same bucket); b still checks that the object exists.
	signer *blob.Bucket
}

func newBlobBackend(b *blob.Bucket, name string, own bool) (*blobBackend, error) {
	var c *s3.Client
	if !b.As(&c) {
		return nil, fmt.Errorf("state bucket is not an S3 bucket: only s3:// (and file://) buckets can do the conditional writes the state store needs")
	}
	return &blobBackend{b: b, name: name, own: own}, nil
}

func (b *blobBackend) get(ctx context.Context, key string) ([]byte, string, error) {
	r, err := b.b.NewReader(ctx, key, nil)
	if err != nil {
		return nil, "", b.mapErr(err, key)
	}
	defer r.Close()
	var out s3.GetObjectOutput
	if !r.As(&out) || aws.ToString(out.ETag) == "" {
		return nil, "", fmt.Errorf("read %s: the S3 server returned no ETag, so updates cannot be made conditional", key)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, "", b.mapErr(err, key)
	}
	return data, aws.ToString(out.ETag), nil
}

func (b *blobBackend) head(ctx context.Context, key string, n int) ([]byte, error) {
	r, err := b.b.NewRangeReader(ctx, key, 0, int64(n), nil)
	if err != nil {
		return nil, b.mapErr(err, key)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, b.mapErr(err, key)
	}
	return data, nil
}

func (b *blobBackend) create(ctx context.Context, key string, data []byte) (string, error) {
	err := retryBusy(ctx, func() error {
		if err := b.b.WriteAll(ctx, key, data, &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"}); err != nil {
			return b.mapErr(err, key)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.versionAfterWrite(ctx, key, data)
}

// busyPolicy is how a conditional write answered 409 is tried again: five tries in all, 20 ms
// then doubling; no jitter (one run's writes of one key).
var busyPolicy = retry.Policy{Attempts: 5, Wait: 20 * time.Millisecond}

// retryBusy runs a conditional write again while the server answers 409 (a concurrent
// conditional write of the same key was in flight: this one did not take effect), a few times
// with a growing pause; a key that stays busy counts as a failed precondition.
func retryBusy(ctx context.Context, write func() error) error {
	err := busyPolicy.Do(ctx, "conditional write", func(context.Context, int) retry.Outcome {
		err := write()
		return retry.Outcome{Err: err, Retry: errors.Is(err, errBusy)}
	})
	var stopped *retry.Stopped
	switch {
	case errors.As(err, &stopped):
		return stopped.Cause
	case errors.Is(err, errBusy):
		return errPrecondition
	}
	return err
}

func (b *blobBackend) replace(ctx context.Context, key string, data []byte, ifVersion string) (string, error) {
	if ifVersion == "" {
		return "", errPrecondition
	}
	opts := &blob.WriterOptions{ContentType: "application/octet-stream", BeforeWrite: func(as func(any) bool) error {
		var in *transfermanager.UploadObjectInput
		if !as(&in) {
			return errors.New("s3blob no longer exposes its upload request: cannot set If-Match")
		}
		in.IfMatch = aws.String(ifVersion)
		return nil
	}}
	err := retryBusy(ctx, func() error {
		if err := b.b.WriteAll(ctx, key, data, opts); err != nil {
			return b.mapErr(err, key)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return b.versionAfterWrite(ctx, key, data)
}

// versionAfterWrite finds the ETag of what was just written: gocloud's writer drops the PUT
// response. The object is read back and only trusted if it is our bytes; if another writer got
// in between, the version is left unknown and our next conditional write fails, as it should.
func (b *blobBackend) versionAfterWrite(ctx context.Context, key string, data []byte) (string, error) {
	a, err := b.b.Attributes(ctx, key)
	if err != nil {
		return "", b.mapErr(err, key)
	}
	sum := md5.Sum(data)
	if len(a.MD5) > 0 && a.ETag != "" {
		if bytes.Equal(a.MD5, sum[:]) {
			return a.ETag, nil
		}
		return "unknown:overwritten", nil
	}
	// The ETag is not an MD5 (multipart upload, SSE-KMS): compare the bytes.
	got, etag, err := b.get(ctx, key)
	if err != nil {
		return "", err
	}
	if bytes.Equal(got, data) {
		return etag, nil
	}
	return "unknown:overwritten", nil
}

func (b *blobBackend) write(ctx context.Context, key string, data []byte) error {
	if err := b.b.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/octet-stream"}); err != nil {
		return b.mapErr(err, key)
	}
	return nil
}

// remove deletes key; in a versioned bucket it then deletes every version of the key, the delete
// marker the delete left included. The store removes only keys nobody races for (probes,
// artifacts, public objects), so none of their history is wanted, and whether Scaleway's
// lifecycle rules ever expire a delete marker is undocumented (register row delete-markers):
// removing them here keeps the bucket from growing under every reading.
func (b *blobBackend) remove(ctx context.Context, key string) error {
	var c *s3.Client
	if b.name == "" || !b.b.As(&c) {
		if err := b.b.Delete(ctx, key); err != nil {
			return b.mapErr(err, key)
		}
		return nil
	}
	out, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(key)})
	if err != nil {
		return b.mapErr(err, key)
	}
	if !aws.ToBool(out.DeleteMarker) {
		return nil // not versioned: the object is gone
	}
	return b.purge(ctx, c, key)
}

// purge deletes every version and delete marker of key (ListObjectVersions, DeleteObject with
// VersionId: s3:DeleteObjectVersion, which ObjectStorageFullAccess grants).
func (b *blobBackend) purge(ctx context.Context, c *s3.Client, key string) error {
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(b.name), Prefix: aws.String(key)}
	for {
		page, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			return fmt.Errorf("list the versions of %s/%s to delete them: %w", b.describe(), key, err)
		}
		var ids []string
		for _, v := range page.Versions {
			if aws.ToString(v.Key) == key {
				ids = append(ids, aws.ToString(v.VersionId))
			}
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				ids = append(ids, aws.ToString(m.VersionId))
			}
		}
		for _, id := range ids {
			if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.name), Key: aws.String(key), VersionId: aws.String(id)}); err != nil {
				return fmt.Errorf("delete version %s of %s/%s: %w", id, b.describe(), key, err)
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			return nil
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

func (b *blobBackend) list(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	it := b.b.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			return keys, nil
		}
		if err != nil {
			return nil, b.mapErr(err, prefix)
		}
		if !o.IsDir {
			keys = append(keys, o.Key)
		}
	}
}

func (b *blobBackend) signedURL(ctx context.Context, key string, ttl time.Duration) (string, error) {
	if _, err := b.b.Attributes(ctx, key); err != nil {
		return "", b.mapErr(err, key)
	}
	signer := b.b
	if b.signer != nil {
		signer = b.signer
	}
	u, err := signer.SignedURL(ctx, key, &blob.SignedURLOptions{Expiry: ttl})
	if err != nil {
		return "", fmt.Errorf("sign a GET URL for %s: %w", key, err)
	}
	return u, nil
}

func (b *blobBackend) location(key string) string {
	if b.name == "" {
		return key
	}
	return "s3://" + b.name + "/" + key
}

func (b *blobBackend) describe() string {
	if b.name == "" {
		return "the S3 bucket"
	}
	return "s3://" + b.name
}

func (b *blobBackend) close() error {
	if b.own {
		return b.b.Close()
	}
	return nil
}

// mapErr turns driver errors into the store's: a missing bucket and a missing key are both
// NotFound to gocloud, so the S3 error code decides. A failed conditional write is recognised
// by its HTTP status (412), whatever its error code: Scaleway documents that the write "fails"
// (using-conditional-writes.mdx), not the code it answers with. A 409 is a conditional write
// that collided with another in flight (AWS's ConditionalRequestConflict): errBusy, retried.
func (b *blobBackend) mapErr(err error, key string) error {
	var ae smithy.APIError
	if (b.b.ErrorAs(err, &ae) || errors.As(err, &ae)) && ae.ErrorCode() == "NoSuchBucket" {
		return fmt.Errorf("%w: %s (from %s): create it, or fix the bucket name", ErrBucketMissing, b.describe(), EnvStateURL)
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case 412:
			return errPrecondition
		case 409:
			return errBusy
		}
	}
	// A bad signature or key (SignatureDoesNotMatch, InvalidAccessKeyId) is a 403 whose code
	// gocloud does not map.
	if errors.As(err, &re) && re.HTTPStatusCode() == 403 && gcerrors.Code(err) != gcerrors.FailedPrecondition {
		return fmt.Errorf("%w on %s/%s: check the S3 access key and its IAM policy (ObjectStorageFullAccess on the project): %v", ErrPermission, b.describe(), key, err)
	}
	switch gcerrors.Code(err) {
	case gcerrors.NotFound:
		return fmt.Errorf("%s: %w", key, errNotExist)
	case gcerrors.FailedPrecondition:
		return errPrecondition
	case gcerrors.PermissionDenied:
		return fmt.Errorf("%w on %s/%s: check the S3 access key and its IAM policy (ObjectStorageFullAccess on the project): %v", ErrPermission, b.describe(), key, err)
	}
	return fmt.Errorf("%s/%s: %w", b.describe(), key, err)
}
