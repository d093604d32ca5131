package statestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"gocloud.dev/blob"
)

// The probes of `bot doctor --live` on the state bucket: what it answers where no document
// settles it (register rows put-precondition, delete-conditions, delete-markers, presign-scope).
// Every object a probe writes is under ProbePrefix, or under public/ProbePrefix, and is removed
// with all its versions before the probe returns; SweepProbes removes what a killed probe left.

// ProbePrefix is where the doctor's probe objects live.
const ProbePrefix = "doctor/"

// ErrNotS3 is a probe of a state that is not in an S3 bucket (file://): there is nothing to
// probe.
var ErrNotS3 = errors.New("the state is not in an S3 bucket")

// WriteProbe is what the bucket answered to a conditional create of an existing object and to a
// DeleteObject carrying a failing If-Match.
type WriteProbe struct {
	// LostPut is the status of the losing create: 412, 409, or 200 when the condition was
	// ignored and the object written.
	LostPut int
	// CondDelete is the status of the conditional delete (204, 501, 412); Deleted whether the
	// object was gone after it.
	CondDelete int
	Deleted    bool
}

// s3Of is the bucket's S3 client and name, for the probes that need what gocloud does not give.
func (s *Store) s3Of() (*blobBackend, *s3.Client, error) {
	bb, ok := s.be.(*blobBackend)
	if !ok {
		return nil, nil, ErrNotS3
	}
	var c *s3.Client
	if !bb.b.As(&c) || bb.name == "" {
		return nil, nil, ErrNotS3
	}
	return bb, c, nil
}

// statusOf is the HTTP status an S3 call ended with (200 when it succeeded).
func statusOf(err error) (int, error) {
	if err == nil {
		return http.StatusOK, nil
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode(), nil
	}
	return 0, err
}

// ProbeWrites writes ProbePrefix+id, creates it again with If-None-Match: *, deletes it with a
// failing If-Match, and reports what the bucket answered; the object and all its versions are
// gone when it returns.
func (s *Store) ProbeWrites(ctx context.Context, id string) (WriteProbe, error) {
	var p WriteProbe
	bb, c, err := s.s3Of()
	if err != nil {
		return p, err
	}
	key := ProbePrefix + id
	defer func() { _ = bb.remove(context.WithoutCancel(ctx), key) }()
	put := func(body string, ifNoneMatch *string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bb.name), Key: aws.String(key), Body: strings.NewReader(body), IfNoneMatch: ifNoneMatch})
		return err
	}
	if err := put("first", nil); err != nil {
		return p, fmt.Errorf("write probe object %s: %w", key, err)
	}
	if p.LostPut, err = statusOf(put("second", aws.String("*"))); err != nil {
		return p, fmt.Errorf("create probe object %s again with If-None-Match: %w", key, err)
	}
	_, derr := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bb.name), Key: aws.String(key), IfMatch: aws.String(`"00000000000000000000000000000000"`)})
	if p.CondDelete, err = statusOf(derr); err != nil {
		return p, fmt.Errorf("delete probe object %s with If-Match: %w", key, err)
	}
	if derr == nil {
		p.CondDelete = http.StatusNoContent
	}
	_, herr := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bb.name), Key: aws.String(key)})
	var re *smithyhttp.ResponseError
	p.Deleted = errors.As(herr, &re) && re.HTTPStatusCode() == http.StatusNotFound
	return p, nil
}

// ErrNoPresigner: no presigning key is set (POC_PRESIGN_*): links are signed with the bot's own
// key, which reaches everything.
var ErrNoPresigner = errors.New("no presigning key is set")

// ProbePresign writes public/ProbePrefix+id and ProbePrefix+id, fetches a link to each signed by
// the presigning key, and returns the statuses; both objects are gone when it returns.
func (s *Store) ProbePresign(ctx context.Context, id string) (public, private int, err error) {
	bb, _, err := s.s3Of()
	if err != nil {
		return 0, 0, err
	}
	if bb.signer == nil {
		return 0, 0, ErrNoPresigner
	}
	keys := []string{prefixPublic + ProbePrefix + id, ProbePrefix + id}
	defer func() {
		for _, k := range keys {
			_ = bb.remove(context.WithoutCancel(ctx), k)
		}
	}()
	var codes []int
	for _, k := range keys {
		if err := bb.write(ctx, k, []byte("pocbot doctor\n")); err != nil {
			return 0, 0, fmt.Errorf("write probe object %s: %w", k, err)
		}
		u, err := bb.signer.SignedURL(ctx, k, &blob.SignedURLOptions{Expiry: time.Minute})
		if err != nil {
			return 0, 0, fmt.Errorf("sign a link to %s: %w", k, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, 0, err
		}
		resp, err := s.linkClient.Do(req)
		if err != nil {
			return 0, 0, fmt.Errorf("fetch a signed link to %s: %w", k, err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes[0], codes[1], nil
}

// Versioned tells whether the state bucket keeps versions (versioning enabled).
func (s *Store) Versioned(ctx context.Context) (bool, error) {
	bb, c, err := s.s3Of()
	if err != nil {
		return false, err
	}
	v, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bb.name)})
	if err != nil {
		return false, fmt.Errorf("read the versioning of %s: %w", bb.describe(), err)
	}
	return v.Status == types.BucketVersioningStatusEnabled, nil
}

// DeleteMarkers counts the bucket's delete markers, and those last modified before before.
func (s *Store) DeleteMarkers(ctx context.Context, before time.Time) (total, older int, err error) {
	bb, c, err := s.s3Of()
	if err != nil {
		return 0, 0, err
	}
	in := &s3.ListObjectVersionsInput{Bucket: aws.String(bb.name)}
	for {
		page, err := c.ListObjectVersions(ctx, in)
		if err != nil {
			return total, older, fmt.Errorf("list the versions of %s: %w", bb.describe(), err)
		}
		for _, m := range page.DeleteMarkers {
			total++
			if aws.ToTime(m.LastModified).Before(before) {
				older++
			}
		}
		if !aws.ToBool(page.IsTruncated) {
			return total, older, nil
		}
		in.KeyMarker, in.VersionIdMarker = page.NextKeyMarker, page.NextVersionIdMarker
	}
}

// ProbeObjects lists the probe objects in the bucket (what SweepProbes would remove).
func (s *Store) ProbeObjects(ctx context.Context) ([]string, error) {
	var out []string
	for _, prefix := range []string{ProbePrefix, prefixPublic + ProbePrefix} {
		keys, err := s.be.list(ctx, prefix)
		if err != nil {
			return out, fmt.Errorf("list %s: %w", prefix, err)
		}
		out = append(out, keys...)
	}
	return out, nil
}

// SweepProbes removes what a doctor's probe left in the bucket (a probe killed before its own
// removal), versions included, and returns the keys it removed.
func (s *Store) SweepProbes(ctx context.Context) ([]string, error) {
	keys, err := s.ProbeObjects(ctx)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, k := range keys {
		if err := s.be.remove(ctx, k); err != nil && !errors.Is(err, errNotExist) {
			return removed, fmt.Errorf("remove probe object %s: %w", k, err)
		}
		removed = append(removed, k)
	}
	return removed, nil
}
