package wiring

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	"gocloud.dev/blob/s3blob"

	"github.com/pocbot/pocbot/internal/record"
	"github.com/pocbot/pocbot/internal/s3opts"
	"github.com/pocbot/pocbot/internal/settings"
	"github.com/pocbot/pocbot/internal/version"
)

// ImageBucketURL turns POC_IMAGE_BUCKET into a gocloud URL and the bucket's Scaleway name: a bare
// name is a bucket of Scaleway Object Storage in the region; a URL is taken as it is.
func ImageBucketURL(v, region string) (string, string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", "", errors.New("POC_IMAGE_BUCKET is not set: name the Object Storage bucket that holds the Talos images, e.g. POC_IMAGE_BUCKET=acme-poc-images")
	}
	if !strings.Contains(v, "://") {
		u := fmt.Sprintf("s3://%s?endpoint=https://s3.%s.scw.cloud&region=%s&use_path_style=true", v, region, region)
		return u, v, nil
	}
	p, err := url.Parse(v)
	if err != nil {
		return "", "", fmt.Errorf("POC_IMAGE_BUCKET=%q is not a bucket URL: %w", v, err)
	}
	name := p.Host
	if p.Scheme == "file" {
		parts := strings.Split(strings.TrimRight(p.Path, "/"), "/")
		name = parts[len(parts)-1]
	}
	return v, name, nil
}

// OpenImageBucket opens POC_IMAGE_BUCKET and returns it with its Scaleway name.
func OpenImageBucket(ctx context.Context, getenv func(string) string, region string) (*blob.Bucket, string, error) {
	u, name, err := ImageBucketURL(settings.Env(getenv).Raw("image-bucket"), region)
	if err != nil {
		return nil, "", err
	}
	var b *blob.Bucket
	if strings.HasPrefix(u, "s3://") {
		b, err = OpenS3(ctx, u, getenv)
	} else {
		b, err = openFileBucket(ctx, u)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open the image bucket POC_IMAGE_BUCKET=%q: %w", u, err)
	}
	return b, name, nil
}

// openFileBucket opens a file:// image bucket URL (the embedded default) with fileblob's own opener,
// its query options included. Not blob.OpenBucket: the URL mux would make gocloud's s3 opener, and
// with it the AWS SDK's whole default configuration, part of the binary (cmd/bot/lean_test.go).
func openFileBucket(ctx context.Context, raw string) (*blob.Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != fileblob.Scheme {
		return nil, fmt.Errorf("%q is neither a bucket name nor an s3:// or file:// URL", raw)
	}
	return (&fileblob.URLOpener{}).OpenBucketURL(ctx, u)
}

// s3ResponseHeaderTimeout bounds the wait for an Object Storage answer's headers once the request
// is sent (an upload's part counts from its last byte). The SDK's default client has no such bound
// (aws-sdk-go-v2 aws/transport/http/client.go sets dial, TLS and idle timeouts only), so a stalled
// answer held a run until its job's timeout with the cluster's lock taken; a timeout is retried by
// the SDK's standard retryer (aws/retry/retryable_error.go: timeout errors are retryable). Two
// minutes leaves room for a multipart upload's completion, which answers only when it is done.
const s3ResponseHeaderTimeout = 2 * time.Minute

// OpenS3 opens an s3:// bucket URL (endpoint, region, use_path_style in its query) with static
// credentials from getenv: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, else the Scaleway keys, which
// Scaleway Object Storage accepts.
func OpenS3(ctx context.Context, raw string, getenv func(string) string) (*blob.Bucket, error) {
	return openS3Within(ctx, raw, getenv, s3ResponseHeaderTimeout)
}

// openS3Within is OpenS3 with the wait for a response's headers as a parameter (the tests shorten it).
func openS3Within(ctx context.Context, raw string, getenv func(string) string, headerTimeout time.Duration) (*blob.Bucket, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("%q is not an s3://BUCKET URL", raw)
	}
	q := u.Query()
	ak, sk := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" {
		ak, sk = settings.Env(getenv).Raw("scw-access-key"), settings.Env(getenv).Raw("scw-secret-key")
	}
	if ak == "" || sk == "" {
		return nil, errors.New("no Object Storage credentials: set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or SCW_ACCESS_KEY/SCW_SECRET_KEY")
	}
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.ResponseHeaderTimeout = headerTimeout
	})
	o := s3.Options{
		Region:       cmpOr(q.Get("region"), "fr-par"),
		UsePathStyle: q.Get("use_path_style") == "true",
		Credentials:  credentials.NewStaticCredentialsProvider(ak, sk, ""),
		HTTPClient:   hc,
	}
	if record.Dir(getenv) != "" {
		// The signed requests, as the endpoint gets them (the SDK signs above the client).
		rt, err := record.Wrap(getenv, record.ObjectStorage, hc.GetTransport())
		if err != nil {
			return nil, err
		}
		o.HTTPClient = &http.Client{Transport: rt}
	}
	s3opts.Client(&o) // the checksum choice, and below the same for the upload manager
	if ep := q.Get("endpoint"); ep != "" {
		o.BaseEndpoint = aws.String(ep)
	}
	o.EndpointResolverV2 = newCachedEndpoints(s3.NewDefaultEndpointResolverV2())
	// The SDK writes its own User-Agent; pocbot/<version> is added to it as a product token.
	o.APIOptions = append(o.APIOptions, awsmiddleware.AddUserAgentKeyValue(version.Product, version.String()))
	return s3blob.OpenBucket(ctx, s3.New(o), u.Host, s3opts.Blob())
}

// cmpOr is v without its surrounding blanks, or def when that is empty.
func cmpOr(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}
