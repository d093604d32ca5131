package statestore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/s3opts"
)

// openS3URL opens an s3:// state URL that the caller did not open itself (WithBucket): endpoint,
// region (default fr-par) and use_path_style from its query, static credentials from
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN when set). It is not
// blob.OpenBucket: gocloud's URL opener for s3 loads the AWS SDK's whole default configuration
// (shared files, SSO, STS, IMDS), which pocbot never uses and which was 1.5 MB of the release binary
// (cmd/bot/lean_test.go fails when it is linked again).
func openS3URL(ctx context.Context, u *url.URL) (*blob.Bucket, error) {
	ak, sk := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" || sk == "" {
		return nil, errors.New("no Object Storage credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	q := u.Query()
	o := s3.Options{
		Region:       q.Get("region"),
		UsePathStyle: q.Get("use_path_style") == "true",
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, os.Getenv("AWS_SESSION_TOKEN")),
	}
	if o.Region == "" {
		o.Region = "fr-par"
	}
	if ep := q.Get("endpoint"); ep != "" {
		o.BaseEndpoint = aws.String(ep)
	}
	s3opts.Client(&o)
	b, err := s3blob.OpenBucket(ctx, s3.New(o), u.Host, s3opts.Blob())
	if err != nil {
		return nil, fmt.Errorf("open s3://%s: %w", u.Host, err)
	}
	return b, nil
}
